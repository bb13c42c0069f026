package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/testports"
)

// TestDevListenRefused: the dev listener has no authentication, so
// sidecar dev refuses any address that is not loopback, before it
// starts anything.
func TestDevListenRefused(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8081", ":8081", "[::]:8081", "10.1.2.3:8081", "example.com:8081", "8081"} {
		err := run(context.Background(), []string{"dev", "--config", "nowhere.yaml", "--dev-listen", addr}, noEnv, io.Discard, io.Discard)
		var e *exitError
		if !errors.As(err, &e) || e.code != 2 || !strings.Contains(e.msg, "--dev-listen") {
			t.Errorf("--dev-listen %s: %v, want exit 2 naming --dev-listen", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0", "127.0.0.2:8081"} {
		d := devFlags{listen: addr}
		if err := d.check(); err != nil {
			t.Errorf("--dev-listen %s: %v", addr, err)
		}
	}
	if d := (devFlags{listen: "127.0.0.1:0", cut: -time.Second}); d.check() == nil {
		t.Error("a negative --dev-cut accepted")
	}
}

func noEnv(string) string { return "" }

// TestDevCommand: the built binary's sidecar dev in entrypoint mode
// serves the contract routes and, on the dev listener, the platform's
// REST API in front of them and the playground; SIGTERM drains both: a
// stream begun on the dev listener ends whole, then the process exits 0.
func TestDevCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sidecar.yaml")
	yaml := fmt.Sprintf(`upstream: {url: "http://127.0.0.1:%d", ready: {path: /health}}
shutdown: {drain: 5s}
methods:
  echo: {call: POST /echo, example: {message: hi}}
  sse: {mode: stream, call: POST /sse}
`, agentPort(t))
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "dev", "--config", cfg, "--listen", "127.0.0.1:0", "--dev-listen", "127.0.0.1:0", "--", "python3", "agent.py")
	cmd.Dir = "../../testdata/agents"
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()
	urls := make(chan string, 1)
	var logs strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer out.Close()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if u, ok := strings.CutPrefix(sc.Text(), "dev: the platform's REST API and the playground on "); ok {
				urls <- u
			}
		}
	}()
	var dev string
	select {
	case dev = <-urls:
	case <-time.After(15 * time.Second):
		t.Fatal("no dev: line after 15s")
	}
	if !strings.HasPrefix(dev, "http://127.0.0.1:") {
		t.Fatalf("dev URL %q", dev)
	}
	engine := dev + "/v1/projects/p/locations/us-central1/reasoningEngines/1"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(url, body string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
		return resp
	}

	resp := call(engine+":query", `{"classMethod": "echo", "input": {"message": "hi"}}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), `{"output":{"body":{"message":"hi"},`) {
		t.Errorf(":query: %d %s", resp.StatusCode, b)
	}
	for path, want := range map[string]string{"/": "<html", "/playground/methods.json": `{"name":"echo","api_mode":"","example":{"message":"hi"}}`} {
		resp, err := testClient.Get(dev + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
		}
	}

	// A stream on the dev listener, then SIGTERM: it is drained whole.
	resp = call(engine+":streamQuery?alt=sse", `{"class_method": "sse", "input": {"n": 4, "gap_ms": 300}}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if first, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(first, `data: {"i":0`) {
		t.Fatalf("first event %q, %v", first, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	rest, err := io.ReadAll(br)
	if err != nil || strings.Count(string(rest), "data: ") != 3 || !strings.Contains(string(rest), `data: {"i":3`) {
		t.Errorf("after SIGTERM: %q, %v; want the 3 other events", rest, err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("sidecar dev exited with %v", waitErr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("sidecar dev still running 15s after SIGTERM")
	}
	<-scanned
	if t.Failed() {
		t.Logf("sidecar dev:\n%s", logs.String())
	}
}

// TestDevContractLoopback: under sidecar dev the contract listener is on
// 127.0.0.1 whatever $PORT or the config's listen say (another machine
// cannot reach it: dialing a non-loopback address of this machine, when
// it has one, is refused); --listen still opens it wider.
func TestDevContractLoopback(t *testing.T) {
	// Each names the port as %d.
	tests := []struct {
		name, listen, configured string
		env                      map[string]string
		wantHost                 string
	}{
		{name: "PORT", env: map[string]string{"PORT": "%d"}, wantHost: "127.0.0.1"},
		{name: "config listen", configured: "0.0.0.0:%d", wantHost: "127.0.0.1"},
		{name: "config listen on [::1]", configured: "[::1]:%d", wantHost: "::1"},
		{name: "--listen", listen: "0.0.0.0:0", env: map[string]string{"PORT": "%d"}, wantHost: "every interface"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.wantHost == "::1" {
				ln, err := net.Listen("tcp", "[::1]:0")
				if err != nil {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				ln.Close()
			}
			// A port taken before the sidecar binds it is retried on
			// another.
			var addr string
			var port int
			for try := 1; addr == ""; try++ {
				port = agentPort(t)
				addr = devContract(t, tt.configured, tt.listen, tt.env, port, try < 5)
			}
			host, p, err := net.SplitHostPort(addr)
			if ip := net.ParseIP(host); err != nil || host != tt.wantHost && !(tt.wantHost == "every interface" && ip != nil && ip.IsUnspecified()) {
				t.Fatalf("the contract listener is on %q, want host %s", addr, tt.wantHost)
			}
			if tt.listen == "" && p != fmt.Sprint(port) {
				t.Errorf("the contract listener is on %q, want port %d", addr, port)
			}
			for _, ip := range nonLoopbackIPs(t) {
				c, err := net.Dial("tcp", net.JoinHostPort(ip, p))
				if err == nil {
					c.Close()
				}
				if open := tt.listen != ""; (err == nil) != open {
					t.Errorf("dialing the contract listener on %s: %v, want it reachable only with --listen", net.JoinHostPort(ip, p), err)
				}
			}
		})
	}
}

// devContract runs sidecar dev in-process until the test ends, with
// configured (the config's listen), listen (--listen) and env, each with
// port for its %d, and returns its contract listener's address: "" when
// the port was taken and retry is set.
func devContract(t *testing.T, configured, listen string, env map[string]string, port int, retry bool) string {
	t.Helper()
	yaml := "upstream: {url: \"http://127.0.0.1:9\"}\nshutdown: {drain: 1s}\nmethods:\n  echo: {call: POST /echo}\n"
	if configured != "" {
		yaml += fmt.Sprintf("listen: %q\n", fmt.Sprintf(configured, port))
	}
	path := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"dev", "--config", path, "--dev-listen", "127.0.0.1:0"}
	if listen != "" {
		args = append(args, "--listen", listen)
	}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return fmt.Sprintf(v, port)
		}
		return ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &logWatch{listening: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, getenv, io.Discard, logs) }()
	select {
	case addr := <-logs.listening:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
		return addr
	case err := <-done:
		cancel()
		if retry && err != nil && testports.InUse(err.Error()) {
			return ""
		}
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("sidecar dev did not log listening")
	}
	return ""
}

// TestDevDoorsLoopback: under sidecar dev without --listen, another
// protocol's listener (AgentCore's here) is on loopback too, whatever host
// its listen names; with --listen it keeps its own address.
func TestDevDoorsLoopback(t *testing.T) {
	for _, open := range []bool{false, true} {
		t.Run(fmt.Sprintf("--listen %v", open), func(t *testing.T) {
			yaml := "upstream: {url: \"http://127.0.0.1:9\"}\nshutdown: {drain: 1s}\nmethods:\n  echo: {call: POST /echo}\n" +
				"protocols:\n  agentcore: {listen: \"0.0.0.0:0\", method: echo}\n"
			path := filepath.Join(t.TempDir(), "sidecar.yaml")
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"dev", "--config", path, "--dev-listen", "127.0.0.1:0"}
			if open {
				args = append(args, "--listen", "127.0.0.1:0")
			}
			ctx, cancel := context.WithCancel(context.Background())
			logs := &logWatch{listening: make(chan string, 8)}
			done := make(chan error, 1)
			go func() { done <- run(ctx, args, func(string) string { return "" }, io.Discard, logs) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("run: %v", err)
				}
			}()
			door := logs.addr(t, "agentcore")
			_, port, _ := net.SplitHostPort(door)
			host, _, _ := net.SplitHostPort(door)
			if ip := net.ParseIP(host); ip == nil || ip.IsLoopback() == open {
				t.Fatalf("the agentcore listener is on %q; want loopback only without --listen", door)
			}
			for _, ip := range nonLoopbackIPs(t) {
				c, err := net.Dial("tcp", net.JoinHostPort(ip, port))
				if err == nil {
					c.Close()
				}
				if (err == nil) != open {
					t.Errorf("dialing the agentcore listener on %s: %v, want it reachable only with --listen", ip, err)
				}
			}
		})
	}
}

// nonLoopbackIPs are this machine's own IPv4 addresses that are not
// loopback (none on a machine without a network).
func nonLoopbackIPs(t *testing.T) []string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatalf("net.InterfaceAddrs: %v", err)
	}
	var ips []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			ips = append(ips, n.IP.String())
		}
	}
	return ips
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/testports"
)

// agent is a real agent process from testdata/agents.
type agent struct {
	url   string      // upstream.url for the sidecar
	lines chan string // the agent's stdout protocol lines after READY
}

// startAgent runs testdata/agents/agent.{py,js} over TCP or a Unix socket
// and waits for its READY line.
func startAgent(t *testing.T, lang string, unix bool) *agent {
	t.Helper()
	argv := []string{"python3", "../../testdata/agents/agent.py"}
	if lang == "node" {
		argv = []string{"node", "../../testdata/agents/agent.js"}
	}
	if unix {
		dir, err := os.MkdirTemp("", "agent")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := filepath.Join(dir, "a.sock")
		return startServer(t, "unix://"+sock, []string{"AGENT_SOCKET=" + sock}, argv...)
	}
	return startServerOnPort(t, nil, argv...)
}

// startServerOnPort is startServer for a server that listens on
// 127.0.0.1:$PORT, given env added: a port taken before the server binds
// it (it exits before READY saying so) is retried on another.
func startServerOnPort(t *testing.T, env []string, argv ...string) *agent {
	t.Helper()
	for try := 1; ; try++ {
		port := agentPort(t)
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		a, exited := launchServer(t, url, append([]string{fmt.Sprintf("PORT=%d", port)}, env...), argv...)
		if a != nil {
			return a
		}
		if try == 5 || !testports.InUse(exited) {
			t.Fatalf("%v exited before READY: %s", argv, exited)
		}
	}
}

// startServer runs argv with env added, waits for its READY line on
// stdout, and stops it when the test ends.
func startServer(t *testing.T, url string, env []string, argv ...string) *agent {
	t.Helper()
	a, exited := launchServer(t, url, env, argv...)
	if a == nil {
		t.Fatalf("%v exited before READY: %s", argv, exited)
	}
	return a
}

// launchServer is startServer, but a server that exits before READY is
// returned as nil and its output.
func launchServer(t *testing.T, url string, env []string, argv ...string) (*agent, string) {
	t.Helper()
	a := &agent{url: url, lines: make(chan string, 64)}
	ready := make(chan struct{})
	p := startProcess(t, syscall.SIGTERM, env, func(line string) {
		if line == "READY" {
			close(ready)
			return
		}
		a.lines <- line
	}, argv...)
	select {
	case <-ready:
	case <-p.done:
		return nil, p.output.String()
	case <-time.After(60 * time.Second):
		t.Fatalf("%v did not print READY: %s", argv, p.output.String())
	}
	return a, ""
}

// process is a server a test started.
type process struct {
	done   chan struct{} // closed when it has exited
	output lockedBuffer  // its stderr, and its stdout when no line handler reads it
}

// startProcess runs argv with env added and, when the test ends, stops it
// with stop (then SIGKILL after 5 s), logging its output if the test
// failed. Each stdout line goes to onLine when it is set.
func startProcess(t *testing.T, stop syscall.Signal, env []string, onLine func(string), argv ...string) *process {
	t.Helper()
	p := &process{done: make(chan struct{})}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &p.output
	var lines io.Reader
	if onLine == nil {
		cmd.Stdout = &p.output
	} else {
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		lines = out
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	go func() {
		if lines != nil {
			sc := bufio.NewScanner(lines)
			for sc.Scan() {
				onLine(sc.Text())
			}
		}
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(stop)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%v output:\n%s", argv, p.output.String())
		}
	})
	return p
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// agentPort is a port for a server that must be told its port before it
// binds it: an agent the sidecar starts (upstream.url names the port) or
// one a test starts on $PORT (testports). Servers the test starts itself
// retry a port found taken (startServerOnPort).
func agentPort(t *testing.T) int { return testports.Free(t) }

// sidecar runs `sidecar --config F --listen 127.0.0.1:0` in-process through
// run and returns its base URL.
func startSidecar(t *testing.T, yaml string) string {
	t.Helper()
	base, _ := startSidecarLogs(t, yaml)
	return base
}

// startSidecarLogs is startSidecar, with the sidecar's log watched.
func startSidecarLogs(t *testing.T, yaml string) (string, *logWatch) {
	t.Helper()
	return startSidecarAt(t, yaml, "127.0.0.1:0")
}

// startSidecarAt is startSidecarLogs listening on addr: for a config that
// must name its own URL (auth.audience) before the sidecar starts.
func startSidecarAt(t *testing.T, yaml, addr string) (string, *logWatch) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &logWatch{listening: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--config", path, "--listen", addr}, func(string) string { return "" }, io.Discard, logs)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case addr := <-logs.listening:
		return "http://" + addr, logs
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("sidecar did not log listening")
	}
	return "", nil
}

func (l *logWatch) record(protocol, addr string) {
	if l.addrs == nil {
		l.addrs = map[string]string{}
	}
	l.addrs[protocol] = addr
}

// logWatch is the sidecar's stderr: it finds the "listening" lines, and
// keeps each listener's address by its protocol ("admin" for the admin
// listener's).
type logWatch struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	listening chan string
	addrs     map[string]string
	lines     []string // every line, for count
}

// count is how many lines of the log hold s.
func (l *logWatch) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// addr waits for the address of the listener of protocol, failing the test
// after 10 s.
func (l *logWatch) addr(t *testing.T, protocol string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		l.mu.Lock()
		a := l.addrs[protocol]
		l.mu.Unlock()
		if a != "" {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sidecar logged no %s listener after 10s", protocol)
		}
	}
}

func (l *logWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadBytes('\n')
		if err != nil {
			l.buf.Write(line)
			return len(p), nil
		}
		l.lines = append(l.lines, string(line))
		var e struct{ Message, Addr, Protocol string }
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		switch e.Message {
		case "listening":
			l.record(e.Protocol, e.Addr)
			select {
			case l.listening <- e.Addr: // the first: the platform's, or the only one
			default: // the mounted doors' lines name the same address
			}
		case "admin listening":
			l.record("admin", e.Addr)
		}
	}
}

const agentMethods = `
methods:
  echo: {call: "POST /echo/{user_id}/{session_id}"}
  delete_session: {call: "DELETE /echo/{user_id}", body: none}
  bigint: {call: POST /bigint}
  json_array: {call: POST /json-array}
  empty: {call: POST /empty}
  not_found: {call: POST /status/404}
  html_error: {call: POST /status-text/500}
  sse: {mode: stream, call: POST /sse}
  ndjson: {mode: async_stream, call: POST /ndjson}
  text: {mode: stream, call: POST /text}
  array_stream: {mode: stream, call: POST /json-array}
  bigint_stream: {mode: stream, call: POST /bigint}
  crash: {mode: stream, call: POST /crash}
  sse_error: {mode: stream, call: POST /sse-error}
  sse_interpolated: {mode: stream, call: POST /sse-interpolated-error}
  hang: {mode: stream, call: POST /hang}
  hang_headers: {mode: stream, call: POST /hang-headers}
`

func TestRealAgents(t *testing.T) {
	for _, lang := range []string{"python", "node"} {
		for _, unix := range []bool{false, true} {
			name := lang + "/tcp"
			if unix {
				name = lang + "/unix"
			}
			t.Run(name, func(t *testing.T) {
				a := startAgent(t, lang, unix)
				base := startSidecar(t, "upstream: {url: "+a.url+", ready: {path: /health}}\n"+agentMethods)
				testAgentCalls(t, a, base)
			})
		}
	}
}

type result struct {
	status int
	body   string
}

func post(t *testing.T, url, body string) result {
	t.Helper()
	resp, err := testClient.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return result{resp.StatusCode, string(b)}
}

func testAgentCalls(t *testing.T, a *agent, base string) {
	unary := func(method, input string) result {
		return post(t, base+"/api/reasoning_engine", `{"class_method":"`+method+`","input":`+input+`}`)
	}
	stream := func(method string) result {
		return post(t, base+"/api/stream_reasoning_engine", `{"class_method":"`+method+`","input":{}}`)
	}

	t.Run("health", func(t *testing.T) {
		// The first probe may still be on its way: poll briefly.
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := http.Get(base + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/healthz = %d, want 200 once the agent answers its probe", resp.StatusCode)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("unary echo with path fields", func(t *testing.T) {
		// "../x" is refused (a dot segment once a hop decodes %2F); dots
		// in a name are not.
		r := unary("echo", `{"user_id":"u/1","session_id":"..x/y","big":12345678901234567890123}`)
		var got struct {
			Output struct {
				Method, Path string
				Body         json.RawMessage
			}
		}
		if err := json.Unmarshal([]byte(r.body), &got); err != nil || r.status != 200 {
			t.Fatalf("reply %d %s", r.status, r.body)
		}
		if got.Output.Method != "POST" || got.Output.Path != "/echo/u%2F1/..x%2Fy" {
			t.Errorf("agent saw %s %s, want POST /echo/u%%2F1/..x%%2Fy", got.Output.Method, got.Output.Path)
		}
		if !strings.Contains(string(got.Output.Body), "12345678901234567890123") {
			t.Errorf("agent body %s lost the large integer", got.Output.Body)
		}
	})
	t.Run("delete without body", func(t *testing.T) {
		r := unary("delete_session", `{"user_id":"u"}`)
		if r.status != 200 || !strings.Contains(r.body, `"method":"DELETE"`) || !strings.Contains(r.body, `"body":null`) {
			t.Errorf("reply %d %s", r.status, r.body)
		}
	})
	unaryCases := []struct{ method, want string }{
		{"bigint", `{"output":{"n":12345678901234567890123,"f":1.5e300}}`},
		{"json_array", `{"output":[{"i":0},{"i":1},{"i":2}]}`},
		{"empty", `{"output":null}`},
	}
	for _, c := range unaryCases {
		t.Run("unary "+c.method, func(t *testing.T) {
			if r := unary(c.method, `{}`); r.status != 200 || strings.TrimSpace(r.body) != c.want {
				t.Errorf("reply %d %s, want 200 %s", r.status, r.body, c.want)
			}
		})
	}
	t.Run("agent errors keep status and message", func(t *testing.T) {
		if r := unary("not_found", `{}`); r.status != 404 || !strings.Contains(r.body, `"detail":"agent says 404"`) {
			t.Errorf("reply %d %s", r.status, r.body)
		}
		if r := unary("html_error", `{}`); r.status != 500 || !strings.Contains(r.body, `"detail":"agent broke"`) {
			t.Errorf("reply %d %s", r.status, r.body)
		}
	})
	streamCases := []struct {
		method string
		want   []string
	}{
		{"sse", []string{`{"i":0,"text":"tok0"}`, `{"i":1,"text":"tok1"}`, `{"i":2,"text":"tok2"}`}},
		{"ndjson", []string{`{"i":0}`, `{"i":1}`, `{"i":2}`}},
		{"array_stream", []string{`{"i":0}`, `{"i":1}`, `{"i":2}`}},
		{"bigint_stream", []string{`{"n":12345678901234567890123,"f":1.5e300}`}},
		{"sse_error", []string{`{"i":0}`, `{"error":{"code":500,"message":"model overloaded","status":"INTERNAL","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"AGENT_ERROR","domain":"sidecar"}]}}`}},
	}
	for _, c := range streamCases {
		t.Run("stream "+c.method, func(t *testing.T) {
			r := stream(c.method)
			if r.status != 200 || r.body != strings.Join(c.want, "\n")+"\n" {
				t.Errorf("reply %d %q, want %q", r.status, r.body, c.want)
			}
		})
	}
	t.Run("stream text", func(t *testing.T) {
		r := stream("text")
		var text strings.Builder
		for _, l := range strings.Split(strings.TrimSuffix(r.body, "\n"), "\n") {
			var rec struct{ Output string }
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			text.WriteString(rec.Output)
		}
		if want := "héllo 0\nhéllo 1\nhéllo 2\n"; text.String() != want {
			t.Errorf("text = %q, want %q", text.String(), want)
		}
	})
	t.Run("interpolated error event", func(t *testing.T) {
		r := stream("sse_interpolated")
		ls := strings.Split(strings.TrimSuffix(r.body, "\n"), "\n")
		if len(ls) != 2 || ls[0] != `{"i":0}` || !strings.HasPrefix(ls[1], `{"error":{"code":500,"message":`) || !strings.HasSuffix(ls[1], `"status":"INTERNAL","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"AGENT_ERROR","domain":"sidecar"}]}}`) || !json.Valid([]byte(ls[1])) {
			t.Errorf("lines = %q", ls)
		}
	})
	t.Run("agent crash mid-stream", func(t *testing.T) {
		r := stream("crash")
		if !strings.HasSuffix(r.body, "\n") {
			t.Fatalf("torn last line: %q", r.body)
		}
		ls := strings.Split(strings.TrimSuffix(r.body, "\n"), "\n")
		last := ls[len(ls)-1]
		if !strings.HasPrefix(last, `{"error":{"code":503,`) || !strings.Contains(last, `"status":"UNAVAILABLE"`) || !strings.Contains(last, `"reason":"AGENT_DISCONNECTED"`) {
			t.Errorf("lines = %q, want a final agent_disconnected error line", ls)
		}
		for _, l := range ls {
			if !json.Valid([]byte(l)) {
				t.Errorf("invalid line %q", l)
			}
		}
	})
	for _, method := range []string{"hang", "hang_headers"} {
		t.Run("caller leaves during "+method, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/stream_reasoning_engine",
				strings.NewReader(`{"class_method":"`+method+`","input":{}}`))
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					bufio.NewReader(resp.Body).ReadString('\n')
					resp.Body.Close()
				}
				errc <- err
			}()
			time.Sleep(300 * time.Millisecond) // the agent holds the request
			left := time.Now()
			cancel()
			select {
			case line := <-a.lines:
				if !strings.HasPrefix(line, "CANCELLED") {
					t.Errorf("agent printed %q, want CANCELLED", line)
				}
				t.Logf("agent saw the cancel %v after the caller left", time.Since(left))
			case <-time.After(5 * time.Second):
				t.Fatal("the agent never saw the caller leave")
			}
			<-errc
		})
	}
}

// TestStartServerRetriesTakenPort: a server that finds its port taken
// (it exits before READY saying so, as Python's and Node's do) is started
// again on another port; the one after READY is used.
func TestStartServerRetriesTakenPort(t *testing.T) {
	tried := filepath.Join(t.TempDir(), "tried")
	// The first run says its port was taken; the next is ready.
	script := `if [ ! -e "$TRIED" ]; then echo "$PORT" > "$TRIED"; echo "OSError: [Errno 98] Address already in use" >&2; exit 1; fi; echo READY; exec sleep 60`
	a := startServerOnPort(t, []string{"TRIED=" + tried}, "sh", "-c", script)
	first, err := os.ReadFile(tried)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(a.url, ":"+strings.TrimSpace(string(first))) {
		t.Errorf("started on %s, the port the first try found taken", a.url)
	}
}

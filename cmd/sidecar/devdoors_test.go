package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/testports"
)

// devOutput watches sidecar dev's stderr for the dev listener's URL and
// the contract listener's address, which it prints first.
type devOutput struct {
	mu        sync.Mutex
	rest      []byte
	dev       chan string
	listening chan struct{} // one per "listening" log line, when set
	contract  string
}

func (o *devOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rest = append(o.rest, p...)
	for {
		i := strings.IndexByte(string(o.rest), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(o.rest[:i])
		o.rest = o.rest[i+1:]
		if o.listening != nil && strings.Contains(line, `"message":"listening"`) {
			o.listening <- struct{}{}
		}
		if u, ok := strings.CutPrefix(line, "dev: the platform's REST API and the playground on "); ok {
			o.dev <- u
		}
		if rest, ok := strings.CutPrefix(line, "sidecar: platform contract on "); ok {
			o.contract, _, _ = strings.Cut(rest, " ")
		}
	}
}

func (o *devOutput) contractAddr() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.contract
}

// TestDevDoorsListed: sidecar dev gives the playground its enabled
// doors, in order, each with its URL (the one it listens on, then the
// path its section sets: MCP's) and its example (GET
// /playground/doors.json); each example's curl, run as listed, gets the
// agent's answer through its door (MCP's: its tools).
func TestDevDoorsListed(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"answered"}`)
	}))
	defer agent.Close()
	// The playground lists the ports the config names: a port taken
	// before the sidecar binds it is retried on others.
	var agentcore, a2a, mcp int
	var out *devOutput
	var dev string
	for try := 1; dev == ""; try++ {
		agentcore, a2a, mcp = agentPort(t), agentPort(t), agentPort(t)
		yaml := fmt.Sprintf("upstream: {url: %q}\nshutdown: {drain: 1s}\nmethods:\n  query: {call: POST /q}\n"+
			"protocols:\n  agentcore: {listen: \":%d\", method: query}\n  a2a: {listen: \"127.0.0.1:%d\", method: query}\n"+
			"  mcp: {listen: \"127.0.0.1:%d\", path: /tools}\n", agent.URL, agentcore, a2a, mcp)
		path := filepath.Join(t.TempDir(), "sidecar.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		out = &devOutput{dev: make(chan string, 1), listening: make(chan struct{}, 8)}
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"dev", "--config", path, "--listen", "127.0.0.1:0", "--dev-listen", "127.0.0.1:0"},
				func(string) string { return "" }, io.Discard, out)
		}()
		stop := func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		}
		url, taken := "", false
		for listening := 0; listening < 4 && !taken; {
			select {
			case url = <-out.dev:
			case <-out.listening:
				listening++
			case err := <-done:
				cancel()
				if taken = try < 5 && err != nil && testports.InUse(err.Error()); taken {
					continue // on other ports
				}
				t.Fatalf("run returned before its four listeners: %v", err)
			case <-time.After(15 * time.Second):
				t.Fatal("no dev: line and four listeners after 15s")
			}
		}
		if !taken {
			if url == "" { // logged before the listeners, read after them
				url = <-out.dev
			}
			dev = url
			defer stop()
		}
	}
	resp, err := testClient.Get(dev + "/playground/doors.json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Doors []struct {
			Protocol, URL, Curl, Client string
			ClientLang                  string `json:"client_lang"`
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /playground/doors.json: %d %q %v", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	want := []struct{ protocol, url, answer string }{
		{"agent_platform", "http://" + out.contractAddr(), "answered"},
		{"agentcore", fmt.Sprintf("http://127.0.0.1:%d", agentcore), "answered"},
		{"a2a", fmt.Sprintf("http://127.0.0.1:%d", a2a), "answered"},
		// Its URL ends with protocols.mcp.path; its curl lists the tools.
		{"mcp", fmt.Sprintf("http://127.0.0.1:%d/tools", mcp), `"name":"query"`},
	}
	if len(got.Doors) != len(want) {
		t.Fatalf("doors.json lists %+v, want %v", got.Doors, want)
	}
	for i, w := range want {
		d := got.Doors[i]
		if d.Protocol != w.protocol || d.URL != w.url || d.Client == "" || d.ClientLang == "" || !strings.Contains(d.Curl, w.url) {
			t.Errorf("door %d = %+v, want %s at %s with its example", i, d, w.protocol, w.url)
			continue
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 15*time.Second)
		b, err := exec.CommandContext(cctx, "sh", "-c", d.Curl).CombinedOutput()
		ccancel()
		if err != nil || !strings.Contains(string(b), w.answer) {
			t.Errorf("%s: its curl, run: %v %q\n%s", d.Protocol, err, b, d.Curl)
		}
	}
}

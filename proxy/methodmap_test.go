package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/upstream"
)

// headerAgent records the headers of every request it gets and answers {}.
func headerAgent(t *testing.T) (*httptest.Server, <-chan http.Header) {
	t.Helper()
	seen := make(chan http.Header, 16)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		seen <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(agent.Close)
	return agent, seen
}

// TestSetUserAgent: a User-Agent in headers.set replaces the sidecar's
// own, so the agent sees one User-Agent, not two.
func TestSetUserAgent(t *testing.T) {
	agent, seen := headerAgent(t)
	h := newHarness(t, agent.URL, "upstream: {url: AGENT}\nheaders: {set: {User-Agent: my-agent-client/2}}\nmethods: {query: {}}\n")
	if r := h.unary("query", `{}`); r.status != 200 {
		t.Fatalf("call = %d %s", r.status, r.body)
	}
	if got := (<-seen)["User-Agent"]; len(got) != 1 || got[0] != "my-agent-client/2" {
		t.Errorf("agent saw User-Agent %q, want exactly [my-agent-client/2]", got)
	}

	plain := newHarness(t, agent.URL, "upstream: {url: AGENT}\nmethods: {query: {}}\n")
	if r := plain.unary("query", `{}`); r.status != 200 {
		t.Fatalf("call = %d %s", r.status, r.body)
	}
	if got := (<-seen)["User-Agent"]; len(got) != 1 || got[0] != "sidecar" {
		t.Errorf("without headers.set the agent saw User-Agent %q, want [sidecar]", got)
	}
}

// TestReplyBytesOverflow: a reply_bytes so large that a limit plus one
// overflows made every unary reply {"output":null}; it is a config error
// now, and the largest allowed value carries replies whole.
func TestReplyBytesOverflow(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"answer":42}`)
	}))
	defer agent.Close()
	for _, size := range []string{"9223372036854775807", "1GiB"} {
		yaml := "limits: {reply_bytes: " + size + "}\n" + strings.ReplaceAll(oneMethodConfig, "AGENT", agent.URL)
		if _, err := config.Parse("test.yaml", []byte(yaml)); err != nil {
			if size == "1GiB" || !strings.Contains(err.Error(), "limits.reply_bytes") {
				t.Errorf("reply_bytes %s: Parse error %v", size, err)
			}
			continue
		}
		h := newHarness(t, agent.URL, "limits: {reply_bytes: "+size+"}\n"+oneMethodConfig)
		if r := h.unary("query", `{}`); r.status != 200 || strings.TrimSpace(r.body) != `{"output":{"answer":42}}` {
			t.Errorf("reply_bytes %s: unary reply = %d %s, want the agent's reply", size, r.status, r.body)
		}
	}
}

// TestStreamTotalFinalLine: a stream that reaches timeouts.total ends with
// the sidecar's final timeout line, after the records sent before it, not
// with a severed connection.
func TestStreamTotalFinalLine(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(w, "{\"i\":%d}\n", i)
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, "timeouts: {total: 300ms}\n"+oneMethodConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := h.open(ctx, core.RouteStream, `{"class_method":"stream_query","input":{}}`)
	body, err := io.ReadAll(s.r)
	if err != nil {
		t.Fatalf("reading the stream: %v (got %q)", err, body)
	}
	got := lines(t, string(body))
	if len(got) < 2 || got[0] != `{"i":0}` {
		t.Fatalf("lines = %q, want records and a final error line", got)
	}
	last := got[len(got)-1]
	var v map[string]json.RawMessage
	if json.Unmarshal([]byte(last), &v) != nil || v["error"] == nil || !strings.Contains(strings.ToLower(last), "timeout") {
		t.Errorf("final line = %s, want an error line naming the timeout", last)
	}
}

// contractAgent is a FastAPI-style agent that speaks the platform's
// contract itself, in Python's standard library: POST
// /api/reasoning_engine answers {"output": …}, POST
// /api/stream_reasoning_engine answers ndjson, any other path 404.
const contractAgent = `
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        env = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        seen = {"path": self.path, "method": env["class_method"], "input": env["input"]}
        if self.path == "/api/reasoning_engine":
            body, ctype = json.dumps({"output": seen}).encode(), "application/json"
        elif self.path == "/api/stream_reasoning_engine":
            body = "".join(json.dumps(dict(seen, n=i)) + "\n" for i in range(2)).encode()
            ctype = "application/x-ndjson"
        else:
            self.send_response(404)
            body, ctype = json.dumps({"detail": "Not Found"}).encode(), "application/json"
        if self.path.startswith("/api/"):
            self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
`

// startPython runs a Python server that prints its port on its first line,
// and returns its URL; the process is killed when the test ends.
func startPython(t *testing.T, code string) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command("python3", "-c", code)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	port := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		port <- strings.TrimSpace(line)
	}()
	select {
	case p := <-port:
		if p == "" {
			t.Fatalf("python agent did not start: %s", stderr.String())
		}
		return "http://127.0.0.1:" + p
	case <-time.After(30 * time.Second):
		t.Fatalf("python agent printed no port within 30s")
	}
	return ""
}

// TestRoutePlaceholder: one "*" entry with call "POST {route}" sends each
// call to the agent's route of the same name, so an agent that speaks the
// contract itself gets unary names on /api/reasoning_engine and
// streaming names on /api/stream_reasoning_engine.
func TestRoutePlaceholder(t *testing.T) {
	agent := startPython(t, contractAgent)
	h := newHarness(t, agent, `
upstream: {url: AGENT}
methods:
  "*": {call: "POST {route}", body: envelope, output: as_is}
`)
	r := h.unary("query", `{"q":1}`)
	if want := `{"output":{"path":"/api/reasoning_engine","method":"query","input":{"q":1}}}`; r.status != 200 || strings.TrimSpace(r.body) != want {
		t.Errorf("unary call = %d %s, want %s", r.status, r.body, want)
	}
	r = h.stream("stream_query", `{"q":2}`)
	want := []string{
		`{"path":"/api/stream_reasoning_engine","method":"stream_query","input":{"q":2},"n":0}`,
		`{"path":"/api/stream_reasoning_engine","method":"stream_query","input":{"q":2},"n":1}`,
	}
	if got := lines(t, r.body); r.status != 200 || !slices.Equal(got, want) {
		t.Errorf("streaming call = %d %q, want %q", r.status, got, want)
	}
}

// TestQueryInCall: a call's literal query goes to the agent as written and
// its {field} values are escaped as query components, so no input can add
// a parameter.
func TestQueryInCall(t *testing.T) {
	agent := echoAgent(t)
	h := newHarness(t, agent.URL, `
upstream: {url: AGENT}
methods:
  query: {call: "POST /run/{user_id}?stream=true&user={user_id}&m={class_method}"}
`)
	r := h.unary("query", `{"user_id":"a b&admin=1#x"}`)
	var out struct{ Output struct{ URI string } }
	if err := json.Unmarshal([]byte(r.body), &out); r.status != 200 || err != nil {
		t.Fatalf("call = %d %s", r.status, r.body)
	}
	if want := "/run/a%20b&admin=1%23x?stream=true&user=a+b%26admin%3D1%23x&m=query"; out.Output.URI != want {
		t.Errorf("agent saw %q, want %q", out.Output.URI, want)
	}
	u, _ := url.ParseRequestURI(out.Output.URI)
	if q := u.Query(); len(q) != 3 || q.Get("user") != "a b&admin=1#x" || q.Get("stream") != "true" {
		t.Errorf("agent's query parameters = %v", q)
	}
}

// TestSelfLoopRefused: a sidecar whose upstream.url is its own address
// (here one validate cannot see: the test's listener) answers the call
// it sent itself 508 before calling the agent again, so the caller gets
// one 508, not thousands of nested calls.
func TestSelfLoopRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Before the guard, the loop ran until a slot ran out: bound it.
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: 'http://"+ln.Addr().String()+"'}\n"+
		"limits: {concurrency: 8, queue: 0}\ntimeouts: {total: 2s}\nmethods: {'*': {call: POST /api/reasoning_engine, body: envelope, output: as_is}}\n"))
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	defer client.Close()
	var calls atomic.Int32
	handler := (&Server{Config: cfg, Agent: core.Mux{Plain: client}}).HandlerFor(platform.Door{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		handler.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	resp, err := http.Post(srv.URL+core.RouteUnary, "application/json", strings.NewReader(`{"class_method":"query","input":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected || !strings.Contains(string(body), "loop detected") {
		t.Errorf("call = %d %s, want 508 naming the loop", resp.StatusCode, body)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the sidecar served %d calls, want 2: the caller's and the one it sent itself", n)
	}
}

// TestHopHeaderRefused: a call that carries the hop header every sidecar
// sets toward its agent is answered 508 before the agent is called.
func TestHopHeaderRefused(t *testing.T) {
	agent, seen := headerAgent(t)
	h := newHarness(t, agent.URL, "upstream: {url: AGENT}\nmethods: {query: {}}\n")
	if r := h.unary("query", `{}`); r.status != 200 {
		t.Fatalf("call = %d %s", r.status, r.body)
	}
	if got := (<-seen).Get(core.HopHeader); got != "1" {
		t.Errorf("the agent saw %s %q, want \"1\"", core.HopHeader, got)
	}
	for _, route := range []string{core.RouteUnary, core.RouteStream} {
		req, _ := http.NewRequest(http.MethodPost, h.url+route, strings.NewReader(`{"class_method":"query","input":{}}`))
		req.Header.Set(core.HopHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if r := (reply{resp.StatusCode, resp.Header, string(body)}); r.status != http.StatusLoopDetected || !strings.Contains(detail(t, r), "loop detected") {
			t.Errorf("%s with %s = %d %s, want 508", route, core.HopHeader, r.status, r.body)
		}
	}
	select {
	case <-seen:
		t.Errorf("the agent was called for a looped call")
	default:
	}
}

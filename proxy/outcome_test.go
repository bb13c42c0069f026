package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// scrape is the metrics' text exposition.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// callLogs waits for n call log lines and returns their fields.
func callLogs(t *testing.T, logs *observer.ObservedLogs, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for logs.FilterMessage("call").Len() < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	var out []map[string]any
	for _, e := range logs.FilterMessage("call").All() {
		out = append(out, e.ContextMap())
	}
	if len(out) != n {
		t.Fatalf("got %d call log lines, want %d: %v", len(out), n, out)
	}
	return out
}

// outcomeLabel finds every value the metrics give the outcome and reason
// labels.
var outcomeLabel = regexp.MustCompile(`(?:outcome|reason)="([^"]*)"`)

var outcomes = map[string]bool{"ok": true, "caller_left": true, "timeout": true, "agent_error": true,
	"agent_disconnected": true, "not_ready": true, "busy": true, "shutting_down": true, "bad_request": true}

// TestWhoEndedTheCall: each call's log line and metrics say who ended it,
// from one fixed set, with the phase for a timeout; "context canceled"
// never stands alone in the log.
func TestWhoEndedTheCall(t *testing.T) {
	// A port with nothing listening.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()

	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/ready":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/ok":
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":0}\n")
		case "/fail":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"detail":"agent broke"}`)
		case "/inband":
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":0}\n{\"error\":{\"code\":\"quota\",\"message\":\"m\"}}\n")
		case "/cut":
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":0}\n{\"i\": ")
			http.NewResponseController(w).Flush()
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		case "/hang":
			<-r.Context().Done()
		case "/idle":
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":0}\n")
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		case "/trickle":
			w.Header().Set("Content-Type", "application/x-ndjson")
			for i := 0; r.Context().Err() == nil; i++ {
				fmt.Fprintf(w, "{\"i\":%d}\n", i)
				http.NewResponseController(w).Flush()
				time.Sleep(20 * time.Millisecond)
			}
		}
	}))
	defer agent.Close()
	defer agent.CloseClientConnections()

	method := func(path, extra string) string {
		return "upstream: {url: AGENT}\nmethods:\n  m: {mode: stream, call: POST " + path + extra + "}\n"
	}
	tests := []struct {
		name    string
		agent   string
		config  string
		opts    []harnessOption
		setup   func(h *harness)
		leave   time.Duration // the caller leaves after this long
		outcome string
		phase   string
		status  int
	}{
		{name: "ok", config: method("/ok", ""), outcome: "ok", status: 200},
		{name: "caller left", config: method("/hang", ""), leave: 200 * time.Millisecond, outcome: "caller_left", status: 499},
		{name: "connect timeout", agent: dead, config: method("/ok", ", timeouts: {connect: 200ms}"), outcome: "timeout", phase: "connect", status: 502},
		{name: "first byte timeout", config: method("/hang", ", timeouts: {first_byte: 200ms}"), outcome: "timeout", phase: "first_byte", status: 504},
		{name: "idle timeout", config: method("/idle", ", timeouts: {idle: 200ms}"), outcome: "timeout", phase: "idle", status: 200},
		{name: "total timeout", config: method("/trickle", ", timeouts: {total: 300ms, idle: 1s}"), outcome: "timeout", phase: "total", status: 200},
		{name: "agent status", config: method("/fail", ""), outcome: "agent_error", status: 500},
		{name: "agent error in band", config: method("/inband", ""), outcome: "agent_error", status: 200},
		{name: "agent disconnected", config: method("/cut", ""), outcome: "agent_disconnected", status: 200},
		{name: "not ready", config: "upstream: {url: AGENT, ready: {path: /ready}}\nmethods:\n  m: {mode: stream, call: POST /ok}\n",
			opts: []harnessOption{withProber(200 * time.Millisecond)}, outcome: "not_ready", status: 503},
		{name: "shutting down", config: method("/ok", ""), setup: func(h *harness) { h.server.Drain() }, outcome: "shutting_down", status: 503},
		{name: "shut down mid-stream", config: method("/idle", ""), setup: func(h *harness) {
			go func() {
				time.Sleep(200 * time.Millisecond)
				h.server.EndCalls()
			}()
		}, outcome: "shutting_down", status: 200},
		{name: "bad request", config: method("/ok", ""), outcome: "bad_request", status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := metrics.New()
			url := agent.URL
			if tt.agent != "" {
				url = tt.agent
			}
			h := newHarness(t, url, tt.config, append(tt.opts, withMetrics(m))...)
			if tt.setup != nil {
				tt.setup(h)
			}
			body := `{"class_method":"m"}`
			if tt.outcome == "bad_request" {
				body = `{"class_method":"nope"}`
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if tt.leave > 0 {
				ctx, cancel = context.WithTimeout(context.Background(), tt.leave)
			}
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+core.RouteStream, strings.NewReader(body))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			} else if tt.leave == 0 {
				t.Fatalf("POST: %v", err)
			}

			f := callLogs(t, h.logs, 1)[0]
			if f["outcome"] != tt.outcome || f["status"] != int64(tt.status) {
				t.Errorf("log outcome, status = %v, %v, want %s, %d (%v)", f["outcome"], f["status"], tt.outcome, tt.status, f)
			}
			if phase, _ := f["phase"].(string); phase != tt.phase {
				t.Errorf("log phase = %q, want %q", phase, tt.phase)
			}
			if msg, _ := f["error"].(string); (tt.outcome == "ok") != (msg == "") || strings.TrimSpace(msg) == "context canceled" {
				t.Errorf("log error = %q, want the cause of a failure, none for ok", msg)
			}

			text := scrape(t, m)
			entry := "m"
			if tt.status == 400 || tt.name == "shutting down" {
				entry = "" // refused before its method was looked up
			}
			want := fmt.Sprintf(`sidecar_calls_total{class_method=%q,outcome=%q,route=%q} 1`, entry, tt.outcome, core.RouteStream)
			if !strings.Contains(text, want) {
				t.Errorf("metrics lack %s", want)
			}
			if tt.phase != "" {
				want := fmt.Sprintf(`sidecar_timeouts_total{class_method=%q,phase=%q,route=%q} 1`, entry, tt.phase, core.RouteStream)
				if !strings.Contains(text, want) {
					t.Errorf("metrics lack %s", want)
				}
			}
			for _, v := range outcomeLabel.FindAllStringSubmatch(text, -1) {
				if !outcomes[v[1]] {
					t.Errorf("metrics label value %q is not in the fixed set", v[1])
				}
			}
		})
	}
}

// TestBusyOutcome: a call turned away at the concurrency limit is logged
// and counted as busy.
func TestBusyOutcome(t *testing.T) {
	release := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, `{"ok":true}`)
	}))
	defer agent.Close()
	defer close(release)
	m := metrics.New()
	h := newHarness(t, agent.URL, "limits: {concurrency: 1, queue: 1, queue_timeout: 100ms}\n"+oneMethodConfig, withMetrics(m))
	held := make(chan reply, 1)
	go func() { held <- h.unary("query", `{}`) }()
	waitFor(t, func() bool { return h.server.inFlight.Load() == 1 && h.taken() == 1 })
	if r := h.unary("query", `{}`); r.status != 503 {
		t.Fatalf("call at the limit = %d %s, want 503", r.status, r.body)
	}
	f := callLogs(t, h.logs, 1)[0]
	if f["outcome"] != "busy" || f["reason"] != "BUSY" {
		t.Errorf("log outcome, reason = %v, %v, want busy, BUSY", f["outcome"], f["reason"])
	}
	if want := `sidecar_calls_total{class_method="query",outcome="busy",route="/api/reasoning_engine"} 1`; !strings.Contains(scrape(t, m), want) {
		t.Errorf("metrics lack %s", want)
	}
	release <- struct{}{}
	<-held
}

// TestAgentErrorCodesAddNoSeries: an agent that sends a new error code on
// every call adds no metric series: labels take values from a fixed set,
// the agent's code goes to the line and the log only.
func TestAgentErrorCodesAddNoSeries(t *testing.T) {
	var calls atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintf(w, "{\"i\":0}\n{\"error\":{\"code\":\"code_%d\",\"message\":\"m\"}}\n", calls.Add(1))
	}))
	defer agent.Close()
	m := metrics.New()
	h := newHarness(t, agent.URL, oneMethodConfig, withMetrics(m))
	series := func() int {
		n := 0
		for _, l := range strings.Split(scrape(t, m), "\n") {
			if strings.HasPrefix(l, "sidecar_") {
				n++
			}
		}
		return n
	}
	var after1 int
	for i := range 30 {
		r := h.stream("stream_query", `{}`)
		got := lines(t, r.body)
		if want := fmt.Sprintf(`"code_%d"`, i+1); len(got) != 2 || !strings.Contains(strings.ToLower(got[1]), want) {
			t.Fatalf("call %d lines = %q, want the agent's code %s in the error line", i, got, want)
		}
		callLogs(t, h.logs, i+1)
		if i == 0 {
			after1 = series()
		}
	}
	if n := series(); n != after1 {
		t.Errorf("%d metric series after 30 distinct agent error codes, %d after the first: the codes became labels", n, after1)
	}
	if text := scrape(t, m); strings.Contains(strings.ToLower(text), "code_") {
		t.Errorf("an agent's error code is a label value:\n%s", text)
	}
}

// waiter is a built-in handler that waits for its context to end and
// returns the bare context error, as code that knows no cause does.
type waiter struct{ started chan struct{} }

func (b waiter) Unary(ctx context.Context, _ core.Call) (json.RawMessage, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (b waiter) Stream(ctx context.Context, _ core.Call) (core.Records, error) {
	return &waitStream{ctx: ctx, started: b.started}, nil
}

// waitStream yields one record, then waits for its context to end.
type waitStream struct {
	ctx     context.Context
	started chan struct{}
	n       int
}

func (s *waitStream) Next() bool {
	if s.n++; s.n == 1 {
		return true
	}
	s.started <- struct{}{}
	<-s.ctx.Done()
	return false
}

func (s *waitStream) Record() []byte { return []byte(`{"i":0}`) }
func (s *waitStream) Err() error     { return s.ctx.Err() }
func (s *waitStream) Close()         {}

// TestCancelledWithItsCause: a call whose handler returns a bare "context
// canceled" when the sidecar ends it is told why (shutting down), in the
// reply and in the log, and is never mistaken for a caller who left.
func TestCancelledWithItsCause(t *testing.T) {
	b := waiter{started: make(chan struct{}, 1)}
	h := newHarness(t, "http://127.0.0.1:1", `
upstream: {url: AGENT}
adk: {app: my_agent}
methods:
  query: {handler: adk.get_session}
  stream_query: {mode: stream, handler: adk.stream_query}
`, withBuiltin(b))
	end := func() {
		select {
		case <-b.started:
		case <-time.After(5 * time.Second):
			t.Error("the handler never started")
		}
		h.server.EndCalls()
	}

	go end()
	r := h.unary("query", `{}`)
	if r.status != 503 || !strings.Contains(detail(t, r), "shutting down") {
		t.Errorf("unary ended by the sidecar = %d %q, want 503 shutting down", r.status, r.body)
	}
	f := callLogs(t, h.logs, 1)[0]
	if msg, _ := f["error"].(string); f["outcome"] != "shutting_down" || !strings.Contains(msg, "shutting down") {
		t.Errorf("log outcome, error = %v, %q, want shutting_down with its cause", f["outcome"], msg)
	}

	// A second server: EndCalls ends every call for good.
	h = newHarness(t, "http://127.0.0.1:1", `
upstream: {url: AGENT}
adk: {app: my_agent}
methods:
  stream_query: {mode: stream, handler: adk.stream_query}
`, withBuiltin(b))
	go end()
	got := lines(t, h.stream("stream_query", `{}`).body)
	if len(got) != 2 || got[0] != `{"i":0}` || !strings.Contains(strings.ToLower(got[1]), "shutting_down") {
		t.Errorf("stream ended by the sidecar = %q, want the record and a shutting_down line", got)
	}
	f = callLogs(t, h.logs, 1)[0]
	if msg, _ := f["error"].(string); f["outcome"] != "shutting_down" || !strings.Contains(msg, "shutting down") {
		t.Errorf("log outcome, error = %v, %q, want shutting_down with its cause", f["outcome"], msg)
	}
}

// TestPublicDetailsAreGeneric: what the public port says about the
// sidecar's own failures names no internals (here the agent's socket
// path); the log and the admin /healthz have the full text.
func TestPublicDetailsAreGeneric(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "agent.sock") // nothing listens there
	h := newHarness(t, "unix://"+sock, `
upstream: {url: AGENT}
timeouts: {connect: 200ms}
methods:
  query: {call: POST /q}
  stream_query: {mode: stream, call: POST /s}
`)
	for _, route := range []string{core.RouteUnary, core.RouteStream} {
		r := h.post(route, `{}`)
		if d := detail(t, r); r.status != 502 || strings.Contains(d, sock) || !strings.Contains(d, "agent unreachable") {
			t.Errorf("%s with no agent = %d %q, want 502 agent unreachable without the socket path", route, r.status, d)
		}
	}
	for _, f := range callLogs(t, h.logs, 2) {
		if msg, _ := f["error"].(string); !strings.Contains(msg, sock) {
			t.Errorf("log error = %q, want the full dial error", msg)
		}
	}

	p := newHarness(t, "unix://"+sock, `
upstream: {url: AGENT, ready: {interval: 20ms}}
methods:
  query: {call: POST /q}
`, withProber(100*time.Millisecond))
	r := p.unary("query", `{}`)
	if d := detail(t, r); r.status != 503 || strings.Contains(d, sock) || !strings.Contains(d, "not ready") {
		t.Errorf("call while not ready = %d %q, want 503 not ready without the socket path", r.status, d)
	}
	if msg, _ := callLogs(t, p.logs, 1)[0]["error"].(string); !strings.Contains(msg, sock) {
		t.Errorf("log error = %q, want the full readiness detail", msg)
	}
	health := func(serve http.HandlerFunc) (int, string) {
		rec := httptest.NewRecorder()
		serve(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	resp, err := http.Get(p.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || strings.Contains(string(b), sock) || !strings.Contains(string(b), `"agent":"not_ready"`) {
		t.Errorf("public /healthz = %d %s, want 503 not_ready without the socket path", resp.StatusCode, b)
	}
	if code, body := health(p.server.ServeHealthDetail); code != 503 || !strings.Contains(body, sock) {
		t.Errorf("admin /healthz = %d %s, want 503 with the full detail", code, body)
	}
	logged := false
	for _, e := range p.logs.FilterMessage("agent not ready").All() {
		logged = logged || strings.Contains(fmt.Sprint(e.ContextMap()["detail"]), sock)
	}
	if !logged {
		t.Errorf("the readiness detail /healthz did not say was not logged")
	}
}

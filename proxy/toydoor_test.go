package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// toyDoor is a second front door, a plain-text protocol, written only
// against the Door seam: POST /ask and POST /watch carry "method input"
// (a class_method, a space, a JSON object), GET /up is health. A unary
// reply is "out <output>", a stream's records are "rec <record>" lines
// and its final error "err <REASON> <message>", a failure before the
// first byte "<REASON>: <message>". It shows a new protocol needs no edit
// of proxy: its calls get the same limits, queue, drain and log line.
type toyDoor struct{}

func (toyDoor) Handler(call func(route string, stream bool) http.Handler, health http.Handler, _ core.Refuse) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /ask", call("/ask", false))
	mux.Handle("POST /watch", call("/watch", true))
	mux.Handle("GET /up", health)
	return mux
}

func (d toyDoor) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	stream := route == "/watch"
	name, input, _ := strings.Cut(string(body), " ")
	m := cfg.Lookup(name, stream)
	if m == nil {
		return core.Exchange{Call: core.Call{Name: name}}, &core.RequestError{Status: http.StatusNotFound, Msg: "no method " + name}
	}
	if !json.Valid([]byte(input)) {
		return core.Exchange{Call: core.Call{Name: name}}, &core.RequestError{Msg: "input is not JSON"}
	}
	c := core.Call{Method: m, Name: name, Input: core.Input{Raw: json.RawMessage(input)}, Header: r.Header, Route: route}
	return core.Exchange{Call: c, Stream: stream, Writer: d}, nil
}

func (toyDoor) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	return fmt.Fprintf(w, "out %s\n", out)
}

func (toyDoor) Encoder(w http.ResponseWriter) core.Encoder { return &toyEncoder{w: w} }

func (toyDoor) WriteError(w http.ResponseWriter, f core.Failure) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	w.WriteHeader(f.Status)
	fmt.Fprintf(w, "%s: %s\n", f.Reason, f.Message)
}

// toyEncoder writes "rec " lines, unbuffered.
type toyEncoder struct {
	w       http.ResponseWriter
	records int
	bytes   int64
	first   time.Time
}

func (e *toyEncoder) Begin() error { e.w.WriteHeader(http.StatusOK); return nil }

func (e *toyEncoder) Copy(r core.Records) error {
	for r.Next() {
		n, err := fmt.Fprintf(e.w, "rec %s\n", r.Record())
		e.bytes += int64(n)
		if err != nil {
			return err
		}
		if e.records == 0 {
			e.first = time.Now()
		}
		e.records++
	}
	return nil
}

func (e *toyEncoder) Fail(f core.Failure) {
	n, _ := fmt.Fprintf(e.w, "err %s %s\n", f.Reason, f.Message)
	e.bytes += int64(n)
}

func (e *toyEncoder) Wrote() (int, int64, time.Time) { return e.records, e.bytes, e.first }

var (
	_ Door        = toyDoor{}
	_ core.Writer = toyDoor{}
)

// blockingAgent answers unary calls with {"ok":true} once release is
// closed, telling started when each call arrives; streams from records.
type blockingAgent struct {
	fakeAgent
	started chan core.Call
	release chan struct{}
}

func (a *blockingAgent) Unary(ctx context.Context, c core.Call) (json.RawMessage, error) {
	a.started <- c
	select {
	case <-a.release:
		return json.RawMessage(`{"ok":true}`), nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// toyServer is a Server behind toyDoor, with no socket.
func toyServer(t *testing.T, limits string, agent core.Agent) (*Server, http.Handler, *observer.ObservedLogs) {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(limits+fakeConfig))
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	s := &Server{Config: cfg, Agent: agent, Logger: zap.New(observed)}
	return s, s.HandlerFor(toyDoor{}), logs
}

func toyCall(h http.Handler, method, route, body string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, route, strings.NewReader(body)))
	return w
}

// TestToyDoor: calls through a second front door reach the Agent as
// core.Calls (input indexed for a method that reads fields), their
// replies, records and failures come out in the door's format, and each
// call gets the shared log line.
func TestToyDoor(t *testing.T) {
	records := &sliceRecords{recs: []string{`{"i":1}`, `{"i":2}`}, err: &core.TimeoutError{Phase: "idle", After: "1s"}}
	agent := &fakeAgent{output: json.RawMessage(`{"text":"hi"}`), records: records}
	_, h, logs := toyServer(t, "", agent)

	if w := toyCall(h, http.MethodPost, "/ask", `query {"id":7}`); w.Code != 200 || w.Body.String() != "out {\"text\":\"hi\"}\n" {
		t.Errorf("/ask = %d %q, want 200 out {\"text\":\"hi\"}", w.Code, w.Body)
	}
	if c := agent.last; c.Name != "query" || c.Route != "/ask" || string(c.Input.Fields["id"]) != "7" || c.Notes == nil {
		t.Errorf("the agent got %+v, want query on /ask with its input indexed and notes", c)
	}
	w := toyCall(h, http.MethodPost, "/watch", `stream_query {}`)
	if want := "rec {\"i\":1}\nrec {\"i\":2}\nerr TIMEOUT agent sent nothing for 1s\n"; w.Code != 200 || w.Body.String() != want {
		t.Errorf("/watch = %d %q, want 200 %q", w.Code, w.Body, want)
	}
	if w := toyCall(h, http.MethodPost, "/ask", `nope {}`); w.Code != 404 || w.Body.String() != "BAD_REQUEST: no method nope\n" {
		t.Errorf("/ask nope = %d %q, want the door's 404", w.Code, w.Body)
	}
	if w := toyCall(h, http.MethodGet, "/up", ""); w.Code != 200 || !strings.Contains(w.Body.String(), `"status":"ok"`) {
		t.Errorf("/up = %d %q, want the shared health answer", w.Code, w.Body)
	}

	want := []map[string]any{
		{"class_method": "query", "route": "/ask", "status": int64(200), "outcome": "ok", "reply": "json", "records": int64(1)},
		{"class_method": "stream_query", "route": "/watch", "status": int64(200), "outcome": "timeout", "phase": "idle", "records": int64(2)},
		{"class_method": "nope", "route": "/ask", "status": int64(404), "outcome": "bad_request", "reason": "BAD_REQUEST"},
	}
	lines := logs.FilterMessage("call").All()
	if len(lines) != len(want) {
		t.Fatalf("%d call log lines, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		got := l.ContextMap()
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("log line %d: %s = %v, want %v (%v)", i, k, got[k], v, got)
			}
		}
	}
}

// TestToyDoorLimits: the toy door's calls are bounded by the shared
// limits: the request body limit, the concurrency slots and their queue
// (503 BUSY with Retry-After), and a drain (503 SHUTTING_DOWN, health
// 503) — all written by the door, decided by the Server.
func TestToyDoorLimits(t *testing.T) {
	agent := &blockingAgent{started: make(chan core.Call, 1), release: make(chan struct{})}
	s, h, _ := toyServer(t, "limits: {concurrency: 1, queue: 0, request_bytes: 64}\n", agent)

	big := `query {"pad":"` + strings.Repeat("x", 100) + `"}`
	if w := toyCall(h, http.MethodPost, "/ask", big); w.Code != 413 || !strings.HasPrefix(w.Body.String(), "REQUEST_TOO_LARGE: ") {
		t.Errorf("a body over request_bytes = %d %q, want 413 REQUEST_TOO_LARGE", w.Code, w.Body)
	}

	held := make(chan *httptest.ResponseRecorder)
	go func() { held <- toyCall(h, http.MethodPost, "/ask", `query {"id":1}`) }()
	<-agent.started
	if s.InFlight() != 1 {
		t.Errorf("InFlight = %d with one call held, want 1", s.InFlight())
	}
	w := toyCall(h, http.MethodPost, "/ask", `query {"id":2}`)
	if w.Code != 503 || w.Header().Get("Retry-After") != "1" || !strings.HasPrefix(w.Body.String(), "BUSY: ") {
		t.Errorf("a call past the one slot = %d %q (Retry-After %q), want 503 BUSY, Retry-After 1", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
	close(agent.release)
	if w := <-held; w.Code != 200 || w.Body.String() != "out {\"ok\":true}\n" {
		t.Errorf("the held call = %d %q, want 200", w.Code, w.Body)
	}

	s.Drain()
	if w := toyCall(h, http.MethodPost, "/ask", `query {"id":3}`); w.Code != 503 || !strings.HasPrefix(w.Body.String(), "SHUTTING_DOWN: ") {
		t.Errorf("a call while draining = %d %q, want 503 SHUTTING_DOWN", w.Code, w.Body)
	}
	if w := toyCall(h, http.MethodGet, "/up", ""); w.Code != 503 {
		t.Errorf("/up while draining = %d, want 503", w.Code)
	}
}

// originToyDoor is the toy door asking for the Origin rule on every
// connection, as the MCP and OpenAI doors do.
type originToyDoor struct{ toyDoor }

func (originToyDoor) OriginEverywhere() bool { return true }

// TestOriginEverywhere: off loopback, a POST with another site's Origin
// reaches a door that does not ask for the Origin rule there (a runtime's
// front end may pass a page's Origin on), and is refused 403 before a
// door that asks; on loopback both refuse it.
func TestOriginEverywhere(t *testing.T) {
	agent := &fakeAgent{output: json.RawMessage(`{"text":"hi"}`)}
	s, plain, _ := toyServer(t, "", agent)
	asking := s.HandlerFor(originToyDoor{})
	post := func(h http.Handler, local net.IP) int {
		r := httptest.NewRequest(http.MethodPost, "/ask", strings.NewReader(`query {}`))
		r.Host = "agents.example.com"
		if local.IsLoopback() {
			r.Host = "127.0.0.1:8080"
		}
		r.Header.Set("Origin", "https://evil.example")
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: local, Port: 8080}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	pub, lo := net.IPv4(192, 0, 2, 7), net.IPv4(127, 0, 0, 1)
	if code := post(plain, pub); code != http.StatusOK {
		t.Errorf("off loopback, a door that does not ask: %d, want 200", code)
	}
	if code := post(asking, pub); code != http.StatusForbidden {
		t.Errorf("off loopback, a door that asks: %d, want 403", code)
	}
	for name, h := range map[string]http.Handler{"does not ask": plain, "asks": asking} {
		if code := post(h, lo); code != http.StatusForbidden {
			t.Errorf("on loopback, a door that %s: %d, want 403", name, code)
		}
	}
}

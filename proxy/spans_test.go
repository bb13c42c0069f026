package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sidecar-dev/sidecar/internal/otlptest"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// tracedAgent answers /query with JSON, /stream with three NDJSON records,
// /fail with a 500 and /retry with a 503 (Retry-After: 0) the first time,
// recording the trace headers of every request it gets.
type tracedAgent struct {
	*httptest.Server
	mu      sync.Mutex
	got     []http.Header // Traceparent and Tracestate of each request
	retried atomic.Bool
}

func newTracedAgent(t *testing.T) *tracedAgent {
	a := &tracedAgent{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		a.mu.Lock()
		a.got = append(a.got, http.Header{"Traceparent": r.Header["Traceparent"], "Tracestate": r.Header["Tracestate"],
			"X-Cloud-Trace-Context": r.Header["X-Cloud-Trace-Context"]})
		a.mu.Unlock()
		switch r.URL.Path {
		case "/stream":
			w.Header().Set("Content-Type", "application/x-ndjson")
			for i := range 3 {
				fmt.Fprintf(w, "{\"n\":%d}\n", i)
			}
		case "/fail":
			http.Error(w, `{"detail":"boom"}`, http.StatusInternalServerError)
		case "/retry":
			if !a.retried.Swap(true) {
				w.Header().Set("Retry-After", "0")
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			fallthrough
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(a.Close)
	return a
}

// received are the trace headers the agent got, in order.
func (a *tracedAgent) received() []http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]http.Header(nil), a.got...)
}

const tracedConfig = `
upstream: {url: AGENT}
methods:
  query: {call: POST /query}
  fail: {call: POST /fail}
  retry: {call: POST /retry, idempotent: true}
  stream_query: {mode: stream, call: POST /stream}
`

// tracedCall makes one call to h with the given headers (name, value, …)
// and returns its status.
func tracedCall(t *testing.T, h *harness, route, method string, header ...string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url+route, strings.NewReader(`{"class_method":"`+method+`","input":{}}`))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// serverAndClients waits for the SERVER span of method and its n CLIENT
// spans (those of its trace), and returns them.
func serverAndClients(t *testing.T, rec *otlptest.Receiver, method string, n int) (otlptest.Span, []otlptest.Span) {
	t.Helper()
	var server otlptest.Span
	var clients []otlptest.Span
	rec.Wait(t, fmt.Sprintf("the server span of %s and %d client spans", method, n), func(spans []otlptest.Span) bool {
		s := otlptest.Find(spans, otlptest.Kind("server", method))
		if s == nil {
			return false
		}
		server, clients = *s, nil
		for _, c := range spans {
			if c.Kind == "client" && c.TraceID == s.TraceID {
				clients = append(clients, c)
			}
		}
		return len(clients) >= n
	})
	return server, clients
}

// checkAgentParent checks that the agent got, for its request i, a
// traceparent naming client as its parent in client's trace.
func checkAgentParent(t *testing.T, agent *tracedAgent, i int, client otlptest.Span) {
	t.Helper()
	got := agent.received()
	if len(got) <= i {
		t.Fatalf("the agent got %d requests, want more than %d", len(got), i)
	}
	want := "00-" + client.TraceID + "-" + client.SpanID + "-01"
	if tp := got[i].Get("Traceparent"); tp != want {
		t.Errorf("the agent's traceparent = %q, want %q (the client span as parent)", tp, want)
	}
}

// checkPhases checks that span has the phase events named, in that
// order in time, within the span.
func checkPhases(t *testing.T, span otlptest.Span, names ...string) {
	t.Helper()
	last := span.Start
	for _, name := range names {
		e := span.Event(name)
		if e == nil {
			t.Errorf("span %s has no %s event: %+v", span.Name, name, span.Events)
			continue
		}
		if e.Time.Before(last) || e.Time.After(span.End) {
			t.Errorf("span %s: %s at %v, want after %v and by the end %v", span.Name, name, e.Time, last, span.End)
		}
		last = e.Time
	}
}

// callLog is the "call" log line's fields, once it is written (after the
// reply has gone).
func callLog(t *testing.T, h *harness) map[string]any {
	t.Helper()
	waitFor(t, func() bool { return h.logs.FilterMessage("call").Len() > 0 })
	return h.logs.FilterMessage("call").All()[0].ContextMap()
}

// TestSpansUnary: a unary call is one SERVER span with the HTTP and
// sidecar attributes, and one CLIENT span, its child, for the agent's
// request, whose traceparent the agent gets; the log line names the
// server span.
func TestSpansUnary(t *testing.T) {
	rec := otlptest.NewHTTP(t)
	agent := newTracedAgent(t)
	h := newHarness(t, agent.URL, tracedConfig, withTracer(rec.Tracer(t)))
	if code := tracedCall(t, h, core.RouteUnary, "query"); code != 200 {
		t.Fatalf("status %d", code)
	}
	server, clients := serverAndClients(t, rec, "query", 1)
	want := map[string]any{
		"http.request.method": "POST", "url.path": core.RouteUnary, "http.response.status_code": int64(200),
		"sidecar.class_method": "query", "sidecar.protocol": "other", "sidecar.outcome": "ok", "sidecar.records": int64(1),
	}
	for k, v := range want {
		if server.Attrs[k] != v {
			t.Errorf("server span %s = %v, want %v", k, server.Attrs[k], v)
		}
	}
	if _, ok := server.Attrs["sidecar.reason"]; ok || server.Status == "error" {
		t.Errorf("an ok call's span has reason %v, status %s", server.Attrs["sidecar.reason"], server.Status)
	}
	if server.Parent != "" {
		t.Errorf("a call without trace headers has parent %s, want a root span", server.Parent)
	}
	checkPhases(t, server, "queued", "connected", "agent.first_byte")
	c := clients[0]
	if c.Parent != server.SpanID || c.Attrs["http.response.status_code"] != int64(200) || c.Event("agent.first_byte") == nil {
		t.Errorf("client span %+v, want a child of %s with status 200 and agent.first_byte", c, server.SpanID)
	}
	if c.Attrs["server.address"] != strings.TrimPrefix(agent.URL, "http://") || c.Attrs["url.full"] != nil || c.Attrs["url.path"] != nil {
		t.Errorf("client span attributes %v, want the agent's address and no path (it may hold the caller's input)", c.Attrs)
	}
	if c.Start.Before(server.Start) || c.End.After(server.End) {
		t.Errorf("client span %v–%v is not within the server span %v–%v", c.Start, c.End, server.Start, server.End)
	}
	checkAgentParent(t, agent, 0, c)
	log := callLog(t, h)
	if log["logging.googleapis.com/trace"] != server.TraceID || log["logging.googleapis.com/spanId"] != server.SpanID ||
		log["logging.googleapis.com/trace_sampled"] != true {
		t.Errorf("log line trace fields %v, want the server span %s/%s, sampled", log, server.TraceID, server.SpanID)
	}
}

// TestSpansStream: a stream's SERVER span counts its records and marks
// the first; its CLIENT span lasts until the agent's reply ends.
func TestSpansStream(t *testing.T) {
	rec := otlptest.NewHTTP(t)
	agent := newTracedAgent(t)
	h := newHarness(t, agent.URL, tracedConfig, withTracer(rec.Tracer(t)))
	if code := tracedCall(t, h, core.RouteStream, "stream_query"); code != 200 {
		t.Fatalf("status %d", code)
	}
	server, clients := serverAndClients(t, rec, "stream_query", 1)
	if server.Attrs["sidecar.records"] != int64(3) || server.Attrs["sidecar.outcome"] != "ok" || server.Attrs["url.path"] != core.RouteStream {
		t.Errorf("stream server span attributes %v", server.Attrs)
	}
	checkPhases(t, server, "queued", "connected", "agent.first_byte", "first_record")
	if c := clients[0]; c.Parent != server.SpanID || c.Status == "error" {
		t.Errorf("stream client span %+v, want an ok child of %s", c, server.SpanID)
	}
	checkAgentParent(t, agent, 0, clients[0])
}

// TestSpansFailure: a failed call's SERVER span has status Error, its
// outcome and reason; the CLIENT span has the agent's status.
func TestSpansFailure(t *testing.T) {
	rec := otlptest.NewHTTP(t)
	agent := newTracedAgent(t)
	h := newHarness(t, agent.URL, tracedConfig, withTracer(rec.Tracer(t)))
	code := tracedCall(t, h, core.RouteUnary, "fail")
	server, clients := serverAndClients(t, rec, "fail", 1)
	log := callLog(t, h)
	if server.Status != "error" || server.Attrs["sidecar.outcome"] != "agent_error" || server.Attrs["sidecar.reason"] != log["reason"] ||
		server.Attrs["sidecar.reason"] == nil || server.Attrs["http.response.status_code"] != int64(code) {
		t.Errorf("failed call's server span: status %s, attributes %v; the log line says %v", server.Status, server.Attrs, log)
	}
	if c := clients[0]; c.Status != "error" || c.Attrs["http.response.status_code"] != int64(500) {
		t.Errorf("failed call's client span: status %s, attributes %v", c.Status, c.Attrs)
	}
}

// TestSpansRefused: a call refused before the agent (a method the map
// does not have) is a SERVER span too, status Error with its reason, and
// has no CLIENT span.
func TestSpansRefused(t *testing.T) {
	rec := otlptest.NewHTTP(t)
	agent := newTracedAgent(t)
	h := newHarness(t, agent.URL, tracedConfig, withTracer(rec.Tracer(t)))
	if code := tracedCall(t, h, core.RouteUnary, "nope"); code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", code)
	}
	spans := rec.Wait(t, "the refused call's server span", func(spans []otlptest.Span) bool {
		return otlptest.Find(spans, otlptest.Kind("server", "nope")) != nil
	})
	server := otlptest.Find(spans, otlptest.Kind("server", "nope"))
	if server.Status != "error" || server.Attrs["sidecar.outcome"] != "bad_request" || server.Attrs["sidecar.reason"] != "BAD_REQUEST" ||
		server.Attrs["http.response.status_code"] != int64(400) || server.Attrs["sidecar.records"] != int64(0) {
		t.Errorf("refused call's server span: status %s, attributes %v", server.Status, server.Attrs)
	}
	if len(spans) != 1 || len(agent.received()) != 0 {
		t.Errorf("a refused call made %d spans and %d agent requests, want its server span alone", len(spans), len(agent.received()))
	}
}

// TestSpansRetry: each attempt at the agent is a CLIENT span of its own,
// the retry with http.request.resend_count, each the agent's parent.
func TestSpansRetry(t *testing.T) {
	rec := otlptest.NewHTTP(t)
	agent := newTracedAgent(t)
	h := newHarness(t, agent.URL, tracedConfig, withTracer(rec.Tracer(t)))
	if code := tracedCall(t, h, core.RouteUnary, "retry"); code != 200 {
		t.Fatalf("status %d", code)
	}
	server, clients := serverAndClients(t, rec, "retry", 2)
	if len(clients) != 2 {
		t.Fatalf("%d client spans, want 2", len(clients))
	}
	for i, c := range clients {
		// Spans come as they end: the refused attempt first.
		wantStatus, wantResend := int64(503), any(nil)
		if i == 1 {
			wantStatus, wantResend = 200, int64(1)
		}
		if c.Parent != server.SpanID || c.Attrs["http.response.status_code"] != wantStatus || c.Attrs["http.request.resend_count"] != wantResend {
			t.Errorf("attempt %d: client span parent %s, attributes %v; want parent %s, status %d, resend_count %v",
				i, c.Parent, c.Attrs, server.SpanID, wantStatus, wantResend)
		}
		checkAgentParent(t, agent, i, c)
	}
}

// TestSpansContinueCallerTrace: a caller's traceparent (and tracestate)
// is continued; without one, X-Cloud-Trace-Context is. Either way the
// agent gets the trace id, the client span as parent.
func TestSpansContinueCallerTrace(t *testing.T) {
	tests := []struct {
		name                    string
		header                  []string
		traceID, parent, sample string
		tracestate              string
	}{
		{"traceparent", []string{"Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "Tracestate", "vendor=x"},
			"0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "01", "vendor=x"},
		{"traceparent over cloud trace", []string{"Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
			"X-Cloud-Trace-Context", "105445aa7843bc8bf206b12000100000/1;o=1"},
			"0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "01", ""},
		{"cloud trace context", []string{"X-Cloud-Trace-Context", "105445aa7843bc8bf206b12000100000/123;o=1"},
			"105445aa7843bc8bf206b12000100000", "000000000000007b", "01", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := otlptest.NewHTTP(t)
			agent := newTracedAgent(t)
			h := newHarness(t, agent.URL, tracedConfig, withTracer(rec.Tracer(t)))
			if code := tracedCall(t, h, core.RouteUnary, "query", tt.header...); code != 200 {
				t.Fatalf("status %d", code)
			}
			server, clients := serverAndClients(t, rec, "query", 1)
			if server.TraceID != tt.traceID || server.Parent != tt.parent || server.TraceState != tt.tracestate {
				t.Errorf("server span trace %s parent %s tracestate %q, want %s %s %q",
					server.TraceID, server.Parent, server.TraceState, tt.traceID, tt.parent, tt.tracestate)
			}
			checkAgentParent(t, agent, 0, clients[0])
			got := agent.received()[0]
			if got.Get("Tracestate") != tt.tracestate {
				t.Errorf("the agent's tracestate = %q, want %q", got.Get("Tracestate"), tt.tracestate)
			}
			// An X-Cloud-Trace-Context passed on names the client span too.
			wantCloud := ""
			if slices.Contains(tt.header, "X-Cloud-Trace-Context") {
				id, _ := strconv.ParseUint(clients[0].SpanID, 16, 64)
				wantCloud = clients[0].TraceID + "/" + strconv.FormatUint(id, 10) + ";o=1"
			}
			if g := got.Get("X-Cloud-Trace-Context"); g != wantCloud {
				t.Errorf("the agent's X-Cloud-Trace-Context = %q, want %q", g, wantCloud)
			}
		})
	}
}

// TestTracingOffPassesCallerTrace: without a tracer the agent gets the
// caller's trace headers as they came, and the log line names the
// caller's span.
func TestTracingOffPassesCallerTrace(t *testing.T) {
	agent := newTracedAgent(t)
	h := newHarness(t, agent.URL, tracedConfig)
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	tracedCall(t, h, core.RouteUnary, "query", "Traceparent", tp, "Tracestate", "vendor=x")
	got := agent.received()[0]
	if got.Get("Traceparent") != tp || got.Get("Tracestate") != "vendor=x" {
		t.Errorf("the agent got %v, want the caller's trace headers", got)
	}
	if log := callLog(t, h); log["logging.googleapis.com/spanId"] != "b7ad6b7169203331" {
		t.Errorf("log line %v, want the caller's span id", log)
	}
}

// TestSpansUnsampled: a caller's unsampled traceparent is followed: no
// span is exported, the agent still gets a traceparent in the trace,
// unsampled, naming a span of the sidecar's, and the log line says so.
func TestSpansUnsampled(t *testing.T) {
	rec := otlptest.NewHTTP(t)
	agent := newTracedAgent(t)
	h := newHarness(t, agent.URL, tracedConfig, withTracer(rec.Tracer(t)))
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	if code := tracedCall(t, h, core.RouteUnary, "query", "Traceparent", caller); code != 200 {
		t.Fatalf("status %d", code)
	}
	// The span ends before the call leaves the in-flight count, and the
	// test's exporter sends a sampled span as it ends.
	waitFor(t, func() bool { return h.server.InFlight() == 0 })
	if spans := rec.Spans(); len(spans) != 0 {
		t.Errorf("an unsampled call exported %+v", spans)
	}
	got := agent.received()[0].Get("Traceparent")
	if !strings.HasPrefix(got, "00-0af7651916cd43dd8448eb211c80319c-") || !strings.HasSuffix(got, "-00") || got == caller {
		t.Errorf("the agent's traceparent = %q, want the caller's trace, unsampled, a span of the sidecar's", got)
	}
	if log := callLog(t, h); log["logging.googleapis.com/trace_sampled"] != false || log["logging.googleapis.com/spanId"] == "b7ad6b7169203331" {
		t.Errorf("log line %v, want the sidecar's unsampled span", log)
	}
}

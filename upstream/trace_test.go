package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// tracedClient is a client whose requests to url are traced, and a
// call's span to send them in: the recorder holds the spans that ended.
func tracedClient(t *testing.T, url, extra string) (*Client, context.Context, trace.Span, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	c, err := New(testConfig(t, url, extra), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.Trace(tp.Tracer("upstream"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	ctx, call := tp.Tracer("test").Start(ctx, "call")
	return c, ctx, call, rec
}

// clientSpans are the CLIENT spans the recorder holds.
func clientSpans(rec *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindClient {
			out = append(out, s)
		}
	}
	return out
}

// TestTraceparentSent: the agent receives a traceparent naming the
// request's CLIENT span, a child of the call's span in the call's trace,
// sampled as the call is, in place of the one the caller sent; the
// caller's tracestate goes with it.
func TestTraceparentSent(t *testing.T) {
	got := make(chan http.Header, 1)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer agent.Close()
	c, ctx, call, rec := tracedClient(t, agent.URL, "")
	caller := http.Header{}
	caller.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	caller.Set("Tracestate", "vendor=caller")
	resp, err := c.Send(ctx, Request{Verb: http.MethodPost, Path: "/q", Body: []byte(`{}`), Header: caller})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.body)
	resp.Close()
	call.End()
	h := <-got
	sent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h)))
	spans := clientSpans(rec)
	if len(spans) != 1 {
		t.Fatalf("%d CLIENT spans, want 1", len(spans))
	}
	span, parent := spans[0], call.SpanContext()
	switch {
	case !sent.IsValid():
		t.Fatalf("the agent got traceparent %q: not a valid one", h.Get("Traceparent"))
	case sent.TraceID() != parent.TraceID():
		t.Errorf("the agent's traceparent %q is in trace %s, want the call's %s", h.Get("Traceparent"), sent.TraceID(), parent.TraceID())
	case sent.SpanID() != span.SpanContext().SpanID():
		t.Errorf("the agent's traceparent %q names span %s, want the CLIENT span %s", h.Get("Traceparent"), sent.SpanID(), span.SpanContext().SpanID())
	case span.Parent().SpanID() != parent.SpanID():
		t.Errorf("the CLIENT span's parent is %s, want the call's span %s", span.Parent().SpanID(), parent.SpanID())
	case sent.IsSampled() != parent.IsSampled():
		t.Errorf("the agent's traceparent %q says sampled=%v, the call's span %v", h.Get("Traceparent"), sent.IsSampled(), parent.IsSampled())
	}
	if v := h.Get("Tracestate"); v != "vendor=caller" {
		t.Errorf("the agent got tracestate %q, want the caller's %q", v, "vendor=caller")
	}
}

// TestTraceAgentUnreachable: a request that never reaches the agent (no
// one listens) is a CLIENT span per attempt, each marked Error with the
// dial's error recorded.
func TestTraceAgentUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, ctx, call, rec := tracedClient(t, "http://"+addr, "")
	_, err = c.Send(ctx, Request{Verb: http.MethodPost, Path: "/q", Body: []byte(`{}`), Timeouts: config.Timeouts{Connect: 200 * time.Millisecond}})
	call.End()
	var de *core.DialError
	if !errors.As(err, &de) {
		t.Fatalf("Send to a port nobody listens on: %v, want a *core.DialError", err)
	}
	spans := clientSpans(rec)
	if len(spans) == 0 {
		t.Fatal("no CLIENT span for a call to an agent nobody listens for")
	}
	for i, s := range spans {
		if s.Status().Code != codes.Error || len(s.Events()) == 0 || s.Events()[0].Name != "exception" {
			t.Errorf("attempt %d's span: status %v %q, events %v; want Error with the error recorded", i+1, s.Status().Code, s.Status().Description, s.Events())
		}
	}
}

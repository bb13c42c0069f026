package upstream

import (
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Trace records every request to the agent made in a traced call (one
// whose context carries a span) as a CLIENT span of tracer, a child of the
// call's span: one span per attempt, so a retry is a span of its own with
// http.request.resend_count. The agent receives a traceparent (and the
// caller's tracestate) naming that span, in place of the caller's, so its
// own spans join the trace; an X-Cloud-Trace-Context passed on names it
// too. The span ends with the reply's body. Call it
// once, before the client is used; without it the agent gets the caller's
// trace headers as they came.
func (c *Client) Trace(tracer trace.Tracer) {
	hc := c.retrying.HTTPClient
	hc.Transport = &tracedTransport{next: hc.Transport, tracer: tracer}
}

type tracedTransport struct {
	next   http.RoundTripper
	tracer trace.Tracer
}

func (t *tracedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return t.next.RoundTrip(req) // not a call's (a probe)
	}
	// Not the URL's path or query: a method's path template can put the
	// caller's input there.
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", req.Method),
		attribute.String("server.address", req.URL.Host),
		attribute.String("sidecar.class_method", req.Header.Get("X-Sidecar-Class-Method")),
	}
	if ci, ok := ctx.Value(callKey{}).(*callInfo); ok {
		if n := ci.attempts.Load(); n > 0 {
			attrs = append(attrs, attribute.Int("http.request.resend_count", int(n)))
		}
	}
	ctx, span := t.tracer.Start(ctx, req.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	// A RoundTripper leaves its request as it is: retries send it again.
	out := req.WithContext(ctx)
	out.Header = req.Header.Clone()
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(out.Header))
	if len(out.Header["X-Cloud-Trace-Context"]) > 0 {
		// Passed on, it names the same span, for agents that read it.
		out.Header["X-Cloud-Trace-Context"] = []string{CloudTrace(span.SpanContext())}
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return nil, err
	}
	span.AddEvent("agent.first_byte")
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
	}
	resp.Body = &spanBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// CloudTrace is sc as an X-Cloud-Trace-Context: TRACE_ID/SPAN_ID;o=1,
// the span id in decimal, o=1 when sampled.
func CloudTrace(sc trace.SpanContext) string {
	id := sc.SpanID()
	sampled := "0"
	if sc.IsSampled() {
		sampled = "1"
	}
	return sc.TraceID().String() + "/" + strconv.FormatUint(binary.BigEndian.Uint64(id[:]), 10) + ";o=" + sampled
}

// spanBody ends its span when the body is read to its end, fails, or is
// closed, whichever comes first (a span ends once).
type spanBody struct {
	io.ReadCloser
	span trace.Span
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			b.span.RecordError(err)
			b.span.SetStatus(codes.Error, err.Error())
		}
		b.span.End()
	}
	return n, err
}

func (b *spanBody) Close() error {
	b.span.End()
	return b.ReadCloser.Close()
}

var _ http.RoundTripper = (*tracedTransport)(nil)

package proxy

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/metrics"
)

// traceFields are the Cloud Logging fields that group a call's log line
// with its trace: from W3C traceparent, else X-Cloud-Trace-Context. The
// trace is "projects/P/traces/T" when the project is known (Cloud Logging
// needs that form to link them), else the bare trace id.
func traceFields(h http.Header, project string) []zap.Field {
	traceID, spanID, sampled := parseTraceparent(h.Get("Traceparent"))
	if traceID == "" {
		traceID, spanID, sampled = parseCloudTrace(h.Get("X-Cloud-Trace-Context"))
	}
	if traceID == "" {
		return nil
	}
	trace := traceID
	if project != "" {
		trace = "projects/" + project + "/traces/" + traceID
	}
	fields := []zap.Field{zap.String("logging.googleapis.com/trace", trace)}
	if spanID != "" {
		fields = append(fields, zap.String("logging.googleapis.com/spanId", spanID))
	}
	return append(fields, zap.Bool("logging.googleapis.com/trace_sampled", sampled))
}

// parseTraceparent reads "00-<32 hex trace id>-<16 hex span id>-<flags>".
func parseTraceparent(v string) (traceID, spanID string, sampled bool) {
	if v == "" {
		return "", "", false
	}
	f := strings.Split(strings.TrimSpace(v), "-")
	if len(f) < 4 || len(f[0]) != 2 || len(f[1]) != 32 || len(f[2]) != 16 || len(f[3]) != 2 || !isHex(f[1]) || !isHex(f[2]) {
		return "", "", false
	}
	if strings.Trim(f[1], "0") == "" {
		return "", "", false // all-zero ids are invalid
	}
	flags, err := strconv.ParseUint(f[3], 16, 8)
	return f[1], f[2], err == nil && flags&1 == 1
}

// parseCloudTrace reads "TRACE_ID/SPAN_ID;o=1" (span id decimal).
func parseCloudTrace(v string) (traceID, spanID string, sampled bool) {
	v = strings.TrimSpace(v)
	rest, opts, _ := strings.Cut(v, ";")
	traceID, span, _ := strings.Cut(rest, "/")
	if len(traceID) != 32 || !isHex(traceID) {
		return "", "", false
	}
	if n, err := strconv.ParseUint(span, 10, 64); err == nil {
		spanID = strconv.FormatUint(n, 16)
		spanID = strings.Repeat("0", 16-len(spanID)) + spanID
	}
	return strings.ToLower(traceID), spanID, opts == "o=1"
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// callerSpan is the caller's span, the parent of the call's SERVER span:
// from W3C traceparent (and tracestate), else X-Cloud-Trace-Context (whose
// span id is required: without one there is no span to continue). An
// invalid SpanContext when the call comes with neither.
func callerSpan(h http.Header) trace.SpanContext {
	if sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h))); sc.IsValid() {
		return sc
	}
	traceID, spanID, sampled := parseCloudTrace(h.Get("X-Cloud-Trace-Context"))
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		return trace.SpanContext{}
	}
	sid, err := trace.SpanIDFromHex(spanID)
	if err != nil {
		return trace.SpanContext{}
	}
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
}

// startSpan starts the call's SERVER span, when the Server has a Tracer,
// continuing the caller's trace: ctx then carries it, so the agent's
// requests are its children and carry it on.
func (s *Server) startSpan(ctx context.Context, r *http.Request, c *call) context.Context {
	if s.Tracer == nil {
		return ctx
	}
	ctx, c.span = s.serverSpan(ctx, r, c.route, c.protocol, c.start)
	return ctx
}

// serverSpan starts a SERVER span of s.Tracer (which must be set) for r,
// served on route by protocol since start, a child of the caller's span
// when r names one.
func (s *Server) serverSpan(ctx context.Context, r *http.Request, route, protocol string, start time.Time) (context.Context, trace.Span) {
	if parent := callerSpan(r.Header); parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx, span := s.Tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.Path),
			attribute.String("http.route", route),
			attribute.String("sidecar.protocol", protocol),
		))
	if caller := s.callerOf(r); caller != nil {
		span.SetAttributes(attribute.String("enduser.id", caller.Subject))
	}
	return ctx, span
}

// endSpan ends the call's SERVER span, if it has one, at the call's end,
// with how the call ended: its status, class_method, outcome, reason and
// records, status Error unless it ended ok, and the phases it reached
// (core.Phases) as events: queued (it had its concurrency slot, or was
// refused one), connected (to the agent), agent.first_byte (the agent's
// reply head), first_record (written to the caller).
func (c *call) endSpan() {
	if c.span == nil {
		return
	}
	if c.status != 0 {
		c.span.SetAttributes(attribute.Int("http.response.status_code", c.status))
	}
	c.span.SetAttributes(
		attribute.String("sidecar.class_method", c.method),
		attribute.String("sidecar.outcome", string(c.outcome)),
		attribute.Int("sidecar.records", c.records),
	)
	p := &c.notes.Phases
	for _, e := range [...]struct {
		name string
		at   time.Time
	}{{"queued", p.Queued}, {"connected", p.Connected}, {"agent.first_byte", p.FirstByte}, {"first_record", p.FirstRecord}} {
		if !e.at.IsZero() {
			c.span.AddEvent(e.name, trace.WithTimestamp(e.at))
		}
	}
	if c.outcome != metrics.OK {
		if c.reason != "" {
			c.span.SetAttributes(attribute.String("sidecar.reason", c.reason))
		}
		c.span.SetStatus(codes.Error, c.reason)
	}
	c.span.End(trace.WithTimestamp(p.End))
}

// spanFields are the Cloud Logging fields that group a call's log line
// with its SERVER span.
func spanFields(sc trace.SpanContext, project string) []zap.Field {
	id := sc.TraceID().String()
	if project != "" {
		id = "projects/" + project + "/traces/" + id
	}
	return []zap.Field{
		zap.String("logging.googleapis.com/trace", id),
		zap.String("logging.googleapis.com/spanId", sc.SpanID().String()),
		zap.Bool("logging.googleapis.com/trace_sampled", sc.IsSampled()),
	}
}

package proxy

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// call is one class_method call, from request to log line.
type call struct {
	start    time.Time
	door     Door          // the front door it came in by
	ex       core.Exchange // the request the Door opened: the call for the agent, its writers
	protocol string        // its protocol, for the log line and metrics
	route    string
	stream   bool // answered as a stream (the route's until the request is opened)
	refused  bool // refused by the door before it was a call (refuser): its line names the peer
	method   string
	status   int
	notes    core.Notes // the reply's format and the agent's retries
	records  int
	bytes    int64
	outcome  metrics.Outcome // who ended the call
	phase    string          // the clock that ran out, for a timeout
	reason   string          // the failure's reason, for a call that did not end ok
	err      error
	slots    *slots        // the slots the call holds one of, nil when none (free)
	entry    string        // the method map entry that served it
	first    time.Duration // to the first line of a stream
	timing   [1]string     // the reply's Server-Timing header (setServerTiming)
	span     trace.Span    // the call's SERVER span; nil when tracing is off
	// end is the call's context and its one cancellation; prev and next
	// link it into the server's calls in flight (callContext).
	end        core.End
	prev, next *call
	writes     writeBound   // bounds the reply's writes (boundWrites)
	answer     answerWriter // what the answer is written through
	ack        *core.Answer // the answer the caller had before the call ran (detach)
}

// context is the call's context: the exchange's, derived from ctx.
func (c *call) context(ctx context.Context) context.Context {
	if c.ex.Context == nil {
		return ctx
	}
	return c.ex.Context(ctx)
}

func (c *call) done() {
	c.notes.Phases.End = time.Now()
	c.free()
}

// free frees the call's concurrency slot, if it holds one: once its
// answer is all but written (answerWriter), else when its handler ends.
// Either is before the caller has the answer whole: its last byte (or
// the last chunk net/http writes once the handler returns) comes after.
func (c *call) free() {
	if q := c.slots; q != nil {
		c.slots = nil
		q.release()
	}
}

// serveUnary answers a unary call with the agent's output.
func (s *Server) serveUnary(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call) {
	out, err := s.Agent.Unary(ctx, c.ex.Call)
	if err != nil {
		s.fail(w, r, c, explain(ctx, r.Context(), err))
		return
	}
	c.status, c.records, c.outcome = http.StatusOK, 1, metrics.OK
	setServerTiming(w, c)
	n, err := c.ex.Writer.WriteOutput(w, out)
	c.bytes = int64(n)
	if err != nil {
		c.callerLeft(err)
	}
}

// serveStream answers a streaming call with the agent's records, through
// the mapping stage, written by the exchange's encoder.
func (s *Server) serveStream(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call) {
	records, err := s.openStream(ctx, c.ex.Call)
	if err != nil {
		s.fail(w, r, c, err)
		return
	}
	defer records.Close()

	// The agent has answered 2xx: the 200 goes out now, before the first
	// record, so the caller knows the call was accepted.
	out := c.ex.Writer.Encoder(w)
	c.status = http.StatusOK
	setServerTiming(w, c)
	if err := out.Begin(); err != nil {
		c.callerLeft(err)
		return
	}
	err = out.Copy(records)
	var first time.Time
	c.records, c.bytes, first = out.Wrote()
	if c.records > 0 {
		c.first = first.Sub(c.start)
		c.notes.Phases.FirstRecord = first
	}
	if err != nil {
		c.callerLeft(err)
		return
	}
	err = records.Err()
	if s, ok := out.(core.Stopper); ok && err == nil {
		err = s.Stopped() // the encoder ended the stream itself
	}
	if err != nil {
		err = explain(ctx, r.Context(), err)
		f := c.failed(core.FailureOf(err), err)
		if f.Outcome == metrics.CallerLeft {
			return
		}
		out.Fail(f)
		_, c.bytes, _ = out.Wrote()
		if c.answer.status != 0 {
			c.status = c.answer.status // an encoder that had written nothing (OpenAI's whole answer) answers its own
		}
		return
	}
	c.outcome = metrics.OK
}

// openStream runs records on a goroutine of its own and waits for it.
// The HTTP client's calls go deep, and a goroutine keeps the largest stack
// it ever needed for as long as it lives; the handler's goroutine, which
// then waits on the stream for as long as it is open, stays shallow. At
// 1,000 open idle streams this is 19 MB of stacks against 12 MB
// (BENCHMARKS.md). A panic is raised again on the handler's goroutine, as
// if the call had run there.
func (s *Server) openStream(ctx context.Context, call core.Call) (records core.Records, err error) {
	var panicked any
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		defer func() { panicked = recover() }()
		records, err = s.Agent.Stream(ctx, call)
	}()
	<-opened
	if panicked != nil {
		panic(panicked)
	}
	return records, err
}

// fail answers a call that failed before its first byte.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, c *call, err error) {
	if _, late := err.(*lateBody); !late {
		err = explain(s.calls, r.Context(), err)
	}
	f := c.failed(core.FailureOf(err), err)
	c.status = f.Status
	if f.Outcome == metrics.CallerLeft && r.Context().Err() != nil {
		return // nobody is listening
	}
	setServerTiming(w, c)
	if c.ex.Writer == nil { // not opened
		c.door.WriteError(w, f)
		return
	}
	c.ex.Writer.WriteError(w, f)
}

// log writes the call's one log line and records its metrics. Bodies are
// never logged.
func (s *Server) log(r *http.Request, c *call) {
	defer c.endSpan()
	if c.ack != nil { // answered before it ran (detach): what its caller had
		c.status, c.bytes = c.ack.Status, int64(len(c.ack.Body))
	}
	s.Metrics.Call(metrics.Call{
		Method: c.entry, Route: c.route, Outcome: c.outcome, Phase: c.phase, Duration: time.Since(c.start), FirstLine: c.first,
		Records: c.records, Bytes: c.bytes, Retries: c.notes.Retries, Stream: c.stream, Protocol: c.protocol,
	})
	level := zap.InfoLevel
	if c.status >= 500 || (c.outcome != metrics.OK && c.status == http.StatusOK) {
		level = zap.WarnLevel
	}
	ce := s.Logger.Check(level, "call")
	if ce == nil {
		return
	}
	pooled := logFields.Get().(*[]zap.Field)
	fields := append((*pooled)[:0],
		zap.String("class_method", c.method),
		zap.String("protocol", c.protocol),
		zap.String("route", c.route),
		zap.Int("status", c.status),
		zap.String("reply", c.notes.Reply),
		zap.Int("records", c.records),
		zap.Int64("bytes", c.bytes),
		zap.Duration("duration", time.Since(c.start)),
		zap.String("outcome", string(c.outcome)),
	)
	if c.phase != "" {
		fields = append(fields, zap.String("phase", c.phase))
	}
	if c.reason != "" {
		fields = append(fields, zap.String("reason", c.reason))
	}
	if c.notes.Dialect != "" {
		fields = append(fields, zap.String("dialect", c.notes.Dialect))
	}
	if c.notes.Retries > 0 {
		fields = append(fields, zap.Int("retries", c.notes.Retries))
	}
	if id := r.Header.Get("X-Request-Id"); id != "" {
		fields = append(fields, zap.String("request_id", core.Clip(id)))
	}
	if caller := s.callerOf(r); caller != nil {
		fields = append(fields, zap.String("caller", core.Clip(caller.Subject))) // who, never the token
	}
	if c.span != nil {
		fields = append(fields, spanFields(c.span.SpanContext(), s.Project)...)
	} else {
		fields = append(fields, traceFields(r.Header, s.Project)...)
	}
	if c.err != nil {
		fields = append(fields, zap.String("error", c.err.Error()))
	}
	if c.refused {
		fields = append(fields, zap.String("remote", r.RemoteAddr))
	}
	ce.Write(fields...)
	*pooled = fields
	putLogFields(pooled)
}

// logFields holds the slices the call lines' fields are gathered in, one
// per call being logged: a core writes the fields before Write returns
// (zap's cores keep none), so the next call line reuses the slice.
var logFields = sync.Pool{New: func() any { f := make([]zap.Field, 0, 24); return &f }}

// putLogFields returns a call line's fields to logFields, emptied: the
// next line starts from none, and holds none of this call's strings.
func putLogFields(f *[]zap.Field) {
	clear(*f)
	*f = (*f)[:0]
	logFields.Put(f)
}

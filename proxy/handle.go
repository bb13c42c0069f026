package proxy

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// handle is the handler of the calls on one of the Door's routes, the
// per-call pipeline every door shares: the call is counted in flight,
// gets its context, has its request read and opened by the Door (begin),
// is served unary or streaming as its exchange says, and ends with one
// log line.
func (s *Server) handle(door Door, protocol, route string, stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{start: time.Now(), door: door, protocol: protocol, route: route, stream: stream}
		c.notes.Phases.Accepted = c.start
		// The call is in flight until its log line is written and its
		// span ended: a shutdown that waits for the calls (WaitIdle)
		// then flushes their spans and loses no line.
		s.callBegun()
		defer s.callEnded()
		defer s.log(r, c)
		defer c.done()
		ctx := s.callContext(r, c)
		defer s.endContext(c)
		ctx = s.startSpan(ctx, r, c)
		ctx, err := s.begin(ctx, w, r, c)
		if err == nil && c.ex.Detach != nil && c.end.Detach() {
			w, r = s.detach(w, r, c)
		}
		// The answer is written through c.answer, which frees the slot
		// before the caller can have it whole; begin reads through w.
		// One frame for all of it, and at most five defers (open-coded):
		// the stack of an idle stream's goroutine stays in its 8 KiB.
		c.answer = answerWriter{ResponseWriter: w, c: c}
		w = &c.answer
		if err != nil {
			var answer *core.Answer // here, not above: errors.As puts it on the heap
			if errors.As(err, &answer) {
				s.answer(w, c, answer)
				if answer.Stream != nil {
					s.answerStream(ctx, w, r, c, answer)
				}
				return
			}
			s.fail(w, r, c, err)
			return
		}
		c.boundWrites(ctx, w, r, c.ex.Call.Method.Timeouts.Total)
		defer c.endWrites()
		if rs, ok := c.ex.Writer.(core.Resumer); ok {
			rs.Resume(s.Agent)
		}
		if c.ex.Stream {
			s.serveStream(ctx, w, r, c)
		} else {
			s.serveUnary(ctx, w, r, c)
		}
	}
}

// detach answers the caller at once with the exchange's Detach answer,
// whole (its Content-Length, flushed) and closing the connection (the
// caller's next request goes on another), and returns what the call goes
// on with, on the request's goroutine: a writer writing to nothing and
// the request with a context that never ends (its values kept), so the
// caller's leaving is no failure of the call. The call keeps its slot and
// its place in flight until it ends, and its log line says what the
// caller was answered (its status and bytes) and how the call ended.
func (s *Server) detach(w http.ResponseWriter, r *http.Request, c *call) (http.ResponseWriter, *http.Request) {
	a := c.ex.Detach()
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.Body)))
	w.Header().Set("Connection", "close")
	w.WriteHeader(a.Status)
	w.Write(a.Body)
	http.NewResponseController(w).Flush()
	c.ack = a
	return &detached{}, r.WithContext(context.WithoutCancel(r.Context()))
}

// detached is the ResponseWriter of a call that goes on without its
// caller (core.Exchange.Detach): what its writers write goes nowhere.
type detached struct{ h http.Header }

func (d *detached) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}

func (*detached) Write(p []byte) (int, error) { return len(p), nil }
func (*detached) WriteHeader(int)             {}
func (*detached) Flush()                      {}

// answer writes the reply a Door gave without calling the agent.
func (s *Server) answer(w http.ResponseWriter, c *call, a *core.Answer) {
	c.status, c.outcome, c.bytes, c.reason = a.Status, a.Outcome, int64(len(a.Body)), a.Reason
	if a.Err != nil {
		c.err = a.Err
	}
	h := w.Header()
	for k, v := range a.Header {
		h[k] = v
	}
	w.WriteHeader(a.Status)
	w.Write(a.Body)
}

// answerStream goes on writing an answer the door streams itself
// (Answer.Stream), its writes bounded as a call's are, but by no total
// time: it ends when its stream or the call's context does.
func (s *Server) answerStream(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call, a *core.Answer) {
	c.free() // the slot a large body waited for: the stream holds none
	c.boundWrites(ctx, w, r, 0)
	defer c.endWrites()
	c.stream = true
	records, n := a.Stream(ctx, w)
	c.records, c.bytes = records, c.bytes+n
	if ctx.Err() != nil {
		err := explain(ctx, r.Context(), ctx.Err())
		c.failed(core.FailureOf(err), err)
	}
}

// writeGrace is how long a write to the caller may still take once the
// call's total time has run out or its context has ended: time for the
// final line to reach a caller that reads.
const writeGrace = time.Second

// boundWrites bounds every write of the call's reply, which begin freed
// from the server's write timeout: a caller that stops reading would
// otherwise hold the call, its goroutine and its concurrency slot for as
// long as its connection stays open. A write ends with an error
// writeGrace after the call's total time (none if total is 0) or
// after ctx ends (EndCalls, the caller leaving), whichever is sooner.
// endWrites leaves writeGrace for what net/http writes after the
// handler (the stream's last chunk) when the server has a write timeout,
// which it sets afresh for the connection's next request; without one,
// it clears the deadline. The state lives in the call (c.writes), told
// of ctx's end by the call's End when ctx is the call's context (no
// allocation), else by a context.AfterFunc.
func (c *call) boundWrites(ctx context.Context, w http.ResponseWriter, r *http.Request, total time.Duration) {
	b := &c.writes
	b.rc, b.r = *http.NewResponseController(w), r
	if total > 0 {
		b.deadline = c.start.Add(total + writeGrace)
	}
	b.set(b.deadline)
	if c.end.Shares(ctx) {
		b.end = &c.end
		c.end.HookCall(b)
	} else {
		b.stopAfter = context.AfterFunc(ctx, b.CallEnded)
	}
}

// writeBound is the bound on one call's writes (boundWrites).
type writeBound struct {
	rc        http.ResponseController
	r         *http.Request
	end       *core.End   // the call's, when it tells CallEnded
	stopAfter func() bool // else the AfterFunc's

	mu       sync.Mutex // guards deadline and stopped
	deadline time.Time
	stopped  bool
}

func (b *writeBound) set(d time.Time) {
	b.deadline = d
	b.rc.SetWriteDeadline(d)
}

// CallEnded leaves the writes writeGrace from now, at most: the call's
// context ended.
func (b *writeBound) CallEnded() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := time.Now().Add(writeGrace); !b.stopped && (b.deadline.IsZero() || d.Before(b.deadline)) {
		b.set(d)
	}
}

// endWrites ends the call's bound on its writes (boundWrites).
func (c *call) endWrites() {
	b := &c.writes
	if b.end != nil {
		b.end.UnhookCall()
	} else {
		b.stopAfter()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if srv, _ := b.r.Context().Value(http.ServerContextKey).(*http.Server); srv != nil && srv.WriteTimeout > 0 {
		if d := time.Now().Add(writeGrace); b.deadline.IsZero() || d.Before(b.deadline) {
			b.set(d)
		}
		return
	}
	b.set(time.Time{})
}

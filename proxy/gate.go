package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// callContext is the context of one call: it ends when the caller leaves
// or when EndCalls ends every call.
func (s *Server) callContext(r *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(s.calls, func() { cancel(context.Cause(s.calls)) })
	return ctx, func() { stop(); cancel(nil) }
}

// Concurrency is the number of calls served at once: limits.concurrency,
// or when that is 0, 2 × GOMAXPROCS + 1 (GOMAXPROCS is the container's
// CPU limit, at least 2): the platform's own containerConcurrency for its
// CPU count (9 on its default 4 CPUs). Every call in a slot may hold its
// request body in memory, so the slots bound that memory.
func Concurrency(cfg *config.Config) int {
	if n := cfg.Limits.Concurrency; n > 0 {
		return n
	}
	return 2*runtime.GOMAXPROCS(0) + 1
}

// acquire takes a concurrency slot, waiting in the bounded queue for one
// when they are all taken.
func (s *Server) acquire(ctx context.Context) (func(), error) {
	release := func() { <-s.slots }
	select {
	case s.slots <- struct{}{}:
		return release, nil
	default:
	}
	lim := s.Config.Limits
	if s.queued.Add(1) > int64(lim.Queue) {
		s.queued.Add(-1)
		return nil, fmt.Errorf("%w: %d calls in flight and %d waiting", core.ErrBusy, lim.Concurrency, lim.Queue)
	}
	defer s.queued.Add(-1)
	t := time.NewTimer(lim.QueueTimeout)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-t.C:
		return nil, fmt.Errorf("%w: no slot freed within %s", core.ErrBusy, lim.QueueTimeout)
	}
}

// errLoop is a call that came from a sidecar's request to its agent: the
// agent is a sidecar, this one most likely, and the call would go round.
var errLoop = &core.RequestError{Status: http.StatusLoopDetected, Msg: "loop detected: this call came from a sidecar (it carries " +
	core.HopHeader + "); is upstream.url the sidecar's own address?"}

// smallBody is the largest request body read before its call waits for a
// concurrency slot. Reading it lets net/http notice a queued caller who
// leaves; a larger body (or one of unknown length) is read only once the
// call has its slot, so the bodies in memory are bounded by the slots, not
// by the callers, and a caller turned away gets its 503 before sending it.
const smallBody = 64 << 10

// begin takes a concurrency slot, reads the request and has the Door
// decode it, and waits for the agent to be ready. It returns what the
// agent call needs: the call, and its context (the exchange's, derived
// from ctx). A *core.Answer is a request the Door answered itself: it
// takes no slot, or frees the one its large body waited for.
//
// Memory: a call in a slot holds its body once: read at its exact length
// when Content-Length gives it (else in growing steps, up to about twice
// it while reading), decoded in place by the Door (the platform's: a JSON
// string holding the envelope too, its input compacted in place), the
// input indexed without copying values (core.ParseInput). Building the
// agent's request may copy the input once more. So request bodies take at
// most Concurrency × request_bytes × 4, plus smallBody per queued call.
func (s *Server) begin(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call) (context.Context, core.Call, error) {
	if r.Header.Get(core.HopHeader) != "" {
		return ctx, core.Call{}, errLoop
	}
	if s.draining.Load() {
		return ctx, core.Call{}, ErrShuttingDown
	}
	limit := s.Config.Limits.RequestBytes
	if r.ContentLength > limit {
		return ctx, core.Call{}, &http.MaxBytesError{Limit: limit} // refused unread
	}
	// A small body is read and checked before the call queues: a bad
	// request never takes a slot. A large one waits for its slot unread.
	var call core.Call
	var err error
	early := r.ContentLength >= 0 && r.ContentLength <= smallBody
	if early {
		if call, err = s.request(w, r, c); err != nil {
			return ctx, core.Call{}, err
		}
		ctx = c.ex.Context(ctx)
	}
	release, err := s.acquire(ctx)
	if err != nil {
		return ctx, core.Call{}, err
	}
	c.release = release
	if !early {
		if call, err = s.request(w, r, c); err != nil {
			return ctx, core.Call{}, err
		}
		ctx = c.ex.Context(ctx)
	}
	// Agents think for minutes: the server's read and write deadlines
	// protect reading the request, not the call (DESIGN.md lesson 3).
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	if err := s.waitReady(ctx); err != nil {
		return ctx, core.Call{}, err
	}
	return ctx, call, nil
}

// request reads the request body and has the Door decode it into the call
// for the agent (Open, for an Opener, whose exchange then answers the
// call), its input indexed when the method reads fields.
func (s *Server) request(w http.ResponseWriter, r *http.Request, c *call) (core.Call, error) {
	body, err := readBody(w, r, s.Config.Limits.RequestBytes)
	if err != nil {
		return core.Call{}, err
	}
	var call core.Call
	if o, ok := c.door.(Opener); ok {
		var ex core.Exchange
		call, ex, err = o.Open(s.Config, c.route, c.stream, r, body)
		if ex != nil {
			c.ex = ex
		}
	} else {
		call, err = c.door.Call(s.Config, c.route, c.stream, r, body)
	}
	c.method = call.Name
	if err != nil {
		return core.Call{}, err
	}
	c.entry = call.Method.Name
	if call.Input.Fields == nil && core.ReadsFields(call.Method) {
		if call.Input, err = core.ParseInput(call.Input.Raw); err != nil {
			return core.Call{}, &core.RequestError{Msg: err.Error()}
		}
	}
	call.Notes = &c.notes
	return call, nil
}

// readBody reads the request body, up to limit bytes: into a buffer of
// its exact size when the request gives its Content-Length.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	var b []byte
	var err error
	if n := r.ContentLength; n >= 0 && n <= limit {
		b = make([]byte, n)
		_, err = io.ReadFull(body, b)
	} else {
		b, err = io.ReadAll(body)
	}
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, err
		}
		return nil, &core.RequestError{Msg: "reading request body: " + err.Error()}
	}
	return b, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	if s.Prober == nil {
		return nil
	}
	if ok, _ := s.Prober.Status(); ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.ReadyWait)
	defer cancel()
	if err := s.Prober.Wait(ctx); err != nil {
		if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
			return cause
		}
		_, detail := s.Prober.Status()
		return fmt.Errorf("%w (%s, waited %s)", core.ErrNotReady, detail, s.ReadyWait)
	}
	return nil
}

// handle is the handler of the calls on one of the Door's routes, with
// what every call shares: it is counted in flight, gets its context, has
// its request read and checked, is served unary or streaming, and ends
// with one log line.
func (s *Server) handle(door Door, protocol, route string, stream bool) http.HandlerFunc {
	serve := s.serveUnary
	if stream {
		serve = s.serveStream
	}
	var ex core.Exchange = doorExchange{door} // an Opener's calls get their own
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{start: time.Now(), door: door, ex: ex, protocol: protocol, route: route, stream: stream}
		defer s.log(r, c)
		defer c.done()
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		ctx, done := s.callContext(r)
		defer done()
		ctx, call, err := s.begin(ctx, w, r, c)
		var answer *core.Answer
		if errors.As(err, &answer) {
			s.answer(w, c, answer)
			return
		}
		if err != nil {
			s.fail(w, r, c, err)
			return
		}
		defer boundWrites(ctx, w, r, c.start, call.Method.Timeouts.Total)()
		serve(ctx, w, r, c, call)
	}
}

// answer writes the reply a Door gave without calling the agent.
func (s *Server) answer(w http.ResponseWriter, c *call, a *core.Answer) {
	c.status, c.outcome, c.bytes = a.Status, a.Outcome, int64(len(a.Body))
	h := w.Header()
	for k, v := range a.Header {
		h[k] = v
	}
	w.WriteHeader(a.Status)
	w.Write(a.Body)
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
// after ctx ends (EndCalls, the caller leaving), whichever is sooner. The
// returned stop leaves writeGrace for what net/http writes after the
// handler (the stream's last chunk) when the server has a write timeout,
// which it sets afresh for the connection's next request; without one,
// it clears the deadline.
func boundWrites(ctx context.Context, w http.ResponseWriter, r *http.Request, start time.Time, total time.Duration) (stop func()) {
	rc := http.NewResponseController(w)
	var deadline time.Time
	if total > 0 {
		deadline = start.Add(total + writeGrace)
	}
	var mu sync.Mutex // guards deadline and stopped
	stopped := false
	set := func(d time.Time) {
		deadline = d
		rc.SetWriteDeadline(d)
	}
	set(deadline)
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if d := time.Now().Add(writeGrace); !stopped && (deadline.IsZero() || d.Before(deadline)) {
			set(d)
		}
	})
	return func() {
		stopAfter()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server); srv != nil && srv.WriteTimeout > 0 {
			if d := time.Now().Add(writeGrace); deadline.IsZero() || d.Before(deadline) {
				set(d)
			}
			return
		}
		set(time.Time{})
	}
}

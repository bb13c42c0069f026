package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// callContext is the context of call c, derived once (core.End): it ends
// when the caller leaves, when EndCalls ends every call, or when a clock
// of the agent's request runs out; endContext ends it with the call. The
// call is on the server's list of calls in flight meanwhile, which
// EndCalls ends: a list the call links itself into, not a context of the
// server's it registers with, so this costs no allocation.
func (s *Server) callContext(r *http.Request, c *call) context.Context {
	ctx := c.end.Begin(r.Context())
	s.liveMu.Lock()
	ended := s.ended
	if ended == nil {
		c.next = s.live
		if s.live != nil {
			s.live.prev = c
		}
		s.live = c
	}
	s.liveMu.Unlock()
	if ended != nil {
		c.end.EndCall(ended)
	}
	return ctx
}

// endContext ends the context of call c, which leaves the list of calls
// in flight.
func (s *Server) endContext(c *call) {
	s.liveMu.Lock()
	if c.prev != nil {
		c.prev.next = c.next
	} else if s.live == c {
		s.live = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
	s.liveMu.Unlock()
	c.end.Finish()
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
// open it, and waits for the agent to be ready. It returns the call's
// context, the exchange's (derived from ctx); the exchange is c.ex. A
// *core.Answer is a request the Door answered itself: it takes no slot,
// or frees the one its large body waited for.
//
// Memory: a call in a slot holds its body once: read at its exact length
// when Content-Length gives it (else in growing steps, up to about twice
// it while reading), decoded in place by the Door (the platform's: a JSON
// string holding the envelope too, its input compacted in place), the
// input indexed without copying values (core.ParseInput). Building the
// agent's request may copy the input once more. So request bodies take at
// most Concurrency × request_bytes × 4, plus smallBody per queued call,
// plus, for each caller still sending a body of at most smallBody, up to
// about twice what it sent (readLength): never what it only announced.
func (s *Server) begin(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call) (context.Context, error) {
	if r.Header.Get(core.HopHeader) != "" {
		return ctx, errLoop
	}
	if s.draining.Load() {
		return ctx, ErrShuttingDown
	}
	limit := s.Config.Limits.RequestBytes
	if r.ContentLength > limit {
		return ctx, &http.MaxBytesError{Limit: limit} // refused unread
	}
	// A small body is read and checked before the call queues: a bad
	// request never takes a slot. A large one waits for its slot unread.
	early := r.ContentLength >= 0 && r.ContentLength <= smallBody
	if early {
		if err := s.open(w, r, c); err != nil {
			return ctx, err
		}
		ctx = c.context(ctx)
	}
	err := s.slots.acquire(ctx, s.Config.Limits.QueueTimeout)
	c.notes.Phases.Queued = time.Now()
	if err != nil {
		return ctx, err
	}
	c.slots = s.slots
	rc := http.NewResponseController(w)
	if !early {
		// Holding a slot, the body has a deadline of its own: a caller
		// that sends it slowly gets 408 and frees the slot, rather than
		// hold it as long as the server's read deadline (which includes
		// the longest waits for a slot and for the agent). A Config not
		// parsed (no body_timeout) keeps the server's.
		if d := s.Config.Limits.BodyTimeout; d > 0 {
			rc.SetReadDeadline(time.Now().Add(d))
		}
		if err := s.open(w, r, c); err != nil {
			if late, ok := err.(*lateBody); ok {
				late.Msg = fmt.Sprintf("request body not received within limits.body_timeout (%s)", s.Config.Limits.BodyTimeout)
			}
			return ctx, err
		}
		ctx = c.context(ctx)
	}
	// Agents think for minutes: the server's read and write deadlines
	// protect reading the request, not the call (DESIGN.md lesson 3).
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	if err := s.waitReady(ctx); err != nil {
		return ctx, err
	}
	return ctx, nil
}

// open reads the request body and has the Door open it into the call's
// exchange, c.ex: the call for the agent, its input indexed when the
// method reads fields, and the writers of its answer.
func (s *Server) open(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := readBody(w, r, s.Config.Limits.RequestBytes)
	if err != nil {
		return err
	}
	if c.span != nil {
		// The door's own round trips (the state store's) are the call's
		// span's children.
		r = r.WithContext(trace.ContextWithSpan(r.Context(), c.span))
	}
	ex, err := c.door.Open(s.Config, c.route, r, body)
	c.method = ex.Call.Name
	if ex.Writer != nil {
		c.ex.Writer = ex.Writer // it answers the failure too
	}
	if err != nil {
		return err
	}
	c.ex, c.stream = ex, ex.Stream
	c.entry = ex.Call.Method.Name
	if sc := ex.Call.Method.Scopes; len(sc) > 0 && s.Auth != nil && s.Config.Auth.Protects(c.protocol) {
		if caller := auth.CallerOf(r.Context()); caller == nil || !caller.HasScopes(sc) {
			return s.insufficientScope(w, r, c.door, ex.Call.Name, sc)
		}
	}
	if ex.Call.Input.Fields == nil && core.ReadsFields(ex.Call.Method) {
		if c.ex.Call.Input, err = core.ParseInput(ex.Call.Input.Raw); err != nil {
			return &core.RequestError{Msg: err.Error()}
		}
	}
	c.ex.Call.Notes = &c.notes
	return nil
}

// lateBody is a request body that did not arrive within its deadline,
// the server's read deadline or, once its call holds a slot,
// limits.body_timeout (begin says so): 408. net/http ends the request's
// context when a read fails, but the caller has not left: it is told
// (fail).
type lateBody struct{ core.RequestError }

func (e *lateBody) Unwrap() error { return &e.RequestError }

// readBody reads the request body, up to limit bytes: into a buffer of
// its exact size when the request gives its Content-Length.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	var b []byte
	var err error
	if n := r.ContentLength; n >= 0 && n <= limit {
		// net/http's body ends at Content-Length: within the limit. A
		// body of at most smallBody is read before its call queues, by
		// as many callers as connect: its buffer grows as its bytes
		// arrive. A longer one is read holding a slot, which bounds it.
		first := n
		if n <= smallBody {
			first = min(n, firstStep)
		}
		b, err = readLength(r.Body, n, first)
	} else {
		b, err = io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	}
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, err
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &lateBody{core.RequestError{Status: http.StatusRequestTimeout, Msg: "request body not received in time"}}
		}
		return nil, &core.RequestError{Msg: "reading request body: " + err.Error()}
	}
	// Read whole: closed, net/http has nothing left of it to discard
	// before the reply.
	r.Body.Close()
	return b, nil
}

// firstStep is the first buffer of a body read before its call queues,
// when longer: a request's headers and its connection take about 16 KiB.
const firstStep = 4 << 10

// readLength reads a body of length n into a buffer of first bytes,
// doubled whenever it is full, up to n: a length only announced costs
// memory as its bytes arrive, at most about twice what came. The body is
// returned at its exact length.
func readLength(body io.Reader, n, first int64) ([]byte, error) {
	b := make([]byte, first)
	read := 0
	for {
		k, err := io.ReadFull(body, b[read:])
		read += k
		if err != nil {
			return nil, err
		}
		if int64(read) == n {
			return b, nil
		}
		grown := make([]byte, min(n, 2*int64(len(b))))
		copy(grown, b)
		b = grown
	}
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

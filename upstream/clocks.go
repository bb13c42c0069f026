package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// clocks are the connect, first-byte, idle and total limits of one call.
// Whichever runs out first cancels the call's context with a
// *core.TimeoutError as the cause.
//
// One timer serves them all: it is set for the sooner of the current
// phase's limit and the total one, and moved on at each phase (connect,
// then first byte once a connection is had, then idle once the reply head
// is in). Waiting out an agent's Retry-After is a phase of its own that
// only the total limit bounds; the retry then starts from connect again.
// A read of the reply only notes the time; when the timer fires early
// because reads came in meanwhile, it is set again for the rest.
type clocks struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	// end, when set, is the call's End whose context ctx is (init): a
	// clock that runs out ends it (the agent's side), and no context of
	// the clocks' own is derived.
	end   *core.End
	t     config.Timeouts
	start time.Time // monotonic base of the call

	mu      sync.Mutex // guards timer, armed, phase, limit and stopped
	timer   *clockTimer
	armed   bool // timer is set to run (not stopped since, nor run)
	phase   string
	limit   time.Duration
	stopped bool
	// counting is when the phase's limit began counting, from start: the
	// phase's beginning, moved on by every read in the idle phase.
	counting atomic.Int64
	// reading is set while a read of the reply waits on the agent. The
	// idle limit counts only then: between reads the sidecar is writing to
	// the caller, and a slow caller is not the agent's silence.
	reading atomic.Bool

	connected atomic.Bool
	lastDial  atomic.Pointer[error]
	// connectedAt and headAt are when, from start, a connection was had
	// (the last attempt's) and the reply head arrived; 0: not yet. mu
	// guards them.
	connectedAt, headAt time.Duration
}

func newClocks(parent context.Context, t config.Timeouts) *clocks {
	c := new(clocks)
	c.init(parent, t)
	return c
}

// init starts the zero clocks c, in the connect phase.
func (c *clocks) init(parent context.Context, t config.Timeouts) {
	if e := core.EndOf(parent); e != nil && e.Shares(parent) {
		c.ctx, c.end = parent, e
	} else {
		c.ctx, c.cancel = context.WithCancelCause(parent)
	}
	c.t, c.start = t, time.Now()
	c.enter("connect", t.Connect)
}

// enter starts phase, limited to d (none if d <= 0).
func (c *clocks) enter(phase string, d time.Duration) {
	now := time.Since(c.start)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.phase, c.limit = phase, d
	switch phase {
	case "first_byte":
		c.connectedAt = now
	case "idle":
		c.headAt = now
	}
	c.counting.Store(int64(now))
	c.arm(now)
}

// arm sets the timer for the sooner of the phase's end and the call's.
// The caller holds mu.
func (c *clocks) arm(now time.Duration) {
	next := time.Duration(-1)
	if c.limit > 0 {
		next = time.Duration(c.counting.Load()) + c.limit
	}
	if total := c.t.Total; total > 0 && (next < 0 || total < next) {
		next = total
	}
	switch {
	case next < 0:
		if c.timer != nil && c.timer.t.Stop() {
			c.armed = false
		}
	case c.timer == nil:
		c.timer, c.armed = startClockTimer(c, next-now), true
	default:
		c.timer.t.Reset(next - now)
		c.armed = true
	}
}

// clockTimer is the timer of one call's clocks at a time. Timers are
// pooled: stop gives one back once it can no longer run for the clocks
// it served (its pending run cancelled, or its last run over). A run
// that reached the next clocks all the same would find no limit run out
// and only set the timer again (fire), as an early run does.
type clockTimer struct {
	t     *time.Timer
	owner atomic.Pointer[clocks]
}

var clockTimers sync.Pool

func (ct *clockTimer) fire() {
	if c := ct.owner.Load(); c != nil {
		c.fire()
	}
}

// startClockTimer is a timer running c.fire after d: a pooled one, or new.
func startClockTimer(c *clocks, d time.Duration) *clockTimer {
	if ct, ok := clockTimers.Get().(*clockTimer); ok {
		ct.owner.Store(c)
		ct.t.Reset(d)
		return ct
	}
	ct := new(clockTimer)
	ct.owner.Store(c)
	ct.t = time.AfterFunc(d, ct.fire)
	return ct
}

// fire runs when the timer does: it cancels the call with the clock that
// ran out, or sets the timer again when reads moved the idle limit on.
func (c *clocks) fire() {
	now := time.Since(c.start)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = false
	if c.stopped {
		return
	}
	var te *core.TimeoutError
	switch {
	case c.t.Total > 0 && now >= c.t.Total:
		te = &core.TimeoutError{Phase: "total", After: c.t.Total.String()}
	case c.limit > 0 && now >= time.Duration(c.counting.Load())+c.limit && c.phase == "idle" && !c.reading.Load():
		// Not waiting on the agent: the next read starts the count again.
		c.counting.Store(int64(now))
		c.arm(now)
		return
	case c.limit > 0 && now >= time.Duration(c.counting.Load())+c.limit:
		te = &core.TimeoutError{Phase: c.phase, After: c.limit.String()}
	default:
		c.arm(now)
		return
	}
	c.stopped = true
	if c.end != nil {
		c.end.EndAgent(te)
		return
	}
	c.cancel(te)
}

// dialed notes the end of one dial; a failed one explains a connect
// timeout. A dial the clocks cut (the connect clock ran out while it
// waited) explains nothing: kept, it would make the timeout's
// DialError read as a cancellation, which the server would put down
// to the call's context, and answer 504 where the table says 502.
func (c *clocks) dialed(err error) {
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		c.lastDial.Store(&err)
	}
}

// gotConn ends the connect phase, once: a retry's connection does not
// restart the first-byte clock.
func (c *clocks) gotConn() {
	if !c.connected.Swap(true) {
		c.enter("first_byte", c.t.FirstByte)
	}
}

// waitRetry stops the phase's clock while the call waits to retry an
// agent's 429 or 503: only the total limit runs.
func (c *clocks) waitRetry() { c.enter("retry_wait", 0) }

// retry starts a retried attempt's clocks: connect, then first byte once
// it has a connection.
func (c *clocks) retry() {
	c.connected.Store(false)
	c.enter("connect", c.t.Connect)
}

// headersArrived starts the idle phase.
func (c *clocks) headersArrived() { c.enter("idle", c.t.Idle) }

// readStarted starts the idle limit: the sidecar waits on the agent.
func (c *clocks) readStarted() {
	c.counting.Store(int64(time.Since(c.start)))
	c.reading.Store(true)
}

// readEnded stops the idle limit until the next read.
func (c *clocks) readEnded() {
	c.reading.Store(false)
	c.counting.Store(int64(time.Since(c.start)))
}

// note writes when the call had its connection and the reply head
// arrived into p, those it reached.
func (c *clocks) note(p *core.Phases) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.connectedAt > 0 {
		p.Connected = c.start.Add(c.connectedAt)
	}
	if c.headAt > 0 {
		p.FirstByte = c.start.Add(c.headAt)
	}
}

func (c *clocks) stop() {
	c.mu.Lock()
	c.stopped = true
	if ct := c.timer; ct != nil {
		if ct.t.Stop() || !c.armed {
			// It will not run again for c: it may serve other clocks.
			ct.owner.Store(nil)
			clockTimers.Put(ct)
		}
		c.timer = nil
	}
	c.mu.Unlock()
	c.release()
}

// release ends the clocks' own context, if they have one: the call's
// (c.end) goes on, and the transport's hook on it was stopped with the
// agent's connection.
func (c *clocks) release() {
	if c.end == nil {
		c.cancel(context.Canceled)
	}
}

// explain labels err with its cause: a clock that ran out, or a dial that
// never succeeded. The caller's own cancellation stays context.Canceled.
func (c *clocks) explain(err error, address string) error {
	cause := context.Cause(c.ctx)
	var te *core.TimeoutError
	if errors.As(cause, &te) {
		if te.Phase == "connect" {
			last := error(te)
			if p := c.lastDial.Load(); p != nil {
				last = *p
			}
			return &core.DialError{Address: address, Err: fmt.Errorf("%w (retried for %s)", last, te.After)}
		}
		return te
	}
	if c.ctx.Err() != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	if !c.connected.Load() && neverSent(err) {
		return &core.DialError{Address: address, Err: unwrapURL(err)}
	}
	// The agent's internal URL stays out of what callers see.
	return unwrapURL(err)
}

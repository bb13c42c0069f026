package upstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// timedOut waits up to within for the clocks' context to end and returns
// the phase that ended it ("" if none did, "cancelled" if not a clock).
func timedOut(c *clocks, within time.Duration) string {
	if c.ctx.Err() == nil {
		select {
		case <-c.ctx.Done():
		case <-time.After(within):
			return ""
		}
	}
	var te *core.TimeoutError
	if errors.As(context.Cause(c.ctx), &te) {
		return te.Phase
	}
	return "cancelled"
}

// TestClocksIdleRestartedByReads: reads closer together than the idle
// limit keep a stream going past it; the limit runs from the last read.
func TestClocksIdleRestartedByReads(t *testing.T) {
	c := newClocks(context.Background(), config.Timeouts{Idle: 300 * time.Millisecond})
	defer c.stop()
	c.gotConn()
	c.headersArrived()
	c.readStarted()
	var last time.Time
	for range 20 { // 600 ms in all, twice the limit
		time.Sleep(30 * time.Millisecond)
		c.readEnded()     // data came in
		last = time.Now() // before the clock restarts: a lower bound however late this goroutine runs
		c.readStarted()
	}
	if p := timedOut(c, 0); p != "" {
		t.Fatalf("ended by %q while reads kept coming", p)
	}
	if p := timedOut(c, 2*time.Second); p != "idle" {
		t.Fatalf("ended by %q, want idle", p)
	}
	if d := time.Since(last); d < 300*time.Millisecond {
		t.Errorf("idle ended %v after the last read, before its 300ms", d)
	}
}

// TestClocksIdleOnlyWhileReading: the idle limit counts only while a read
// waits on the agent; time between reads (the sidecar writing to a slow
// caller) is not the agent's silence, and the next read counts afresh.
func TestClocksIdleOnlyWhileReading(t *testing.T) {
	c := newClocks(context.Background(), config.Timeouts{Idle: 200 * time.Millisecond})
	defer c.stop()
	c.gotConn()
	c.headersArrived()
	c.readStarted()
	c.readEnded()
	if p := timedOut(c, 500*time.Millisecond); p != "" {
		t.Fatalf("ended by %q between reads, while the sidecar was not waiting on the agent", p)
	}
	start := time.Now()
	c.readStarted()
	if p := timedOut(c, 2*time.Second); p != "idle" {
		t.Fatalf("ended by %q, want idle", p)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("idle ended %v after the read began, before its 200ms", d)
	}
}

// TestClocksTotalBeatsPhases: the total limit ends a call that keeps
// reading, and one still connecting.
func TestClocksTotalBeatsPhases(t *testing.T) {
	c := newClocks(context.Background(), config.Timeouts{Total: 150 * time.Millisecond, Idle: time.Second})
	defer c.stop()
	c.gotConn()
	c.headersArrived()
	c.readStarted()
	for i := 0; i < 50 && timedOut(c, 0) == ""; i++ {
		time.Sleep(20 * time.Millisecond)
		c.readEnded()
		c.readStarted()
	}
	if p := timedOut(c, time.Second); p != "total" {
		t.Errorf("a call reading for longer than its total: ended by %q, want total", p)
	}

	c2 := newClocks(context.Background(), config.Timeouts{Total: 100 * time.Millisecond, Connect: time.Second})
	defer c2.stop()
	if p := timedOut(c2, 2*time.Second); p != "total" {
		t.Errorf("still connecting after the total: ended by %q, want total", p)
	}
}

// TestClocksPhases: the connect limit stops counting once a connection is
// had, and the first-byte limit starts then, once only.
func TestClocksPhases(t *testing.T) {
	c := newClocks(context.Background(), config.Timeouts{Connect: 500 * time.Millisecond, FirstByte: 250 * time.Millisecond})
	defer c.stop()
	time.Sleep(20 * time.Millisecond)
	start := time.Now() // before the clock starts: a lower bound that holds however late this goroutine runs
	c.gotConn()
	if p := timedOut(c, 150*time.Millisecond); p != "" {
		t.Fatalf("ended by %q after the connection was had, within the first-byte limit", p)
	}
	c.gotConn() // a retry's connection does not restart the clock
	if p := timedOut(c, 2*time.Second); p != "first_byte" {
		t.Fatalf("ended by %q, want first_byte", p)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("first_byte ended %v after the connection, want about 250ms", d)
	}

	c2 := newClocks(context.Background(), config.Timeouts{Connect: 50 * time.Millisecond, FirstByte: time.Second})
	defer c2.stop()
	dialErr := errors.New("connection refused")
	c2.dialed(dialErr)
	if p := timedOut(c2, 2*time.Second); p != "connect" {
		t.Fatalf("never connected: ended by %q, want connect", p)
	}
	var de *core.DialError
	if err := c2.explain(errors.New("x"), "http://agent"); !errors.As(err, &de) || !errors.Is(err, dialErr) {
		t.Errorf("explain after a connect timeout = %v, want a core.DialError with the last dial's error", err)
	}
}

// TestClocksRetryWait: waiting out a Retry-After stops the first-byte
// clock (the total one goes on); the retry then gets its own connect and
// first-byte limits.
func TestClocksRetryWait(t *testing.T) {
	c := newClocks(context.Background(), config.Timeouts{Connect: time.Second, FirstByte: 100 * time.Millisecond})
	defer c.stop()
	c.gotConn()
	c.waitRetry()
	if p := timedOut(c, 300*time.Millisecond); p != "" {
		t.Fatalf("ended by %q while waiting to retry", p)
	}
	c.retry()
	if p := timedOut(c, 300*time.Millisecond); p != "" {
		t.Fatalf("ended by %q while the retry connects", p)
	}
	start := time.Now() // before the clock starts, as in TestClocksPhases
	c.gotConn()
	if p := timedOut(c, 2*time.Second); p != "first_byte" {
		t.Fatalf("retry ended by %q, want first_byte", p)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("the retry's first_byte ended %v after its connection, before its 100ms", d)
	}

	c2 := newClocks(context.Background(), config.Timeouts{FirstByte: time.Second, Total: 100 * time.Millisecond})
	defer c2.stop()
	c2.gotConn()
	c2.waitRetry()
	if p := timedOut(c2, 2*time.Second); p != "total" {
		t.Errorf("waiting to retry past the total: ended by %q, want total", p)
	}
}

// TestClocksStop: a call that ends in time is cancelled, not timed out,
// and its timer no longer fires.
func TestClocksStop(t *testing.T) {
	c := newClocks(context.Background(), config.Timeouts{Total: 50 * time.Millisecond, Connect: 50 * time.Millisecond})
	c.gotConn()
	c.headersArrived()
	c.stop()
	time.Sleep(100 * time.Millisecond)
	if p := timedOut(c, 0); p != "cancelled" {
		t.Errorf("after stop: %q, want cancelled", p)
	}
	c.headersArrived() // late phase changes after stop are ignored
}

// TestClocksTimersServeOneCall: a call's clocks reuse the timer of a call
// that ended (pooled), and it runs for them alone: each of a row of
// calls, one after another, still times out on its own clock, and one
// call stopping never ends the next.
func TestClocksTimersServeOneCall(t *testing.T) {
	for i := range 20 {
		// Ended before its clock ran out: its timer goes back to the pool.
		done := newClocks(context.Background(), config.Timeouts{Connect: time.Hour, Total: time.Hour})
		done.stop()
		c := newClocks(context.Background(), config.Timeouts{Connect: 20 * time.Millisecond})
		if p := timedOut(c, 10*time.Second); p != "connect" {
			t.Fatalf("call %d: ended by %q, want connect (its own timer)", i, p)
		}
		c.stop()
		next := newClocks(context.Background(), config.Timeouts{Connect: time.Hour})
		c.stop() // again: the timer c had must not be given back twice
		if p := timedOut(next, 50*time.Millisecond); p != "" {
			t.Fatalf("call %d: the next call ended by %q, want running", i, p)
		}
		next.stop()
	}
}

// TestConnectTimeoutCutsADial: when the connect clock runs out while a
// dial waits (a loaded machine, a listener whose backlog is full), the
// call is the agent unreachable, 502, naming the last dial that failed:
// never a cancellation, which the server would put down to the call's
// context and answer as the clock's 504.
func TestConnectTimeoutCutsADial(t *testing.T) {
	c := newClocks(context.Background(), config.Timeouts{Connect: 50 * time.Millisecond})
	defer c.stop()
	var d net.Dialer
	refusedCtx, cancel := context.WithCancel(context.Background())
	cancel()
	_, cut := d.DialContext(refusedCtx, "tcp", "127.0.0.1:1") // a dial the clock cut
	if !errors.Is(cut, context.Canceled) {
		t.Fatalf("a cut dial = %v, want it to match context.Canceled", cut)
	}
	refused := errors.New("connect: connection refused")
	c.dialed(refused)
	c.dialed(cut)
	if p := timedOut(c, 5*time.Second); p != "connect" {
		t.Fatalf("ended by %q, want connect", p)
	}
	err := c.explain(cut, "http://127.0.0.1:1")
	var de *core.DialError
	if !errors.As(err, &de) || errors.Is(err, context.Canceled) || !errors.Is(err, refused) {
		t.Fatalf("explain = %v, want a DialError naming the refused dial, no cancellation", err)
	}
	if f := core.FailureOf(err); f.Status != http.StatusBadGateway || f.Reason != "AGENT_UNREACHABLE" {
		t.Errorf("FailureOf(%v) = %d %s, want 502 AGENT_UNREACHABLE", err, f.Status, f.Reason)
	}
}

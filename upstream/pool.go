package upstream

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The transport's keep-alive pool: a last-in first-out list of idle
// connections, each checked before reuse, and dropped after idleTimeout
// unused or sooner when the agent's own keep-alive is known to be shorter
// (learn).

// get takes the most recently used live connection from the pool, or
// dials a new one.
func (t *transport) get(ctx context.Context) (c *conn, reused bool, err error) {
	var clk *clocks // nil for calls outside Send, such as the prober's
	if ci, ok := ctx.Value(callKey{}).(*callInfo); ok {
		clk = ci.clk
	}
	for {
		t.mu.Lock()
		n := len(t.idle)
		if n == 0 {
			t.mu.Unlock()
			break
		}
		c = t.idle[n-1]
		t.idle[n-1] = nil
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		c.timer.Stop()
		live, closed := c.alive()
		if live {
			if clk != nil {
				clk.gotConn()
			}
			return c, true, nil
		}
		if closed {
			// The agent closed it while it sat in the pool: its
			// keep-alive is at most that long.
			t.learn(time.Since(c.since))
		}
		c.nc.Close()
	}
	nc, err := t.dial(ctx)
	if clk != nil {
		clk.dialed(err)
	}
	if err != nil {
		return nil, false, err
	}
	c = newConn(t, nc)
	if clk != nil {
		clk.gotConn()
	}
	return c, false, nil
}

// alive reports whether the agent has neither closed the pooled
// connection nor sent anything unasked on it, with one non-blocking peek.
// closed says it is not live because the agent closed or reset it (not
// because it sent something unasked).
func (c *conn) alive() (live, closed bool) {
	if c.br.Buffered() > 0 {
		return false, false
	}
	if c.rc == nil {
		return true, false
	}
	err := c.rc.Read(c.peek)
	return err == nil && c.live, c.closed
}

// peekOnce is alive's one non-blocking peek, made once per connection as
// c.peek: a closure per call would cost an allocation per call.
func (c *conn) peekOnce(fd uintptr) bool {
	var buf [1]byte
	n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	c.live = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
	c.closed = n == 0 || (n < 0 && !c.live)
	return true
}

// release puts c back in the pool, or closes it when it cannot be reused:
// the reply said Connection: close, or the caller's context ended and
// closed it.
func (t *transport) release(c *conn, stop stopper, closeConn bool) {
	if !stop.stop() || closeConn {
		c.nc.Close()
		return
	}
	t.mu.Lock()
	if len(t.idle) >= t.maxIdle {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	c.since = time.Now()
	if c.timer == nil {
		c.timer = time.AfterFunc(t.idleFor(), c.expire)
	} else {
		c.timer.Reset(t.idleFor())
	}
	t.idle = append(t.idle, c)
	t.mu.Unlock()
}

// minLearn is the shortest pooled close that teaches the agent's
// keep-alive. A connection closed sooner than that is taken as a one-off
// (the agent restarting, or closing after so many requests), which must
// not shrink the pool's idle time for good. An agent whose keep-alive is
// shorter than this should set upstream.idle_timeout below it.
const minLearn = 250 * time.Millisecond

// learn notes that the agent closes connections idle for d (at most): a
// pooled connection it closed after d, or its Keep-Alive: timeout=.
func (t *transport) learn(d time.Duration) {
	if d < minLearn {
		return
	}
	for {
		cur := t.agentIdle.Load()
		if cur != 0 && cur <= int64(d) {
			return
		}
		if t.agentIdle.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// idleFor is how long a connection may sit in the pool: idleTimeout, or
// three quarters of the agent's keep-alive when that is known and
// shorter, so the sidecar closes an idle connection well before the agent
// would close it under a new request (DESIGN.md lesson 10).
func (t *transport) idleFor() time.Duration {
	d := t.idleTimeout
	if a := time.Duration(t.agentIdle.Load()); a > 0 {
		d = min(d, a*3/4)
	}
	return d
}

// keepAliveTimeout reads the timeout= of a Keep-Alive header
// ("timeout=5, max=100"); 0 when there is none.
func keepAliveTimeout(v string) time.Duration {
	for part := range strings.SplitSeq(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		if strings.EqualFold(strings.TrimSpace(k), "timeout") {
			if n, err := strconv.Atoi(strings.TrimSpace(val)); err == nil && n > 0 && n < 1<<20 {
				return time.Duration(n) * time.Second
			}
		}
	}
	return 0
}

// expire closes c if it is still in the pool after idleTimeout.
func (c *conn) expire() {
	t := c.t
	t.mu.Lock()
	for i, ic := range t.idle {
		if ic == c {
			t.idle = append(t.idle[:i], t.idle[i+1:]...)
			t.mu.Unlock()
			c.nc.Close()
			return
		}
	}
	t.mu.Unlock()
}

// closeIdle closes the pooled connections. It is not named
// CloseIdleConnections: go-retryablehttp calls that on every failed call,
// which would empty the pool whenever a caller leaves.
func (t *transport) closeIdle() {
	if netHTTP {
		t.netCloseIdle()
	}
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		c.timer.Stop()
		c.nc.Close()
	}
}

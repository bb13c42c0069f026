package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// TestProbeAcrossExit: a readiness probe that began before the agent
// exited and is answered after MarkDown does not mark the dead agent
// ready; a probe whose reply is cut short is not a ready answer; and Run
// returns at once when its context ends, with a probe out.
func TestProbeAcrossExit(t *testing.T) {
	var requests atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	a := newScriptAgent(t, func(_ int, nc net.Conn, br *bufio.Reader, done <-chan struct{}) {
		for {
			if _, err := readRequest(br); err != nil {
				return
			}
			switch requests.Add(1) {
			case 1: // ready
			case 2: // the probe that is out when the agent exits
				close(entered)
				<-release
			default: // the agent is gone: nothing answers
				<-done
				return
			}
			io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	cfg := testConfig(t, "http://"+a.addr(), "")
	cfg.Upstream.Ready.Path = "/health"
	cfg.Upstream.Ready.Interval = 50 * time.Millisecond
	cfg.Upstream.Ready.Timeout = 5 * time.Second
	c, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := NewProber(cfg, c)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		p.Run(ctx)
	}()
	defer func() {
		cancel()
		<-ran
	}()
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	defer wcancel()
	if err := p.Wait(wctx); err != nil {
		t.Fatalf("the agent never read as ready: %v", err)
	}
	select {
	case <-entered:
	case <-time.After(2 * time.Second):
		t.Fatal("no second probe")
	}
	p.MarkDown("agent exited")
	close(release) // the probe begun before the exit now answers 200
	time.Sleep(200 * time.Millisecond)
	if ok, detail := p.Status(); ok {
		t.Errorf("after MarkDown, a probe begun before it made the agent ready: %q", detail)
	}
	start := time.Now()
	cancel()
	select {
	case <-ran:
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("Run returned %v after its context ended, with a probe out", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after its context ended, with a probe out")
	}
}

// TestProbeBadReplies: the probe reads the agent through the same
// transport as calls, with the same bounds: a 200 whose body the agent
// cuts short, a reply head over the limit, too many interim replies and a
// 101 are each a failed probe, not a ready agent.
func TestProbeBadReplies(t *testing.T) {
	for name, raw := range map[string]string{
		"cut body":     "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
		"head too big": "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\nContent-Length: 0\r\n\r\n",
		"too many 1xx": strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 6) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"101":          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
	} {
		a := newScriptAgent(t, func(_ int, nc net.Conn, br *bufio.Reader, _ <-chan struct{}) {
			if _, err := readRequest(br); err != nil {
				return
			}
			io.WriteString(nc, raw)
		})
		cfg := testConfig(t, "http://"+a.addr(), "")
		cfg.Upstream.Ready.Path = "/health"
		c, err := New(cfg, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		p := NewProber(cfg, c)
		if err := p.probe(context.Background()); err == nil {
			t.Errorf("%s: the probe succeeded", name)
		}
		c.Close()
	}
}

// TestProbeClosedIdle: a probe the agent closed its pooled connection
// under, provably unread, is sent again on a new connection: the agent's
// keep-alive running out does not make it read as not ready.
func TestProbeClosedIdle(t *testing.T) {
	a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
		ok(w, `{}`)
		return true
	})
	cfg := testConfig(t, "http://"+a.addr(), "")
	cfg.Upstream.Ready.Path = "/health"
	c, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var broken atomic.Bool
	var dials atomic.Int32
	d := net.Dialer{}
	c.transport.dial = func(ctx context.Context) (net.Conn, error) {
		nc, err := d.DialContext(ctx, "tcp", a.addr())
		if err != nil || dials.Add(1) > 1 {
			return nc, err
		}
		return brokenConn{nc, &broken}, nil // the first connection breaks once pooled
	}
	p := NewProber(cfg, c)
	if err := p.probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	broken.Store(true)
	if err := p.probe(context.Background()); err != nil {
		t.Errorf("a probe on a pooled connection the agent closed: %v, want it sent again and ready", err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

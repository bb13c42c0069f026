//go:build nethttp

package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// TestNetHTTPIdleTimeout stands in, in the nethttp build, for the two
// tests that count the hand-written pool's connections
// (TestTransportIdleTimeout, TestIdleTimeoutConfig): with
// upstream.idle_timeout 100ms, the agent sees the connection of a call
// kept open after it, then closed by the sidecar once idle that long.
func TestNetHTTPIdleTimeout(t *testing.T) {
	const idle = 100 * time.Millisecond
	var open, closed atomic.Int32
	var closedAt atomic.Value // time.Time
	agent := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	}))
	agent.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed:
			closedAt.CompareAndSwap(nil, time.Now())
			closed.Add(1)
		}
	}
	agent.Start()
	defer agent.Close()
	c, err := New(testConfig(t, agent.URL+", idle_timeout: "+idle.String(), ""), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The connection goes idle after sent: it may not close before
	// sent+idle, whatever the machine's speed.
	sent := time.Now()
	resp, err := c.Send(context.Background(), Request{Verb: http.MethodGet, Path: "/"})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.body)
	resp.Close()
	o, n := open.Load(), closed.Load()
	if early := time.Since(sent) < idle; o != 1 || (early && n != 0) {
		t.Fatalf("after a call the agent saw %d connections opened and %d closed, want 1 and 0", o, n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if closed.Load() != 1 {
		t.Fatalf("the idle connection is still open 10 s after a %v idle timeout", idle)
	}
	if at := closedAt.Load().(time.Time); at.Sub(sent) < idle {
		t.Errorf("the idle connection closed %v after the call started, before its %v idle timeout", at.Sub(sent), idle)
	}
}

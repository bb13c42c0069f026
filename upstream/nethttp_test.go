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
	var open, closed atomic.Int32
	agent := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	}))
	agent.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	agent.Start()
	defer agent.Close()
	c, err := New(testConfig(t, agent.URL+", idle_timeout: 100ms", ""), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Send(context.Background(), Request{Verb: http.MethodGet, Path: "/"})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.body)
	resp.Close()
	time.Sleep(20 * time.Millisecond)
	if o, c := open.Load(), closed.Load(); o != 1 || c != 0 {
		t.Fatalf("after a call the agent saw %d connections opened and %d closed, want 1 and 0", o, c)
	}
	deadline := time.Now().Add(2 * time.Second)
	for closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if closed.Load() != 1 {
		t.Error("the idle connection is still open 2 s after a 100 ms idle timeout")
	}
}

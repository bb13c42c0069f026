package agentcore

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// TestWSSIGTERM: the binary, sent SIGTERM with a conversation open, drains
// (the conversation counts as a call in flight), then closes it with 1001
// inside shutdown.drain, as it ends every call still running.
func TestWSSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := doortest.BuildSidecar(t)
	agent := newWSAgent(t)
	const drain = 2 * time.Second
	p := doortest.StartSidecar(t, bin, `upstream: {url: "`+agent.URL+`"}
shutdown: {drain: 2s}
methods:
  query: {}
  converse: {mode: bidi, call: GET /live}
protocols:
  agentcore: {listen: "127.0.0.1:0", method: query, ws: converse}
`, Name)
	c, _, err := websocket.Dial(context.Background(), "ws://"+p.Addr[Name]+RouteWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	ctx := context.Background()
	c.Write(ctx, websocket.MessageText, []byte("hi"))
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatalf("echo before SIGTERM: %v", err)
	}
	sent := time.Now()
	syscall.Kill(p.Pid, syscall.SIGTERM)
	_, _, err = c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || !strings.Contains(ce.Reason, "shutting down") {
		t.Errorf("the caller's read after SIGTERM = %v, want 1001 saying the sidecar is shutting down", err)
	}
	// The bound is the behaviour: inside the drain's budget.
	if d := time.Since(sent); d > drain+time.Second {
		t.Errorf("closed %v after SIGTERM, want within shutdown.drain (%v)", d, drain)
	}
}

// TestWSMounted: AgentCore's door mounted on the platform's listener
// claims /ws there too, and converses on it.
func TestWSMounted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := doortest.BuildSidecar(t)
	agent := newWSAgent(t)
	p := doortest.StartSidecar(t, bin, `upstream: {url: "`+agent.URL+`"}
methods:
  query: {}
  converse: {mode: bidi, call: GET /live}
protocols:
  agentcore: {mount: /, method: query, ws: converse}
`, "agent_platform")
	c, _, err := websocket.Dial(context.Background(), "ws://"+p.Addr["agent_platform"]+RouteWS, nil)
	if err != nil {
		t.Fatalf("dialing /ws on the platform's listener: %v", err)
	}
	defer c.CloseNow()
	ctx := context.Background()
	c.Write(ctx, websocket.MessageText, []byte("mounted"))
	if _, b, err := c.Read(ctx); err != nil || string(b) != "mounted" {
		t.Errorf("echo through the mounted door = %q, %v", b, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

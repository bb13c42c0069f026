package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestSlowUpgradeCutByHeaderTimeout: a caller that sends a conversation's
// upgrade a byte at a time is cut by limits.header_timeout, on the real
// public server of a door's own listener, and the agent is never dialled;
// the same upgrade sent at once reaches the agent.
func TestSlowUpgradeCutByHeaderTimeout(t *testing.T) {
	var upgrades atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upgrades.Add(1)
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.Read(r.Context()) // until the sidecar closes it
	}))
	defer agent.Close()
	const headerTimeout = time.Second
	port := agentPort(t)
	serveInProcess(t, fmt.Sprintf("upstream: {url: %q}\nlimits: {header_timeout: %v}\n", agent.URL, headerTimeout)+
		"methods:\n  query: {}\n  converse: {mode: bidi, call: GET /live}\n"+
		fmt.Sprintf("protocols:\n  agentcore: {listen: \"127.0.0.1:%d\", method: query, ws: converse}\n", port), defaultServerLimits)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ws := "ws://" + addr + "/ws"

	// The door's listener opens as serve starts: the upgrade sent at once
	// is relayed, once it does.
	var c *websocket.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, _, err = websocket.Dial(context.Background(), ws, nil); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("the upgrade sent at once: %v", err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	if n := upgrades.Load(); n != 1 {
		t.Fatalf("the agent had %d upgrades after the one sent at once, want 1", n)
	}

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cut := make(chan struct{})
	go func() {
		io.Copy(io.Discard, conn) // until the server closes the connection
		close(cut)
	}()
	head := "GET /ws HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	began := time.Now()
	sent := 0
	// A byte every 50ms takes over 8s for the head: past the header
	// timeout whatever the machine's speed.
	for ; sent < len(head); sent++ {
		if _, err := conn.Write([]byte{head[sent]}); err != nil {
			break
		}
		select {
		case <-cut:
		case <-time.After(50 * time.Millisecond):
			continue
		}
		break
	}
	took := time.Since(began)
	select {
	case <-cut:
	default:
		t.Fatalf("the server still read the upgrade after its %d bytes in %v, want it cut after the %v header timeout", len(head), took, headerTimeout)
	}
	if sent == len(head) || took < headerTimeout/2 {
		t.Errorf("the slow upgrade was cut after %d of %d bytes in %v, want it cut by the %v header timeout", sent, len(head), took, headerTimeout)
	}
	if n := upgrades.Load(); n != 1 {
		t.Errorf("the agent had %d upgrades, want only the one sent at once", n)
	}
}

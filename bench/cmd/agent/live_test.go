package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestLiveEcho: /live sends every message back whole, of the type it
// came as, one after the other on one connection, past the library's
// default read limit of 32 KiB.
func TestLiveEcho(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(live))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(liveFrameBytes)
	msgs := []struct {
		typ  websocket.MessageType
		data []byte
	}{
		{websocket.MessageText, []byte("hello")},
		{websocket.MessageBinary, []byte{0, 1, 2, 255}},
		{websocket.MessageText, bytes.Repeat([]byte("x"), 100_000)},
		{websocket.MessageText, []byte("")},
	}
	for _, m := range msgs {
		if err := c.Write(ctx, m.typ, m.data); err != nil {
			t.Fatal(err)
		}
		typ, got, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("reading the echo of %d bytes: %v", len(m.data), err)
		}
		if typ != m.typ || !bytes.Equal(got, m.data) {
			t.Errorf("echo of %d bytes (%v) = %d bytes (%v)", len(m.data), m.typ, len(got), typ)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
}

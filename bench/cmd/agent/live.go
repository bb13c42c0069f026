package main

import (
	"bytes"
	"io"
	"net/http"

	"github.com/coder/websocket"
)

// liveFrameBytes is the largest frame the echo takes: the live rows send
// small ones, and the sidecar's own cap (limits.live.frame_bytes) is the
// same 1 MiB.
const liveFrameBytes = 1 << 20

// live is a WebSocket echo: every message it reads, text or binary, it
// writes back whole, as one frame of the same type, until the caller
// closes. One buffer per connection is reused for every message, so an
// echo costs the agent no garbage, and an idle connection holds that
// buffer, one goroutine and the library's own state.
func live(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered the request
	}
	defer c.CloseNow()
	c.SetReadLimit(liveFrameBytes)
	ctx := r.Context()
	var buf bytes.Buffer
	for {
		typ, rd, err := c.Reader(ctx)
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := io.Copy(&buf, rd); err != nil {
			return
		}
		// Write, not Writer: a message writer copied into sends a frame
		// per Write and one more to end the message.
		if err := c.Write(ctx, typ, buf.Bytes()); err != nil {
			return
		}
	}
}

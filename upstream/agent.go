package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The Client is the core.Agent for plain methods: one HTTP request per
// call, built from the method map, its reply read as the method says.

// Unary answers a unary call with the value of its {"output": …}, read
// from the agent's reply as the method says.
func (c *Client) Unary(ctx context.Context, call core.Call) (json.RawMessage, error) {
	resp, err := c.Call(ctx, call)
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	call.Note(string(FormatFor(call.Method.Reply, resp.Header.Get("Content-Type"))), resp.Retries)
	return resp.Output(call.Method, c.limits.ReplyBytes, c.limits.RecordBytes)
}

// Stream answers a streaming call with the records of the agent's reply,
// deframed as the method says.
func (c *Client) Stream(ctx context.Context, call core.Call) (core.Records, error) {
	resp, err := c.Call(ctx, call)
	if err != nil {
		return nil, err
	}
	records, format := resp.Stream(call.Method.Reply, c.limits.RecordBytes)
	call.Note(string(format), resp.Retries)
	return records, nil
}

// Stream deframes a streamed reply. Its errors name the clock that ended
// them, and it has the reply's BeforeWait and Close.
func (r *Response) Stream(reply config.Reply, maxRecord int) (*ReplyStream, Format) {
	f := FormatFor(reply, r.Header.Get("Content-Type"))
	if r.Status == http.StatusNoContent {
		return &ReplyStream{NewStream(FormatJSON, strings.NewReader(""), maxRecord), r}, f
	}
	return &ReplyStream{newReplyStream(f, r.body, maxRecord, r.closeEnd), r}, f
}

// ReplyStream is the records of a streamed reply: a core.Records and a
// core.Waiter.
type ReplyStream struct {
	core.Records // the deframer's
	resp         *Response
}

// Err is the reason the stream ended, a *core.TimeoutError when a clock ran out.
func (s *ReplyStream) Err() error {
	if err := s.Records.Err(); err != nil {
		return s.resp.Explain(err)
	}
	return nil
}

// BeforeWait sets f to run before every read of the reply from the agent.
func (s *ReplyStream) BeforeWait(f func()) { s.resp.BeforeWait(f) }

// Header is the agent's response header (the mapping stage detects a
// dialect by it).
func (s *ReplyStream) Header() http.Header { return s.resp.Header }

// Event is the SSE event type of the current record, nil when the reply
// is not an event stream or the event has none.
func (s *ReplyStream) Event() []byte {
	if e, ok := s.Records.(eventStream); ok {
		return e.Event()
	}
	return nil
}

// Close releases the reply (Response.Close).
func (s *ReplyStream) Close() { s.resp.Close() }

var (
	_ core.Agent   = (*Client)(nil)
	_ core.Records = (*ReplyStream)(nil)
	_ core.Waiter  = (*ReplyStream)(nil)
)

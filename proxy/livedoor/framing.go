package livedoor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/proxy/live"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// The platform's bidi framing, as Agent Platform's Python SDK
// (vertexai's live agent engines) speaks it over the passthrough:
//
//	caller → {"setup": {"name": "projects/P/locations/L/reasoningEngines/ID", "class_method": "bidi_stream_query", "input": {…}}}
//	caller → {"bidi_stream_input": {…}}              (each)
//	caller ← {"bidiStreamOutput": {…}}               (each)
//
// and the caller closes to end. ProtoJSON's lowerCamel names
// (classMethod, bidiStreamInput) are taken too.

// setup is what a setup frame says: the class_method it names ("": none)
// and its input (nil: none, or null).
type setup struct {
	classMethod string
	input       json.RawMessage
}

// wantSetup says what a conversation's first frame must be.
const wantSetup = `want {"setup": {"class_method": …, "input": …}} first`

// parseSetup reads a conversation's first frame, typ and data, as a
// setup frame: a *live.FrameError when it is not one (1003 for a binary
// frame, 1007 for text that is not {"setup": {…}}). Keys of the setup
// other than name, class_method and input are ignored, as ProtoJSON
// readers ignore unknown fields; name is not checked (the platform
// routed the conversation by it already).
func parseSetup(typ websocket.MessageType, data []byte) (setup, error) {
	if typ != websocket.MessageText {
		return setup{}, &live.FrameError{Code: websocket.StatusUnsupportedData, Reason: "a binary first frame: " + wantSetup}
	}
	body, ok := only(data, "setup")
	if !ok || len(body) == 0 || body[0] != '{' {
		return setup{}, &live.FrameError{Code: websocket.StatusInvalidFramePayloadData, Reason: "not a setup frame: " + wantSetup}
	}
	var s setup
	bad := ""
	rawjson.Members(body, func(key, value []byte) bool {
		switch k := rawjson.Key(key); k {
		case "class_method", "classMethod":
			if err := json.Unmarshal(value, &s.classMethod); err != nil {
				bad = "setup.class_method is not a string"
				return false
			}
		case "input":
			if string(value) != "null" {
				s.input = value
			}
		}
		return true
	})
	if bad != "" {
		return setup{}, &live.FrameError{Code: websocket.StatusInvalidFramePayloadData, Reason: bad}
	}
	return s, nil
}

// only is the value of data's one member when data is a JSON object with
// exactly one, named one of names; false otherwise.
func only(data []byte, names ...string) (json.RawMessage, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	var v json.RawMessage
	n := 0
	ok := rawjson.Members(data, func(key, value []byte) bool {
		n++
		if slices.Contains(names, rawjson.Key(key)) {
			v = value
		}
		return true
	})
	return v, ok && n == 1 && v != nil
}

// platformConn is the caller's side of a conversation in the platform's
// framing (live.Conn): Read unwraps each {"bidi_stream_input": X} into a
// text frame of X's JSON, verbatim, after the setup's input (the agent's
// first frame); Write wraps each of the agent's frames into
// {"bidiStreamOutput": …}. The relay's caps, clocks, counts and endings
// hold as for a bare WebSocket: limits.live.frame_bytes caps the wrapped
// frame the caller sends, and the agent's frame before it is wrapped.
type platformConn struct {
	c     *websocket.Conn
	first json.RawMessage // the setup's input, read first; nil: none (or read)
}

// wantInput says what a conversation's frames after the setup must be.
const wantInput = `want {"bidi_stream_input": …}`

// Read is the caller's next frame, unwrapped; a *live.FrameError for a
// frame the framing does not carry.
func (p *platformConn) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	if in := p.first; in != nil {
		p.first = nil
		return websocket.MessageText, in, nil
	}
	typ, data, err := p.c.Read(ctx)
	if err != nil {
		return typ, data, err
	}
	if typ != websocket.MessageText {
		return 0, nil, &live.FrameError{Code: websocket.StatusUnsupportedData, Reason: "a binary frame: " + wantInput + " text frames"}
	}
	if _, ok := only(data, "setup"); ok {
		return 0, nil, &live.FrameError{Code: websocket.StatusInvalidFramePayloadData, Reason: "a second setup frame: " + wantInput + " after the setup"}
	}
	in, ok := only(data, "bidi_stream_input", "bidiStreamInput")
	if !ok {
		return 0, nil, &live.FrameError{Code: websocket.StatusInvalidFramePayloadData, Reason: "not an input frame: " + wantInput}
	}
	return websocket.MessageText, in, nil
}

// Write sends the agent's frame wrapped: {"bidiStreamOutput": F}, F the
// frame's JSON when it is valid JSON text, else its text as a JSON
// string; a binary frame as {"bidiStreamOutput": {"inline_data":
// {"mime_type": "application/octet-stream", "data": base64}}}.
func (p *platformConn) Write(ctx context.Context, typ websocket.MessageType, data []byte) error {
	b := make([]byte, 0, len(data)+len(outputHead)+1)
	b = append(b, outputHead...)
	switch {
	case typ == websocket.MessageBinary:
		b = append(b, `{"inline_data":{"mime_type":"application/octet-stream","data":"`...)
		b = base64.StdEncoding.AppendEncode(b, data)
		b = append(b, `"}}`...)
	case json.Valid(data):
		b = append(b, data...)
	default:
		b = rawjson.AppendBytes(b, data, rawjson.ReplaceInvalid)
	}
	return p.c.Write(ctx, websocket.MessageText, append(b, '}'))
}

// outputHead opens every frame the caller gets.
const outputHead = `{"bidiStreamOutput":`

// Close closes the caller's WebSocket with code and reason.
func (p *platformConn) Close(code websocket.StatusCode, reason string) error {
	return p.c.Close(code, reason)
}

// SetReadLimit caps the frames read from the caller, wrapped (live.New
// sets it to limits.live.frame_bytes).
func (p *platformConn) SetReadLimit(n int64) { p.c.SetReadLimit(n) }

var _ live.Conn = (*platformConn)(nil)

package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// exchange is one tools/call (a core.Writer): the writers of the tool's
// result, a JSON-RPC response to the request's id.
type exchange struct {
	id      json.RawMessage // the request's id
	token   json.RawMessage // its _meta.progressToken; nil: no progress
	modern  bool            // 2026-07-28: results carry resultType
	maxText int64           // limits.reply_bytes: the most of a stream's text the result keeps
	texts   *texts          // a stream's text, once it began
}

// result is a tools/call result: one text content, structured (a JSON
// object) as structuredContent when set, isError for a tool's failure.
func (ex *exchange) result(text string, structured []byte, isError bool) []byte {
	b := []byte(`{"content":[{"type":"text","text":`)
	b = appendString(b, text)
	b = append(b, "}]"...)
	if structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = append(b, structured...)
	}
	if isError {
		b = append(b, `,"isError":true`...)
	}
	if ex.modern {
		b = append(b, `,"resultType":"complete"`...)
	}
	return append(b, '}')
}

// WriteOutput answers a unary method's call: its output as the result's
// text (a JSON string's value, anything else its JSON), and a JSON object
// as structuredContent too.
func (ex *exchange) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	out = bytes.TrimSpace(out)
	var structured []byte
	text := string(out)
	switch {
	case len(out) > 0 && out[0] == '"':
		var s string
		if json.Unmarshal(out, &s) == nil {
			text = s
		}
	case len(out) > 0 && out[0] == '{':
		structured = out
	}
	b := append(response(ex.id, ex.result(text, structured, false), nil), '\n')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return w.Write(b)
}

// Encoder is the writer of a streaming method's answer: an SSE response
// (the shared stream writer and its flush policy) of a
// notifications/progress per text record when the request has a progress
// token, then the result whose text is the whole answer.
func (ex *exchange) Encoder(w http.ResponseWriter) core.Encoder {
	out := frames.New(w, "text/event-stream", "data: ", "\n\n", frames.Hooks{
		Record: ex.progress, End: ex.end, Fail: ex.failed})
	return &encoder{ex: ex, Writer: out}
}

// encoder is the frames.Writer of a stream whose records are first read
// as text (texts).
type encoder struct {
	ex *exchange
	*frames.Writer
}

// Copy writes the progress of each text record of r, then the result.
func (e *encoder) Copy(r core.Records) error {
	e.ex.texts = &texts{in: r, max: e.ex.maxText, progress: e.ex.token != nil}
	if w, ok := r.(core.Waiter); ok {
		return e.Writer.Copy(&waitingTexts{texts: e.ex.texts, w: w})
	}
	return e.Writer.Copy(e.ex.texts)
}

// progress appends the notifications/progress of a text record (given as
// its JSON string) to dst: the request's token, the record's count as the
// progress, its text as the message.
func (ex *exchange) progress(dst, text []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`...)
	dst = append(dst, ex.token...)
	dst = append(dst, `,"progress":`...)
	dst = strconv.AppendInt(dst, int64(ex.texts.count), 10)
	dst = append(dst, `,"message":`...)
	dst = append(dst, text...)
	return append(dst, "}}"...)
}

// end is the result once the records ended cleanly: the whole text, or
// past limits.reply_bytes a failure saying so (the progress notifications
// carried every piece). A failure is written by failed.
func (ex *exchange) end(err error) [][]byte {
	if err != nil {
		return nil
	}
	t := ex.texts
	if t.over {
		return [][]byte{response(ex.id, ex.result(tooLarge(ex.maxText), nil, true), nil)}
	}
	return [][]byte{response(ex.id, ex.result(string(t.whole), nil, false), nil)}
}

// tooLarge is the failure of a streamed answer whose text outgrew the
// limit.
func tooLarge(limit int64) string {
	return fmt.Sprintf("the answer's text exceeds limits.reply_bytes (%d bytes): the result keeps the whole text; the progress notifications carried it", limit)
}

// failed is the result of a stream that failed after it began: isError,
// the failure's message.
func (ex *exchange) failed(f core.Failure) []byte {
	return response(ex.id, ex.result(f.Message, nil, true), nil)
}

// WriteError answers a call that failed before its first byte. A failure
// of the agent's (its error, a clock that ran out, a dropped connection)
// is the tool's: a result with isError and the failure's message. The
// sidecar's refusals (a bad input, busy, not ready, draining) are
// JSON-RPC errors.
func (ex *exchange) WriteError(w http.ResponseWriter, f core.Failure) {
	if f.Outcome == metrics.AgentError || f.Outcome == metrics.Timeout || f.Outcome == metrics.AgentDisconnected {
		writeRPC(w, http.StatusOK, response(ex.id, ex.result(f.Message, nil, true), nil))
		return
	}
	writeFailure(w, ex.id, f)
}

// writeFailure writes the JSON-RPC error of a refusal of the sidecar's:
// an input the method's request cannot be built from is -32602 (200, a
// tool's invalid arguments); a request refused before it was served keeps
// the HTTP status every door answers it with, so one error has one
// status: a body over limits.request_bytes 413 and -32600 (a path the
// door does not serve 404, a method it does not take 405, a foreign Host
// or Origin 403, an Accept without MCP's types 406, a body not declared
// JSON 415, each -32600),
// busy, not ready and draining 503 with Retry-After, a loop 508, a handler
// method on a sidecar without handlers 501, each -32603.
func writeFailure(w http.ResponseWriter, id json.RawMessage, f core.Failure) {
	code, status := codeInternal, f.Status
	switch f.Reason {
	case "BAD_REQUEST":
		if f.Status == http.StatusBadRequest {
			code, status = codeInvalidParams, http.StatusOK
		}
	case "REQUEST_TOO_LARGE", "NOT_FOUND", "METHOD_NOT_ALLOWED", "PERMISSION_DENIED", "NOT_ACCEPTABLE", "UNSUPPORTED_MEDIA_TYPE":
		code = codeInvalidRequest
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	writeRPC(w, status, response(id, nil, &rpcError{code: code, message: f.Message}))
}

// WriteError answers a request refused before it was opened: refused
// before its body was read, or whose body was over the limit. Its id is
// unknown: null.
func (d *Door) WriteError(w http.ResponseWriter, f core.Failure) { writeFailure(w, nil, f) }

// OriginEverywhere: the transport says a server validates Origin on every
// connection, so proxy's Host and Origin check holds it on every one, not
// only on loopback.
func (*Door) OriginEverywhere() bool { return true }

// JSONBody: the transport's POST carries a JSON-RPC message as
// application/json; any other type is refused 415 unread (proxy's guard:
// a page's text/plain POST is a CSRF).
func (*Door) JSONBody(string) bool { return true }

// texts are the text records of a stream, as the dialect stage writes
// them with emit: text ({"text": "…"}; reasoning, tool calls and the end
// carry none), or as an agent whose stream it could not place sent them
// (a JSON string; an object with a string text member; anything else its
// JSON). It keeps the whole text for the result, at most max bytes (past
// it the stream ends, over set), and yields each piece as a JSON string
// when the request wants progress.
type texts struct {
	in       core.Records
	max      int64
	progress bool

	whole []byte // the text so far
	cur   []byte // the current piece, a JSON string
	count int    // the pieces yielded
	over  bool
}

// Next advances to the next piece of text.
func (t *texts) Next() bool {
	for !t.over && t.in.Next() {
		s, ok := textOf(t.in.Record())
		if !ok || s == "" {
			continue
		}
		if int64(len(t.whole)+len(s)) > t.max && t.max > 0 {
			t.over = true
			return false
		}
		t.whole = append(t.whole, s...)
		if t.progress {
			t.cur = appendString(t.cur[:0], s)
			t.count++
			return true
		}
	}
	return false
}

func (t *texts) Record() []byte { return t.cur }

// Err is the stream's end: nil when it ended cleanly, or was cut at max.
func (t *texts) Err() error {
	if t.over {
		return nil
	}
	return t.in.Err()
}

func (t *texts) Close() { t.in.Close() }

// waitingTexts are texts whose records say when they wait for the agent,
// so the writer flushes each piece's progress as it comes.
type waitingTexts struct {
	*texts
	w core.Waiter
}

func (t *waitingTexts) BeforeWait(f func()) { t.w.BeforeWait(f) }

// textOf is a record's text: ok is false for a record that carries none
// (an emit: text line of reasoning, a tool call or result, the end).
func textOf(record []byte) (string, bool) {
	record = bytes.TrimSpace(record)
	if len(record) == 0 {
		return "", false
	}
	switch record[0] {
	case '"':
		var s string
		if json.Unmarshal(record, &s) == nil {
			return s, true
		}
	case '{':
		var text []byte
		members, other := 0, ""
		rawjson.Members(record, func(key, value []byte) bool {
			members++
			if rawjson.KeyIs(key, "text") {
				text = value
			} else {
				other = rawjson.Key(key)
			}
			return true
		})
		var s string
		if len(text) > 0 && text[0] == '"' && json.Unmarshal(text, &s) == nil {
			return s, true
		}
		if members == 1 && (other == "reasoning" || other == "tool_call" || other == "tool_result" || other == "end") {
			return "", false
		}
	}
	return string(record), true
}

var (
	_ core.Writer  = (*exchange)(nil)
	_ core.Encoder = (*encoder)(nil)
	_ core.Waiter  = (*waitingTexts)(nil)
)

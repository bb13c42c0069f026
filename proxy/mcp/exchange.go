package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	"github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// exchange is one tools/call (a core.Writer): the writers of the tool's
// result, a JSON-RPC response to the request's id.
type exchange struct {
	id          json.RawMessage // the request's id
	token       json.RawMessage // its _meta.progressToken; nil: no progress
	modern      bool            // 2026-07-28: results carry resultType
	maxText     int64           // limits.reply_bytes: the most of a stream's text (as JSON) the result keeps
	texts       *texts          // a stream's text, once it began
	cancellable                 // a 2025 session's call: notifications/cancelled ends it

	// What carries the agent's question to the caller (ask.go).
	door    *Door
	call    core.Call       // the call, made again with the answer
	args    json.RawMessage // the tool's arguments as the client sent them
	stream  bool            // the tool's method streams
	modes   modes           // the elicitation modes the session's client declared
	owner   core.Owner      // who called (2026-07-28: its requestState is theirs alone)
	request context.Context // the request's context (2026-07-28: to read the state key)
	opened  time.Time       // when the call was opened: its total time runs from here
	ctx     context.Context // the call's context (a 2025 session's: context)
	agent   core.Agent      // Resume's
	stopped error           // why a call again failed, or a question was unreadable (Stopped)
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
// as structuredContent too; an output with parts, their contents
// (writeParts).
func (ex *exchange) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	out = bytes.TrimSpace(out)
	if q, err := ex.question(out); err != nil {
		ex.WriteError(w, askFailure(err))
		return 0, nil
	} else if q != nil {
		return ex.askedUnary(w, q)
	}
	if part.Is(out) {
		return ex.writeParts(w, "", []json.RawMessage{out})
	}
	if text, parts, ok := ex.wholeParts(out); ok {
		return ex.writeParts(w, text, parts)
	}
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

// writeParts answers a unary method's call whose output has parts: one
// part record, or (emit: text) the whole answer's text and parts. The
// result's content is the text, when there is any, then each part's; an
// answer's one data part that is an object its structuredContent too. A
// malformed part, or one over limits.parts, is the agent's failure
// (BAD_REPLY, PART_TOO_LARGE).
func (ex *exchange) writeParts(w http.ResponseWriter, text string, recs []json.RawMessage) (int, error) {
	var lim config.Parts
	if ex.door != nil {
		lim = ex.door.parts
	}
	budget := part.NewBudget(lim)
	parts := make([]*part.Part, len(recs))
	size := len(text) + 128
	var data []byte
	datas := 0
	for i, rec := range recs {
		p, err := part.Parse(rec, lim)
		if err == nil {
			err = budget.Take(p)
		}
		if err != nil {
			ex.WriteError(w, core.FailureOf(part.Agent(err)))
			return 0, nil
		}
		if p.Kind == part.Data {
			if datas++; datas == 1 && len(p.Value) > 0 && p.Value[0] == '{' {
				data = p.Value
			}
		}
		parts[i] = p
		size += contentSize(p)
	}
	b := append(make([]byte, 0, size+len(ex.id)), `{"jsonrpc":"2.0","id":`...)
	b = append(b, ex.id...)
	b = append(b, `,"result":{"content":[`...)
	if text != "" {
		b = appendString(append(b, `{"type":"text","text":`...), text)
		b = append(b, '}')
	}
	for i, p := range parts {
		if i > 0 || text != "" {
			b = append(b, ',')
		}
		b = appendContent(b, p, i+1)
	}
	b = append(b, ']')
	if datas == 1 && data != nil {
		b = append(append(b, `,"structuredContent":`...), data...)
	}
	if ex.modern {
		b = append(b, `,"resultType":"complete"`...)
	}
	b = append(b, "}}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return w.Write(b)
}

// wholeParts is the text and parts of out, a method's whole answer as
// the mapping stage collects it with emit: text ({"text": …, "parts":
// […], …}); ok is false for any other output, or one without parts.
func (ex *exchange) wholeParts(out json.RawMessage) (text string, parts []json.RawMessage, ok bool) {
	if ex.call.Method == nil || ex.call.Method.Emitting() != config.EmitText || len(out) == 0 || out[0] != '{' {
		return "", nil, false
	}
	var whole struct {
		Text  string            `json:"text"`
		Parts []json.RawMessage `json:"parts"`
	}
	if json.Unmarshal(out, &whole) != nil || len(whole.Parts) == 0 {
		return "", nil, false
	}
	return whole.Text, whole.Parts, true
}

// Encoder is the writer of a streaming method's answer: an SSE response
// (the shared stream writer and its flush policy) of a
// notifications/progress per text record when the request has a progress
// token, then the result whose text is the whole answer.
func (ex *exchange) Encoder(w http.ResponseWriter) core.Encoder {
	out := frames.New(w, "text/event-stream", "data: ", "\n\n", frames.Hooks{
		Record: ex.progress, End: ex.closing, Fail: ex.failed})
	return &encoder{ex: ex, Writer: out, w: w}
}

// smallResult is the largest closing result the shared writer writes (the
// End hook), with the stream's last progress, in one write and flush:
// copying it once more costs little. A larger one the encoder writes
// itself, from where texts kept it.
const smallResult = 64 << 10

// closing is the End hook: the closing result of a stream that ended
// cleanly, when it is small; nil leaves it to the encoder.
func (ex *exchange) closing(err error) [][]byte {
	t := ex.texts
	if err != nil || t.text > smallResult || t.question != nil || t.askErr != nil {
		return nil
	}
	t.closed = true
	return [][]byte{bytes.Join(ex.end(), nil)}
}

// encoder is the frames.Writer of a stream whose records are first read
// as text (texts), and which writes the closing result itself: that
// frame holds the whole answer, kept as the text came (texts), and goes
// out as it is, where the shared writer would copy it into one frame.
type encoder struct {
	ex *exchange
	*frames.Writer
	w      http.ResponseWriter
	closed int64 // the bytes of the closing frame
}

// Copy writes the progress of each text record of r, then the result; a
// stream that ends with the agent's question goes on as resume says.
func (e *encoder) Copy(r core.Records) error {
	t, err := e.copyTexts(r)
	if err != nil || t.closed {
		return err
	}
	if t.askErr != nil || t.partErr != nil {
		e.ex.stopped = t.Err()
		return nil
	}
	if t.Err() != nil {
		return nil // a failure is written by failed, through Fail
	}
	if t.question != nil {
		return e.resume(t.question)
	}
	return e.writeEnd()
}

// copyTexts writes the progress of each text record of r.
func (e *encoder) copyTexts(r core.Records) (*texts, error) {
	t := newTexts(r, e.ex)
	if prev := e.ex.texts; prev != nil {
		t.count = prev.count // a call again's progress goes on from the first's: MCP's progress only grows
	}
	e.ex.texts = t
	if w, ok := r.(core.Waiter); ok {
		return t, e.Writer.Copy(&waitingTexts{texts: t, w: w})
	}
	return t, e.Writer.Copy(t)
}

// resume carries the agent's question q to the caller (asked), and goes
// on with what comes of it: a closing result, or the records of the
// method called again with the answer, which may end with another
// question. A later call's failure is Stopped's.
func (e *encoder) resume(q *ask.Question) error {
	for q != nil {
		next, final, err := e.ex.asked(q, e.frame)
		if err != nil {
			return err
		}
		if final != nil {
			return e.frame(final)
		}
		if next == nil {
			return nil // stopped: the Server fails the stream
		}
		t, err := e.copyTexts(next)
		next.Close()
		if err != nil || t.closed {
			return err
		}
		if t.askErr != nil || t.partErr != nil {
			e.ex.stopped = t.Err()
			return nil
		}
		if err := t.Err(); err != nil {
			e.ex.stopped = err
			return nil
		}
		q = t.question
	}
	return e.writeEnd()
}

// frame writes one SSE frame of data and flushes it.
func (e *encoder) frame(data []byte) error {
	for _, b := range [][]byte{[]byte("data: "), data, []byte("\n\n")} {
		n, err := e.w.Write(b)
		e.closed += int64(n)
		if err != nil {
			return err
		}
	}
	return http.NewResponseController(e.w).Flush()
}

// Stopped is why the stream ended without its result (core.Stopper): an
// unreadable question, or the failure of the call made again.
func (e *encoder) Stopped() error { return e.ex.stopped }

// writeEnd writes the closing result of the text the stream kept.
func (e *encoder) writeEnd() error {
	t := e.ex.texts
	pieces := append([][]byte{[]byte("data: ")}, e.ex.end()...)
	for _, b := range append(pieces, []byte("\n\n")) {
		n, err := e.w.Write(b)
		e.closed += int64(n)
		if err != nil {
			return err
		}
	}
	t.kept, t.done = nil, nil
	http.NewResponseController(e.w).Flush()
	return nil
}

// Wrote is what went out: the shared writer's frames, and the closing one.
func (e *encoder) Wrote() (records int, bytes int64, first time.Time) {
	records, bytes, first = e.Writer.Wrote()
	return records, bytes + e.closed, first
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

// end is the data of the closing frame of a stream whose records ended
// cleanly, in the pieces it is written in: the result, its text the whole
// answer (as texts kept it, escaped), or past limits.reply_bytes an
// isError saying what happened.
func (ex *exchange) end() [][]byte {
	t := ex.texts
	if t.over {
		return [][]byte{response(ex.id, ex.result(t.tooLarge(), nil, true), nil)}
	}
	open := append([]byte(`{"jsonrpc":"2.0","id":`), ex.id...)
	open = append(open, `,"result":{"content":[`...)
	pieces := append([][]byte{open}, t.done...)
	if len(t.kept) > 0 || t.items == 0 {
		head := []byte(`{"type":"text","text":"`)
		if t.items > 0 {
			head = []byte(`,{"type":"text","text":"`)
		}
		pieces = append(append(append(pieces, head), t.kept...), []byte(`"}`))
	}
	end := []byte(`]`)
	if t.datas == 1 && t.data != nil {
		end = append(append(end, `,"structuredContent":`...), t.data...)
	}
	if ex.modern {
		end = append(end, `,"resultType":"complete"`...)
	}
	end = append(end, "}}"...)
	return append(pieces, end)
}

// tooLarge is the text of the failure of a streamed answer whose text
// outgrew the limit: what reached the caller, and what did not.
func (t *texts) tooLarge() string {
	what := "the answer's text"
	if t.nparts > 0 {
		what = "the answer, its text and its parts,"
	}
	msg := fmt.Sprintf("%s exceeds limits.reply_bytes (%d bytes), so the agent's call was ended and this result keeps none of it", what, t.max)
	switch {
	case !t.progress:
		return msg + "; none of it was sent (a request with _meta.progressToken gets the text in progress notifications as it comes)"
	case t.count == 0:
		return msg + "; no progress notification carried any of it (its first piece alone was over the limit)"
	}
	return msg + fmt.Sprintf("; the %d progress notifications before this result carried its first %d bytes (as JSON)", t.count, t.sent)
}

// failed is the result of a stream that failed after it began: isError,
// the failure's message.
func (ex *exchange) failed(f core.Failure) []byte {
	if ex.cancelled.Load() {
		return nil
	}
	return response(ex.id, ex.result(f.Message, nil, true), nil)
}

// WriteError answers a call that failed before its first byte. A failure
// of the agent's (its error, a clock that ran out, a dropped connection)
// is the tool's: a result with isError and the failure's message. The
// sidecar's refusals (a bad input, busy, not ready, draining) are
// JSON-RPC errors.
func (ex *exchange) WriteError(w http.ResponseWriter, f core.Failure) {
	if ex.cancelled.Load() {
		writeCancelled(w)
		return
	}
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
// JSON 415, no valid bearer token 401, each -32600, as on A2A's door),
// busy, not ready and draining 503 with Retry-After, a loop 508, a handler
// method on a sidecar without handlers 501, each -32603.
func writeFailure(w http.ResponseWriter, id json.RawMessage, f core.Failure) {
	code, status := codeInternal, f.Status
	switch f.Reason {
	case "BAD_REQUEST":
		if f.Status == http.StatusBadRequest {
			code, status = codeInvalidParams, http.StatusOK
		}
	case "REQUEST_TOO_LARGE", "NOT_FOUND", "METHOD_NOT_ALLOWED", "PERMISSION_DENIED", "NOT_ACCEPTABLE", "UNSUPPORTED_MEDIA_TYPE", "UNAUTHENTICATED":
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
// JSON). It yields each piece as a JSON string when the request wants
// progress, and keeps the whole text for the result, escaped as a JSON
// string's content, at most max bytes of it (past it the stream ends, over
// set), in chunks that double from 512 bytes up to keptChunk, each filled
// before the next: the answer is held once, never copied to grow, and goes
// out as it is.
type texts struct {
	in       core.Records
	max      int64
	progress bool

	kept   [][]byte // the text so far, escaped; every chunk full but the last
	text   int64    // its bytes
	cur    []byte   // the current piece, a JSON string (the record's bytes, or buf)
	buf    []byte   // a piece that had to be encoded
	count  int      // the pieces yielded
	sent   int64    // their bytes of text, as JSON
	over   bool
	closed bool // the closing result went out through the End hook

	maxQuestion int64         // limits.questions.bytes
	question    *ask.Question // the agent's question, which ended the stream
	askErr      error         // a question record that is no question

	// The agent's parts (content.go): done is the result's content
	// before the text being kept, its closed text contents and the
	// parts' contents, as the pieces it is written in; items counts
	// them. data is the value of the answer's data part, its
	// structuredContent when it is the only one (datas) and an object.
	parts   *part.Budget
	done    [][]byte
	items   int
	nparts  int
	data    []byte
	datas   int
	partErr error // a part malformed or over limits.parts
}

// keptChunk is the largest chunk texts keeps the text in: large enough
// that a 32 MiB answer is about 128 writes, small enough that the last
// chunk's unused room is a small part of a large answer.
const keptChunk = 256 << 10

func newTexts(in core.Records, ex *exchange) *texts {
	var maxQ int64
	var lim config.Parts
	if ex.door != nil {
		maxQ, lim = ex.door.questions.Bytes, ex.door.parts
	}
	return &texts{in: in, max: ex.maxText, progress: ex.token != nil, maxQuestion: maxQ, parts: part.NewBudget(lim)}
}

// Next advances to the next piece of text.
func (t *texts) Next() bool {
	for !t.over && t.in.Next() {
		if core.Control(t.in) {
			continue
		}
		if rec := t.in.Record(); ask.Is(rec) {
			// The agent asks, and its reply ends here: the text so far
			// is no answer.
			t.question, t.askErr = ask.Parse(rec, t.maxQuestion)
			t.kept, t.text = nil, 0
			t.done, t.items, t.nparts, t.data, t.datas = nil, 0, 0, nil, 0
			return false
		} else if part.Is(rec) {
			if t.partErr = t.addPart(rec); t.partErr != nil {
				return false
			}
			continue
		}
		q, ok := t.quoted(t.in.Record())
		if !ok || len(q) == 2 { // none, or ""
			continue
		}
		t.cur = q
		escaped := q[1 : len(q)-1]
		if t.text+int64(len(escaped)) > t.max && t.max > 0 {
			t.over = true
			t.kept = nil
			return false
		}
		t.keep(escaped)
		if t.progress {
			t.count++
			t.sent += int64(len(escaped))
			return true
		}
	}
	return false
}

// addPart reads rec, a part record, counts it against limits.parts, and
// adds its content to the result after the text so far. The result's
// content counts against max as its text does: ten thousand tiny parts
// end the stream as a long text would.
func (t *texts) addPart(rec []byte) error {
	p, err := part.Parse(rec, t.parts.Limits())
	if err == nil {
		err = t.parts.Take(p)
	}
	if err != nil {
		return part.Agent(err)
	}
	size := contentSize(p)
	if t.max > 0 && t.text+int64(size) > t.max {
		t.over = true
		t.kept, t.done = nil, nil
		return nil
	}
	if len(t.kept) > 0 {
		t.done = append(t.done, append(t.comma(nil), `{"type":"text","text":"`...))
		t.done = append(t.done, t.kept...)
		t.done = append(t.done, []byte(`"}`))
		t.kept = nil
	}
	t.nparts++
	c := appendContent(t.comma(make([]byte, 0, size)), p, t.nparts)
	t.text += int64(len(c))
	t.done = append(t.done, c)
	if p.Kind == part.Data {
		t.datas++
		if t.datas == 1 && len(p.Value) > 0 && p.Value[0] == '{' {
			t.data = p.Value // Parse's own copy
		}
	}
	return nil
}

// comma is b after a comma when a content comes before it, and counts
// the content b opens.
func (t *texts) comma(b []byte) []byte {
	t.items++
	if t.items > 1 {
		b = append(b, ',')
	}
	return b
}

// keep appends b to the kept text: what fits in the last chunk's room,
// the rest in new chunks.
func (t *texts) keep(b []byte) {
	t.text += int64(len(b))
	for len(b) > 0 {
		if n := len(t.kept); n == 0 {
			t.kept = append(t.kept, make([]byte, 0, 512))
		} else if last := t.kept[n-1]; len(last) == cap(last) {
			t.kept = append(t.kept, make([]byte, 0, min(2*cap(last), keptChunk)))
		}
		last := &t.kept[len(t.kept)-1]
		k := min(len(b), cap(*last)-len(*last))
		*last = append(*last, b[:k]...)
		b = b[k:]
	}
}

func (t *texts) Record() []byte { return t.cur }

// Err is the stream's end: nil when it ended cleanly, or was cut at max.
func (t *texts) Err() error {
	if t.askErr != nil {
		return t.askErr
	}
	if t.partErr != nil {
		return t.partErr
	}
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

// quoted is a record's text as a JSON string, built in t.buf when it must
// be: ok is false for a record that carries none (an emit: text
// line of reasoning, a tool call or result, the end). A text that is a
// JSON string already (a string record, the text member of an object), of
// valid UTF-8, is the record's own bytes, neither decoded nor encoded
// again: a 1 MB piece costs no 1 MB of garbage.
func (t *texts) quoted(record []byte) (q []byte, ok bool) {
	record = bytes.TrimSpace(record)
	if len(record) == 0 {
		return nil, false
	}
	switch record[0] {
	case '"':
		if json.Valid(record) && utf8.Valid(record) {
			return record, true
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
		if len(text) > 0 && text[0] == '"' && json.Valid(text) && utf8.Valid(text) {
			return text, true
		}
		if members == 1 && (other == "reasoning" || other == "tool_call" || other == "tool_result" || other == "end") {
			return nil, false
		}
	}
	t.buf = appendString(t.buf[:0], string(record))
	return t.buf, true
}

var (
	_ core.Writer  = (*exchange)(nil)
	_ core.Encoder = (*encoder)(nil)
	_ core.Waiter  = (*waitingTexts)(nil)
	_ core.Stopper = (*encoder)(nil)
	_ core.Resumer = (*exchange)(nil)
)

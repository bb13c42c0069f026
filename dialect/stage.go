package dialect

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// Agent is the mapping stage as a core.Agent around another: a call whose
// method emits text or ADK events gets its agent's reply mapped; any
// other call is the inner Agent's, untouched.
type Agent struct {
	// Agent answers the calls.
	Agent core.Agent
	// Author is the author of the ADK events emitted (emit adk).
	// Default: "agent".
	Author string
	// SnakeKeys writes ADK events with snake_case keys (adk.keys: snake).
	SnakeKeys bool
	// MaxReply caps what a unary method with emit text or adk reads from
	// its agent's stream, as limits.reply_bytes caps a unary reply: more
	// is core.ErrReplyTooLarge. 0: no cap.
	MaxReply int64
	// MaxRecord caps one line out, as limits.record_bytes caps one record
	// in, and what the stage holds to write its next line (a tool call's
	// arguments, a turn's text for its complete ADK event, a data stream
	// line). Default: 8 MiB.
	MaxRecord int
	// MaxQuestion caps an agent's question, its input_required record
	// (limits.questions.bytes): a larger one ends the call with
	// QUESTION_TOO_LARGE. 0: no cap but MaxRecord.
	MaxQuestion int64
	// Parts caps the parts that are not text the agent answers
	// (limits.parts): one over Bytes, or past Total with those before
	// it, ends the call with PART_TOO_LARGE. Zero: no cap but MaxRecord.
	Parts config.Parts
}

// Stream answers c with the inner Agent's records, mapped as c's method
// says.
func (a Agent) Stream(ctx context.Context, c core.Call) (core.Records, error) {
	r, err := a.Agent.Stream(ctx, c)
	if err != nil || c.Method.Emitting() == config.EmitRaw {
		return r, err
	}
	return a.Map(c, r), nil
}

// Unary answers c. With emit text or adk the agent's reply is read as a
// stream and mapped, and the output is the whole of it (Collect).
func (a Agent) Unary(ctx context.Context, c core.Call) (json.RawMessage, error) {
	if c.Method.Emitting() == config.EmitRaw || c.Method.Handler != "" {
		return a.Agent.Unary(ctx, c)
	}
	if c.Notes == nil {
		c.Notes = &core.Notes{} // how the reply was read decides what Collect answers
	}
	r, err := a.Agent.Stream(ctx, c)
	if err != nil {
		return nil, err
	}
	m := a.mapped(c, r, true)
	defer m.Close()
	return m.Collect()
}

// Map wraps r, the records of call c, in the mapping stage.
func (a Agent) Map(c core.Call, r core.Records) *Records { return a.mapped(c, r, false) }

// mapped is Map, keeping the whole output for Collect when whole is set.
func (a Agent) mapped(c core.Call, r core.Records, whole bool) *Records {
	author := a.Author
	if author == "" {
		author = "agent"
	}
	max := a.MaxRecord
	if max <= 0 {
		max = defaultMaxRecord
	}
	var e emitter
	switch c.Method.Emitting() {
	case config.EmitADK:
		adk := newADKEmitter(author, a.SnakeKeys)
		adk.max, adk.keep = max, whole
		e = adk
	default:
		e = &textEmitter{max: max, keep: whole}
	}
	rs := &Records{in: r, dialect: c.Method.Speaking(), emit: e, notes: c.Notes, max: max, maxQuestion: a.MaxQuestion, parts: part.NewBudget(a.Parts)}
	rs.tools.max = max
	if whole {
		rs.maxReply = a.MaxReply
	}
	return rs
}

// Header is implemented by records that carry the agent's response
// header (upstream.ReplyStream).
type Header interface{ Header() http.Header }

// EventType is implemented by records that carry an SSE event type
// (upstream.ReplyStream): valid until the next Next.
type EventType interface{ Event() []byte }

// Records is a stream of records mapped from a dialect to the emitted
// lines. A stream whose dialect is raw, or that auto-detection cannot
// place, passes through unchanged.
//
// It holds what its next line needs: the events of one record, the lines
// of one event, and what the mapper and the emitter hold for lines to
// come (the open tool calls, the turn's text for its complete ADK event),
// each capped at max.
type Records struct {
	in      core.Records
	dialect config.Dialect
	notes   *core.Notes
	m       Mapper
	emit    emitter
	max     int // the longest line out, and what a mapper holds
	// maxQuestion caps a question record (limits.questions.bytes).
	maxQuestion int64
	// parts counts the parts that are not text against limits.parts.
	parts  *part.Budget
	placed bool // the dialect is known (m set) or the stream passes through
	pass   bool

	events []Event // the events of the last record mapped
	next   int     // the first of events not written yet
	mapped int     // events mapped so far
	read   int     // records mapped so far
	shaped bool    // a record had the dialect's shape (Detect)
	asked  bool    // a record was a question
	tools  table[string]
	lines  [][]byte // lines ready
	line   int      // the first of lines not taken yet
	cur    []byte
	ending bool // the agent's records ended cleanly
	done   bool
	err    error

	maxReply int64 // Collect's cap on what the output keeps, 0 for none
}

// Next advances to the next line.
func (r *Records) Next() bool {
	for {
		if r.line < len(r.lines) {
			r.cur = r.lines[r.line]
			r.lines[r.line] = nil
			r.line++
			return true
		}
		r.lines, r.line = r.lines[:0], 0
		if r.done || r.err != nil {
			r.cur = nil
			return false
		}
		if r.next < len(r.events) {
			r.write(&r.events[r.next])
			r.next++
			continue
		}
		if r.ending {
			r.end()
			continue
		}
		if !r.in.Next() {
			if !r.placed && r.dialect != config.DialectAuto {
				r.place(nil)
			}
			if !r.placed && r.asked {
				// Only questions came: a reply in no dialect but ours.
				r.placed, r.m, r.dialect = true, textMapper{}, dialectText
			}
			if r.err = r.in.Err(); r.err != nil || r.m == nil {
				r.done = true
				continue
			}
			r.ending = true
			r.mapEvents(r.m.Flush(r.events[:0]))
			continue
		}
		rec := r.in.Record()
		if ask.Is(rec) && !r.pass {
			// The one shape of a question, whatever the dialect: it does
			// not place the stream.
			r.read++
			r.asked = true
			r.mapEvents(append(r.events[:0], Event{Kind: Question, JSON: rec}))
			continue
		}
		if joined, ok := splitPart(rec); ok {
			rec = joined
		}
		if part.Is(rec) {
			// The one shape of a part that is not text, whatever the
			// dialect, and in a stream that passes through too (checked,
			// capped, written in its one shape): it does not place the
			// stream either.
			r.read++
			r.shaped = true
			r.mapEvents(append(r.events[:0], Event{Kind: Part, JSON: rec}))
			continue
		}
		if !r.placed {
			r.place(rec)
		}
		if r.pass {
			r.cur = rec
			return true
		}
		var event string
		if e, ok := r.in.(EventType); ok {
			event = eventName(e.Event())
		}
		r.read++
		r.mapEvents(r.m.Map(r.events[:0], event, rec))
		if r.mapped == 0 && !r.shaped {
			// A record of the dialect that maps to nothing (an A2A task
			// still working) is not a mismatch.
			r.shaped = Detect(nil, []byte(event), rec) == r.dialect
		}
	}
}

// mapEvents takes the events of a record, or of the end, to write.
func (r *Records) mapEvents(events []Event) {
	r.events, r.next = events, 0
	r.mapped += len(events)
}

// end writes the lines of a clean end. A stream whose records all mapped
// to nothing, none of them shaped as the dialect's, was not in it: it ends
// with a *core.DialectError, not with an end that says it was answered.
func (r *Records) end() {
	r.done = true
	if r.read > 0 && r.mapped == 0 && !r.shaped {
		r.err = &core.DialectError{Dialect: string(r.dialect), Records: r.read}
		return
	}
	r.lines, r.err = r.emit.close(r.lines)
}

// place picks the mapper from the method's dialect, or detects it from the
// reply's header and its first record; it notes the dialect on the call.
func (r *Records) place(rec []byte) {
	r.placed = true
	d := r.dialect
	if d == config.DialectAuto {
		var h http.Header
		if hr, ok := r.in.(Header); ok {
			h = hr.Header()
		}
		var event []byte
		if e, ok := r.in.(EventType); ok {
			event = e.Event()
		}
		d = Detect(h, event, rec)
	}
	r.m = newMapper(d, r.max)
	r.pass = r.m == nil
	if r.notes != nil {
		if r.pass {
			r.notes.Dialect = string(config.DialectRaw)
		} else {
			r.notes.Dialect = string(d)
		}
	}
	if !r.pass {
		r.dialect = d
	}
}

// write turns an event into lines; an error ends the stream.
func (r *Records) write(e *Event) {
	switch {
	case e.Kind == Error && e.Err != nil:
		r.err = e.Err
		return
	case e.Kind == Error:
		r.err = &core.AgentError{Code: e.Code, Message: e.Text, Raw: string(e.JSON)}
		return
	case e.Kind == ToolCall && e.ID != "":
		r.tools.put(e.ID, e.Name, len(e.Name))
	case e.Kind == ToolResult && e.Name == "":
		e.Name, _ = r.tools.get(e.ID)
	case e.Kind == Question:
		if e.Question, r.err = ask.Parse(e.JSON, r.questionCap()); r.err != nil {
			return
		}
	case e.Kind == Part:
		if r.err = r.readPart(e); r.err != nil {
			return
		}
	}
	r.lines, r.err = r.emit.line(r.lines, e)
}

// readPart reads e's part record into e.Part and counts it: a malformed
// part is BAD_REPLY, one over limits.parts PART_TOO_LARGE.
func (r *Records) readPart(e *Event) error {
	p, err := part.Parse(e.JSON, r.parts.Limits())
	if err == nil {
		err = r.parts.Take(p)
	}
	if err != nil {
		return part.Agent(err)
	}
	e.Part = p
	return nil
}

// splitHead is how the deframer's text record of a JSON object begins,
// and splitPrefixes how it goes on when an SSE event's data is a part
// record cut over several data lines.
var (
	splitHead     = []byte(`{"output":"{\"`)
	splitPrefixes = [][]byte{[]byte(`inline_data\":`), []byte(`inlineData\":`), []byte(`file_data\":`), []byte(`fileData\":`)}
)

// splitPart is the part record of rec when rec is the deframer's text
// record ({"output": "<data>"}) of an SSE event whose data lines are a
// part record cut anywhere, even inside its base64: the line breaks that
// joined them are not JSON inside a string, so the deframer took the
// data for text. Without the breaks it is the record (base64 has none of
// its own). Any other record is not read past its first bytes.
func splitPart(rec []byte) ([]byte, bool) {
	if !bytes.HasPrefix(rec, splitHead) {
		return nil, false
	}
	split := false
	for _, p := range splitPrefixes {
		split = split || bytes.HasPrefix(rec[len(splitHead):], p)
	}
	if !split {
		return nil, false
	}
	var text string
	n := 0
	if !rawjson.Members(rec, func(k, v []byte) bool {
		n++
		return rawjson.Key(k) == "output" && json.Unmarshal(v, &text) == nil
	}) || n != 1 {
		return nil, false
	}
	joined, ok := rawjson.AppendCompact(nil, []byte(strings.ReplaceAll(text, "\n", "")))
	if !ok || !part.Is(joined) {
		return nil, false
	}
	return joined, true
}

// questionCap is the most a question record may be: limits.questions.bytes,
// and never more than a line out.
func (r *Records) questionCap() int64 {
	if r.maxQuestion > 0 && r.maxQuestion < int64(r.max) {
		return r.maxQuestion
	}
	return int64(r.max)
}

// eventName is an SSE event type as a string: one a mapper reads is
// interned, not copied per record.
func eventName(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := eventNames[string(b)]; ok {
		return s
	}
	return string(b)
}

// eventNames are the SSE event types of the dialects that send them
// (LangGraph's modes, the Responses API's events).
var eventNames = func() map[string]string {
	m := map[string]string{}
	for _, e := range []string{"metadata", "messages", "messages-tuple", "messages/partial", "messages/complete",
		"messages/metadata", "updates", "values", "custom", "events", "debug", "tasks", "checkpoints",
		"response.created", "response.in_progress", "response.output_item.added", "response.output_item.done",
		"response.content_part.added", "response.content_part.done", "response.output_text.delta",
		"response.output_text.done", "response.reasoning_text.delta", "response.reasoning_summary_text.delta",
		"response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.completed", "response.incomplete", "response.failed", "error"} {
		m[e] = e
	}
	return m
}()

// Record is the current line.
func (r *Records) Record() []byte { return r.cur }

// Event is the SSE event type of the current record while the stream
// passes through (the doors read it: core.Control), nil for a line the
// stage wrote.
func (r *Records) Event() []byte {
	if e, ok := r.in.(EventType); ok && r.pass {
		return e.Event()
	}
	return nil
}

// Err is the inner records' error, or the agent's error in its dialect.
func (r *Records) Err() error { return r.err }

// Close closes the inner records.
func (r *Records) Close() { r.in.Close() }

// BeforeWait passes the inner records' Waiter on.
func (r *Records) BeforeWait(f func()) {
	if w, ok := r.in.(core.Waiter); ok {
		w.BeforeWait(f)
	}
}

// Collect reads the whole stream into one output (the emitter's whole
// form: see docs/dialects.md), capped by what that output
// keeps: the lines of a stream are not kept. A stream that passes through
// is the array of its records, as a unary reply in SSE or ndjson is, or
// its one record when the reply was one JSON value; a question before
// the stream was placed is one of those records.
func (r *Records) Collect() (json.RawMessage, error) {
	var lines [][]byte
	var n int64
	for r.Next() {
		if !r.pass && r.placed {
			if r.maxReply > 0 && r.emit.kept() > r.maxReply {
				return nil, core.ErrReplyTooLarge
			}
			continue
		}
		if n += int64(len(r.cur)); r.maxReply > 0 && n > r.maxReply {
			return nil, core.ErrReplyTooLarge
		}
		lines = append(lines, append([]byte(nil), r.cur...))
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.maxReply > 0 && r.emit.kept() > r.maxReply {
		return nil, core.ErrReplyTooLarge
	}
	if r.pass || r.m == nil {
		if len(lines) == 1 && r.notes != nil && (r.notes.Reply == "json" || r.notes.Reply == "sniff") {
			return lines[0], nil
		}
		return joinArray(lines), nil
	}
	return r.emit.whole(), nil
}

func joinArray(lines [][]byte) json.RawMessage {
	b := []byte{'['}
	for i, l := range lines {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l...)
	}
	return append(b, ']')
}

var (
	_ core.Agent   = Agent{}
	_ core.Records = (*Records)(nil)
	_ core.Waiter  = (*Records)(nil)
)

package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// emitter writes events as lines of the method's emit. No line it writes
// is longer than its cap: text is cut into pieces that fit, and any other
// line that would not fit is errLineTooLarge. What it holds is what its
// next line needs, and, when it keeps the whole for a unary call, that.
type emitter interface {
	// line appends the lines of e to lines.
	line(lines [][]byte, e *Event) ([][]byte, error)
	// close appends the lines the clean end of the stream writes.
	close(lines [][]byte) ([][]byte, error)
	// whole is the output of a unary call: everything kept, as one value.
	whole() json.RawMessage
	// kept is about how long whole is so far: the bytes of what it keeps.
	kept() int64
}

// errLineTooLarge is an event whose line would be longer than the cap
// (a tool call, a tool result).
var errLineTooLarge = fmt.Errorf("a mapped line: %w", core.ErrRecordTooLarge)

// Lines of emit text, one JSON object each:
//
//	{"text":"…"}                                   a piece of the answer
//	{"reasoning":"…"}                              a piece of the reasoning
//	{"tool_call":{"id":…,"name":…,"args":…}}       a whole tool call
//	{"tool_result":{"id":…,"name":…,"output":…}}   a tool's result
//	{"input_required":{"message":…,"kind":…,…}}     the agent's question
//	{"inline_data":…}, {"file_data":…}, {"data":…}  a part that is not text
//	{"end":{"finish_reason":…,"usage":…}}          last, at a clean end
type textEmitter struct {
	max  int  // the longest line
	keep bool // keep the whole, for a unary call

	// text is the whole answer of a unary call as far as it goes,
	// escaped; reasoning the reasoning kept, escaped. Neither is ever
	// copied into a string to be marshalled, nor regrown: whole copies
	// them once into the answer.
	text, reasoning blocks
	calls, results  []json.RawMessage
	size            int64
	finish          string
	usage           json.RawMessage
	question        json.RawMessage   // the last question's input_required object
	parts           []json.RawMessage // the part records, in order
}

func (t *textEmitter) line(lines [][]byte, e *Event) ([][]byte, error) {
	switch e.Kind {
	case Text, Reasoning:
		if e.Text == "" {
			return lines, nil
		}
		key, b := "text", &t.text
		if e.Kind == Reasoning {
			key, b = "reasoning", &t.reasoning
		}
		if t.keep {
			n := escapedLen(e.Text)
			b.appendContents(e.Text, n)
			t.size += int64(n)
		}
		return textLines(lines, key, e.Text, t.max)
	case ToolCall:
		c := toolCallObject(nil, *e)
		if t.keep {
			t.calls = append(t.calls, c)
			t.size += int64(len(c))
		}
		return t.fit(lines, wrapLine("tool_call", c))
	case ToolResult:
		r := toolResultObject(nil, *e)
		if t.keep {
			t.results = append(t.results, r)
			t.size += int64(len(r))
		}
		return t.fit(lines, wrapLine("tool_result", r))
	case Question:
		rec := e.Question.Record()
		if t.keep {
			t.size += int64(len(rec) - len(t.question))
			t.question = rec[len(`{"input_required":`) : len(rec)-1]
		}
		return t.fit(lines, rec)
	case Part:
		// A part record already in its one shape is the line as it is: the
		// line is taken before the next record is read, and a part may be
		// megabytes. A kept one is copied, as the record will not last.
		rec := e.JSON
		if t.keep || !part.IsRecord(rec, e.Part) {
			rec = part.AppendRecord(nil, e.Part)
		}
		if t.keep {
			t.size += int64(len(rec)) + 1
			t.parts = append(t.parts, rec)
		}
		return t.fit(lines, rec)
	case End:
		if e.Finish != "" {
			t.finish = e.Finish
		}
		if e.Usage != nil {
			t.usage = e.Usage
		}
	}
	return lines, nil
}

// toolCallObject appends {"id":…,"name":…,"args":…} (no id when it has
// none), as encoding/json wrote toolCallLine.
func toolCallObject(b []byte, e Event) []byte {
	b = append(b, '{')
	if e.ID != "" {
		b = appendString(append(b, `"id":`...), e.ID)
		b = append(b, ',')
	}
	b = appendString(append(b, `"name":`...), e.Name)
	b = appendRaw(append(b, `,"args":`...), orEmpty(e.JSON))
	return append(b, '}')
}

// toolResultObject appends {"id":…,"name":…,"output":…} (no id or name
// when it has none), as encoding/json wrote toolResultLine.
func toolResultObject(b []byte, e Event) []byte {
	b = append(b, '{')
	if e.ID != "" {
		b = appendString(append(b, `"id":`...), e.ID)
		b = append(b, ',')
	}
	if e.Name != "" {
		b = appendString(append(b, `"name":`...), e.Name)
		b = append(b, ',')
	}
	b = appendRaw(append(b, `"output":`...), orNull(e.JSON))
	return append(b, '}')
}

// wrapLine is {"<key>":<v>}.
func wrapLine(key string, v []byte) []byte {
	b := make([]byte, 0, len(key)+len(v)+5)
	b = append(append(append(b, `{"`...), key...), `":`...)
	return append(append(b, v...), '}')
}

// appendRaw appends v, a JSON value, compacted as encoding/json writes a
// json.RawMessage; a v that is not JSON (no mapper makes one) is written
// as a JSON string of its text rather than as a broken line.
func appendRaw(b, v []byte) []byte {
	n := len(b)
	b, ok := rawjson.AppendCompact(b, v)
	if !ok {
		b = appendString(b[:n], string(v))
	}
	return b
}

// fit appends l when it is no longer than the cap.
func (t *textEmitter) fit(lines [][]byte, l []byte) ([][]byte, error) {
	if len(l) > t.max {
		return lines, errLineTooLarge
	}
	return append(lines, l), nil
}

// textLines appends {"<key>":"<s>"}, cut into as many lines as it takes
// for each to be at most max bytes.
func textLines(lines [][]byte, key, s string, max int) ([][]byte, error) {
	budget := max - len(`{"":""}`) - len(key)
	if s != "" && len(s) <= budget/6 {
		// One line however s escapes (a token): no need to measure it.
		l := append(make([]byte, 0, max-budget+len(s)+len(s)/4+8), `{"`...)
		l = append(append(l, key...), `":`...)
		return append(lines, append(appendString(l, s), '}')), nil
	}
	for s != "" {
		head, n := cut(s, budget)
		if head == "" {
			return lines, errLineTooLarge
		}
		l := append(make([]byte, 0, max-budget+n), `{"`...)
		l = append(append(l, key...), `":`...)
		lines = append(lines, append(appendString(l, head), '}'))
		s = s[len(head):]
	}
	return lines, nil
}

func (t *textEmitter) close(lines [][]byte) ([][]byte, error) {
	b := append(make([]byte, 0, 32+len(t.finish)+len(t.usage)), `{"end":{`...)
	if t.finish != "" {
		b = appendString(append(b, `"finish_reason":`...), t.finish)
	}
	if len(t.usage) > 0 {
		if t.finish != "" {
			b = append(b, ',')
		}
		b = appendRaw(append(b, `"usage":`...), t.usage)
	}
	return t.fit(lines, append(b, "}}"...))
}

// whole is {"text":…, "reasoning":…, "tool_calls":[…], "tool_results":[…],
// "input_required":{…}, "finish_reason":…, "usage":…}, empty keys left out
// but text: a unary call that asked has its question beside the text
// that came before it. The text,
// up to limits.reply_bytes, is copied once from its blocks into the
// answer, made at its size: marshal would hold it three times over (a
// string, its encoder's buffer, the bytes.Buffer), and one growing slice
// leaves each of its regrowths as garbage, about three times the answer
// at its peak.
func (t *textEmitter) whole() json.RawMessage {
	rest := marshal(struct {
		ToolCalls    []json.RawMessage `json:"tool_calls,omitempty"`
		ToolResults  []json.RawMessage `json:"tool_results,omitempty"`
		Parts        []json.RawMessage `json:"parts,omitempty"`
		Question     json.RawMessage   `json:"input_required,omitempty"`
		FinishReason string            `json:"finish_reason,omitempty"`
		Usage        json.RawMessage   `json:"usage,omitempty"`
	}{t.calls, t.results, t.parts, t.question, t.finish, t.usage})
	const textHead, reasoningHead = `{"text":"`, `","reasoning":"`
	size := len(textHead) + t.text.len() + len(`"`) + len(rest)
	if t.reasoning.len() > 0 {
		size += len(reasoningHead) + t.reasoning.len()
	}
	b := make([]byte, 0, size)
	b = t.text.appendTo(append(b, textHead...))
	if t.reasoning.len() > 0 {
		b = t.reasoning.appendTo(append(b, reasoningHead...))
	}
	b = append(b, '"')
	if len(rest) > len("{}") {
		b = append(append(b, ','), rest[1:]...)
	} else {
		b = append(b, '}')
	}
	t.text, t.reasoning = blocks{}, blocks{} // the answer's now
	return b
}

// blocks is text kept escaped, in blocks of at least blockSize bytes:
// growing it never copies what it holds.
type blocks struct {
	b [][]byte
	n int // the bytes held
}

// blockSize is the least a block holds: large enough that a long answer
// is a few hundred blocks, small enough that a short one wastes little.
const blockSize = 64 << 10

// appendContents appends s escaped as appendString escapes it, without
// its quotes; escaped is at least that length (escapedLen).
func (k *blocks) appendContents(s string, escaped int) {
	last := len(k.b) - 1
	if last < 0 || cap(k.b[last])-len(k.b[last]) < escaped {
		size := max(blockSize, escaped, k.n/8) // fewer blocks as it grows
		k.b = append(k.b, make([]byte, 0, size))
		last++
	}
	blk := k.b[last]
	n := len(blk)
	blk = rawjson.AppendContents(blk, s, rawjson.EscapeInvalid) // in place: the room is there
	k.n += len(blk) - n
	k.b[last] = blk
}

func (k *blocks) len() int { return k.n }

// appendTo appends the text kept to dst.
func (k *blocks) appendTo(dst []byte) []byte {
	for _, blk := range k.b {
		dst = append(dst, blk...)
	}
	return dst
}

func (t *textEmitter) kept() int64 { return t.size }

// appendString appends s as a JSON string as marshal writes it:
// encoding/json's escapes, without the HTML ones, an invalid byte as the
// escape \ufffd (cut counts it as six bytes).
func appendString(b []byte, s string) []byte {
	return rawjson.AppendString(b, s, rawjson.EscapeInvalid)
}

// escapedLen is at most how long s is inside a JSON string as marshal
// writes it.
func escapedLen(s string) int {
	_, n := cut(s, len(s)*6)
	return n
}

// cut is the longest start of s, cut between characters, that marshal
// writes in at most budget bytes inside a JSON string, and that length (at
// most: a character it may escape counts as escaped).
func cut(s string, budget int) (string, int) {
	n := 0
	for i := 0; i < len(s); {
		w, size := 1, 1
		switch c := s[i]; {
		case c == '"' || c == '\\':
			w = 2
		case c < 0x20:
			w = 6 // \u00XX, or \n: two
		case c >= utf8.RuneSelf:
			r, rs := utf8.DecodeRuneInString(s[i:])
			w, size = rs, rs
			if r == utf8.RuneError && rs == 1 || r == '\u2028' || r == '\u2029' {
				w = 6 // \ufffd, \u2028, \u2029
			}
		}
		if n+w > budget {
			return s[:i], n
		}
		n += w
		i += size
	}
	return s, n
}

func orEmpty(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("{}")
	}
	return v
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// marshal is v as compact JSON, "<", ">" and "&" left as they are; v is
// always marshalable here.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("dialect: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

package dialect

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/proxy/core"
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
//	{"end":{"finish_reason":…,"usage":…}}          last, at a clean end
type textEmitter struct {
	max  int  // the longest line
	keep bool // keep the whole, for a unary call

	text, reasoning strings.Builder
	calls, results  []json.RawMessage
	size            int64
	finish          string
	usage           json.RawMessage
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
			b.WriteString(e.Text)
			t.size += int64(escapedLen(e.Text))
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
// "finish_reason":…, "usage":…}, empty keys left out but text.
func (t *textEmitter) whole() json.RawMessage {
	return marshal(struct {
		Text         string            `json:"text"`
		Reasoning    string            `json:"reasoning,omitempty"`
		ToolCalls    []json.RawMessage `json:"tool_calls,omitempty"`
		ToolResults  []json.RawMessage `json:"tool_results,omitempty"`
		FinishReason string            `json:"finish_reason,omitempty"`
		Usage        json.RawMessage   `json:"usage,omitempty"`
	}{t.text.String(), t.reasoning.String(), t.calls, t.results, t.finish, t.usage})
}

func (t *textEmitter) kept() int64 { return t.size }

// adkEmitter writes ADK Event objects as the ADK api server's /run_sse
// sends them with streaming on: a partial event per piece of text, a
// complete event with the whole text of each model turn (before a tool
// call, and at the end), a function call or response event per tool call
// or result. A turn whose text would make its complete event longer than
// the cap gets a complete event each time it reaches it: the complete
// events' text is the partial events' text all the same.
type adkEmitter struct {
	author       string
	invocationID string
	snake        bool
	max          int  // the longest line
	keep         bool // keep the complete events, for a unary call

	pending  strings.Builder // the turn's text so far
	thought  strings.Builder // the turn's reasoning so far
	held     int             // pending and thought as escaped in a line
	overhead int             // a complete event's bytes but its text, once known
	complete []json.RawMessage
	size     int64

	newID func() string    // an event id
	now   func() time.Time // an event's timestamp
}

func newADKEmitter(author string, snake bool) *adkEmitter {
	return &adkEmitter{author: author, invocationID: "e-" + newID(), snake: snake, newID: newID, now: time.Now}
}

func (a *adkEmitter) key(camel, snake string) string {
	if a.snake {
		return snake
	}
	return camel
}

// adkPart is a part of an ADK event's content, in either key case, for
// eventID.
type adkPart map[string]any

// eventID is one ADK event of role with parts, as encoding/json writes it:
// the form the events written by hand (textEvent, functionEvent) are
// checked against, byte for byte (TestTextEventAsMarshal,
// TestFunctionEventAsMarshal). It is not used to write events: its maps
// and encoder cost tens of allocations an event.
func (a *adkEmitter) eventID(id, role string, partial bool, parts ...adkPart) []byte {
	ev := map[string]any{
		"content":                              map[string]any{"role": role, "parts": parts},
		"author":                               a.author,
		a.key("invocationId", "invocation_id"): a.invocationID,
		"id":                                   id,
		"timestamp":                            float64(a.now().UnixMicro()) / 1e6,
	}
	if partial {
		ev["partial"] = true
	}
	return marshal(ev)
}

// appendHead appends an event's start, up to its first part: the keys
// are in encoding/json's order for a map, as the ADK api server's events
// were written (author, content, id, invocationId, partial, timestamp).
func (a *adkEmitter) appendHead(b []byte) []byte {
	b = appendString(append(b, `{"author":`...), a.author)
	return append(b, `,"content":{"parts":[`...)
}

// appendTail appends an event's end, after its last part.
func (a *adkEmitter) appendTail(b []byte, role, id string, partial bool) []byte {
	b = append(append(append(b, `],"role":"`...), role...), `"},"id":`...)
	b = appendString(b, id)
	b = append(append(append(b, `,"`...), a.key("invocationId", "invocation_id")...), `":`...)
	b = appendString(b, a.invocationID)
	if partial {
		b = append(b, `,"partial":true`...)
	}
	b = append(b, `,"timestamp":`...)
	b = appendFloat(b, float64(a.now().UnixMicro())/1e6)
	return append(b, '}')
}

// functionEvent is a complete event of one function call (role model:
// {"functionCall":{"args":…,"id":…,"name":…}}) or response (role user:
// {"functionResponse":{"id":…,"name":…,"response":…}}).
func (a *adkEmitter) functionEvent(e Event) []byte {
	b := make([]byte, 0, a.textBudgetOverhead()+len(e.ID)+len(e.Name)+len(e.JSON)+32)
	b = a.appendHead(b)
	role := "model"
	if e.Kind == ToolCall {
		b = append(append(append(b, `{"`...), a.key("functionCall", "function_call")...), `":{"args":`...)
		b = appendArgs(b, e.JSON)
		b = appendString(append(b, `,"id":`...), e.ID)
	} else {
		role = "user"
		b = append(append(append(b, `{"`...), a.key("functionResponse", "function_response")...), `":{"id":`...)
		b = appendString(b, e.ID)
	}
	b = appendString(append(b, `,"name":`...), e.Name)
	if e.Kind == ToolResult {
		b = appendResponse(append(b, `,"response":`...), e.JSON)
	}
	b = append(b, "}}"...)
	return a.appendTail(b, role, a.newID(), false)
}

// textBudgetOverhead is a.overhead, once known.
func (a *adkEmitter) textBudgetOverhead() int {
	a.textBudget()
	return a.overhead
}

// textBudget is how much escaped text one event may carry: what a
// complete event with both a thought and a text part leaves of the cap (a
// partial event of one part needs less).
func (a *adkEmitter) textBudget() int {
	if a.overhead == 0 {
		// An id as newID makes them, and room for a longer one and a
		// longer timestamp.
		empty := a.appendHead(nil)
		empty = append(empty, `{"text":"","thought":true},{"text":""}`...)
		empty = a.appendTail(empty, "model", strings.Repeat("0", 16), true)
		a.overhead = len(empty) + 64
	}
	return a.max - a.overhead
}

func (a *adkEmitter) line(lines [][]byte, e *Event) ([][]byte, error) {
	switch e.Kind {
	case Text, Reasoning:
		budget := a.textBudget()
		for s := e.Text; s != ""; {
			head, n := cut(s, budget)
			if head == "" {
				return lines, errLineTooLarge
			}
			if a.held+n > budget {
				var err error
				if lines, err = a.flush(lines); err != nil {
					return lines, err
				}
			}
			var ev []byte
			if e.Kind == Reasoning {
				a.thought.WriteString(head)
				ev = a.textEvent(true, head, "", n)
			} else {
				a.pending.WriteString(head)
				ev = a.textEvent(true, "", head, n)
			}
			a.held += n
			lines = append(lines, ev)
			s = s[len(head):]
		}
		return lines, nil
	case ToolCall:
		lines, err := a.flush(lines)
		if err != nil {
			return lines, err
		}
		return a.completeEvent(lines, a.functionEvent(*e))
	case ToolResult:
		lines, err := a.flush(lines)
		if err != nil {
			return lines, err
		}
		return a.completeEvent(lines, a.functionEvent(*e))
	}
	return lines, nil
}

// completeEvent appends a complete event, when it fits, and keeps it for
// a unary call.
func (a *adkEmitter) completeEvent(lines [][]byte, ev []byte) ([][]byte, error) {
	if len(ev) > a.max {
		return lines, errLineTooLarge
	}
	if a.keep {
		a.complete = append(a.complete, ev)
		a.size += int64(len(ev))
	}
	return append(lines, ev), nil
}

// flush writes the complete event of the turn's text, if it has any.
func (a *adkEmitter) flush(lines [][]byte) ([][]byte, error) {
	if a.thought.Len() == 0 && a.pending.Len() == 0 {
		return lines, nil
	}
	ev := a.textEvent(false, a.thought.String(), a.pending.String(), a.held)
	a.thought.Reset()
	a.pending.Reset()
	a.held = 0
	return a.completeEvent(lines, ev)
}

// textEvent is the model's event of a thought and a text part (an empty
// one left out), as event writes it, written by hand into one buffer:
// its text may be most of the cap, and an encoder would copy it several
// times. escaped is at most how long the two are escaped.
func (a *adkEmitter) textEvent(partial bool, thought, text string, escaped int) []byte {
	b := make([]byte, 0, a.textBudgetOverhead()+escaped)
	b = a.appendHead(b)
	if thought != "" {
		b = append(b, `{"text":`...)
		b = appendString(b, thought)
		b = append(b, `,"thought":true}`...)
		if text != "" {
			b = append(b, ',')
		}
	}
	if text != "" {
		b = append(b, `{"text":`...)
		b = appendString(b, text)
		b = append(b, '}')
	}
	return a.appendTail(b, "model", a.newID(), partial)
}

// appendFloat appends f as encoding/json writes a float64.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString appends s as a JSON string as marshal writes it:
// encoding/json's escapes, without the HTML ones, an invalid byte as the
// escape \ufffd (cut counts it as six bytes).
func appendString(b []byte, s string) []byte {
	return rawjson.AppendString(b, s, rawjson.EscapeInvalid)
}

func (a *adkEmitter) close(lines [][]byte) ([][]byte, error) { return a.flush(lines) }

// whole is the array of the complete events (no partial ones).
func (a *adkEmitter) whole() json.RawMessage {
	if a.complete == nil {
		return json.RawMessage("[]")
	}
	return marshal(a.complete)
}

func (a *adkEmitter) kept() int64 { return a.size }

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

// appendArgs appends a function call's args: ADK wants an object, so
// anything else is {"value": …}.
func appendArgs(b []byte, v json.RawMessage) []byte {
	switch {
	case len(v) > 0 && v[0] == '{':
		return appendRaw(b, v)
	case len(v) == 0:
		return append(b, "{}"...)
	}
	return append(appendRaw(append(b, `{"value":`...), v), '}')
}

// appendResponse appends a function response: ADK wants an object, and
// wraps anything else as {"result": …} itself.
func appendResponse(b []byte, v json.RawMessage) []byte {
	if len(v) > 0 && v[0] == '{' {
		return appendRaw(b, v)
	}
	return append(appendRaw(append(b, `{"result":`...), orNull(v)), '}')
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

func newID() string {
	var b [8]byte
	var h [16]byte
	rand.Read(b[:])
	hex.Encode(h[:], b[:])
	return string(h[:])
}

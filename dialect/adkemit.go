package dialect

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/part"
)

// emit adk: the ADK api server's events, written by hand as
// encoding/json would write them.

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

// partEvent is the model's complete event of one inline or file part:
// {"inlineData":{"data":…,"displayName":…,"mimeType":…}} or
// {"fileData":{"displayName":…,"fileUri":…,"mimeType":…}}, keys in
// encoding/json's order for a map, the base64 as the agent sent it.
func (a *adkEmitter) partEvent(p *part.Part) []byte {
	b := make([]byte, 0, a.textBudgetOverhead()+len(p.Base64)+len(p.URI)+len(p.Name)+len(p.MIME)+64)
	b = a.appendHead(b)
	display := a.key("displayName", "display_name")
	mimeType := a.key("mimeType", "mime_type")
	if p.Kind == part.Inline {
		b = append(append(append(b, `{"`...), a.key("inlineData", "inline_data")...), `":{"data":"`...)
		b = append(append(b, p.Base64...), '"')
	} else {
		b = append(append(append(b, `{"`...), a.key("fileData", "file_data")...), `":{`...)
	}
	sep := func() {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
	}
	if p.Name != "" {
		sep()
		b = appendString(append(append(append(b, '"'), display...), `":`...), p.Name)
	}
	if p.Kind == part.File {
		sep()
		b = appendString(append(append(append(b, '"'), a.key("fileUri", "file_uri")...), `":`...), p.URI)
	}
	if p.MIME != "" {
		sep()
		b = appendString(append(append(append(b, '"'), mimeType...), `":`...), p.MIME)
	}
	b = append(b, "}}"...)
	return a.appendTail(b, "model", a.newID(), false)
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
	case Question:
		// The question as the agent asked it, its input_required record:
		// the one shape every caller of the contract reads, whatever the
		// emit (an ADK confirmation comes out so too).
		lines, err := a.flush(lines)
		if err != nil {
			return lines, err
		}
		return a.completeEvent(lines, e.Question.Record())
	case Part:
		// An inline or file part is the model's event with that part,
		// as an ADK agent's image comes; a data part, which ADK's Part
		// has no member for, is its part record, as a question is.
		lines, err := a.flush(lines)
		if err != nil {
			return lines, err
		}
		if e.Part.Kind == part.Data {
			return a.completeEvent(lines, part.AppendRecord(nil, e.Part))
		}
		return a.completeEvent(lines, a.partEvent(e.Part))
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

func (a *adkEmitter) close(lines [][]byte) ([][]byte, error) { return a.flush(lines) }

// whole is the array of the complete events (no partial ones).
func (a *adkEmitter) whole() json.RawMessage {
	if a.complete == nil {
		return json.RawMessage("[]")
	}
	return marshal(a.complete)
}

func (a *adkEmitter) kept() int64 { return a.size }

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

func newID() string {
	var b [8]byte
	var h [16]byte
	rand.Read(b[:])
	hex.Encode(h[:], b[:])
	return string(h[:])
}

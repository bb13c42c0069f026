package dialect

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// emitter writes events as lines of the method's emit.
type emitter interface {
	// line appends the lines of e to lines.
	line(lines [][]byte, e Event) [][]byte
	// close appends the lines the clean end of the stream writes.
	close(lines [][]byte) [][]byte
	// whole is the output of a unary call: everything emitted, as one
	// value.
	whole() json.RawMessage
}

// Lines of emit text, one JSON object each:
//
//	{"text":"…"}                                   a piece of the answer
//	{"reasoning":"…"}                              a piece of the reasoning
//	{"tool_call":{"id":…,"name":…,"args":…}}       a whole tool call
//	{"tool_result":{"id":…,"name":…,"output":…}}   a tool's result
//	{"end":{"finish_reason":…,"usage":…}}          last, at a clean end
type textEmitter struct {
	text, reasoning strings.Builder
	calls, results  []json.RawMessage
	finish          string
	usage           json.RawMessage
}

type toolCallLine struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type toolResultLine struct {
	ID     string          `json:"id,omitempty"`
	Name   string          `json:"name,omitempty"`
	Output json.RawMessage `json:"output"`
}

type endLine struct {
	FinishReason string          `json:"finish_reason,omitempty"`
	Usage        json.RawMessage `json:"usage,omitempty"`
}

func (t *textEmitter) line(lines [][]byte, e Event) [][]byte {
	switch e.Kind {
	case Text:
		if e.Text == "" {
			return lines
		}
		t.text.WriteString(e.Text)
		return append(lines, marshal(struct {
			Text string `json:"text"`
		}{e.Text}))
	case Reasoning:
		if e.Text == "" {
			return lines
		}
		t.reasoning.WriteString(e.Text)
		return append(lines, marshal(struct {
			Reasoning string `json:"reasoning"`
		}{e.Text}))
	case ToolCall:
		c := marshal(toolCallLine{e.ID, e.Name, orEmpty(e.JSON)})
		t.calls = append(t.calls, c)
		return append(lines, marshal(struct {
			ToolCall json.RawMessage `json:"tool_call"`
		}{c}))
	case ToolResult:
		r := marshal(toolResultLine{e.ID, e.Name, orNull(e.JSON)})
		t.results = append(t.results, r)
		return append(lines, marshal(struct {
			ToolResult json.RawMessage `json:"tool_result"`
		}{r}))
	case End:
		if e.Finish != "" {
			t.finish = e.Finish
		}
		if e.Usage != nil {
			t.usage = e.Usage
		}
	}
	return lines
}

func (t *textEmitter) close(lines [][]byte) [][]byte {
	return append(lines, marshal(struct {
		End endLine `json:"end"`
	}{endLine{t.finish, t.usage}}))
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

// adkEmitter writes ADK Event objects as the ADK api server's /run_sse
// sends them with streaming on: a partial event per piece of text, a
// complete event with the whole text of each model turn (before a tool
// call, and at the end), a function call or response event per tool call
// or result.
type adkEmitter struct {
	author       string
	invocationID string
	snake        bool
	pending      strings.Builder // the turn's text so far
	thought      strings.Builder // the turn's reasoning so far
	complete     []json.RawMessage

	newID func() string    // an event id
	now   func() time.Time // an event's timestamp
}

func newADKEmitter(author string, snake bool) *adkEmitter {
	return &adkEmitter{author: author, invocationID: "e-" + newID(), snake: snake, newID: newID, now: time.Now}
}

// adkPart is a part of an ADK event's content, in either key case.
type adkPart map[string]any

func (a *adkEmitter) key(camel, snake string) string {
	if a.snake {
		return snake
	}
	return camel
}

// event is one ADK event of role with parts.
func (a *adkEmitter) event(role string, partial bool, parts ...adkPart) []byte {
	ev := map[string]any{
		"content":                              map[string]any{"role": role, "parts": parts},
		"author":                               a.author,
		a.key("invocationId", "invocation_id"): a.invocationID,
		"id":                                   a.newID(),
		"timestamp":                            float64(a.now().UnixMicro()) / 1e6,
	}
	if partial {
		ev["partial"] = true
	}
	return marshal(ev)
}

func (a *adkEmitter) line(lines [][]byte, e Event) [][]byte {
	switch e.Kind {
	case Text:
		if e.Text == "" {
			return lines
		}
		a.pending.WriteString(e.Text)
		return append(lines, a.event("model", true, adkPart{"text": e.Text}))
	case Reasoning:
		if e.Text == "" {
			return lines
		}
		a.thought.WriteString(e.Text)
		return append(lines, a.event("model", true, adkPart{"text": e.Text, "thought": true}))
	case ToolCall:
		lines = a.flush(lines)
		ev := a.event("model", false, adkPart{a.key("functionCall", "function_call"): map[string]any{
			"id": e.ID, "name": e.Name, "args": argsObject(e.JSON)}})
		a.complete = append(a.complete, ev)
		return append(lines, ev)
	case ToolResult:
		lines = a.flush(lines)
		ev := a.event("user", false, adkPart{a.key("functionResponse", "function_response"): map[string]any{
			"id": e.ID, "name": e.Name, "response": responseObject(e.JSON)}})
		a.complete = append(a.complete, ev)
		return append(lines, ev)
	}
	return lines
}

// flush writes the complete event of the turn's text, if it has any.
func (a *adkEmitter) flush(lines [][]byte) [][]byte {
	var parts []adkPart
	if a.thought.Len() > 0 {
		parts = append(parts, adkPart{"text": a.thought.String(), "thought": true})
	}
	if a.pending.Len() > 0 {
		parts = append(parts, adkPart{"text": a.pending.String()})
	}
	a.thought.Reset()
	a.pending.Reset()
	if len(parts) == 0 {
		return lines
	}
	ev := a.event("model", false, parts...)
	a.complete = append(a.complete, ev)
	return append(lines, ev)
}

func (a *adkEmitter) close(lines [][]byte) [][]byte { return a.flush(lines) }

// whole is the array of the complete events (no partial ones).
func (a *adkEmitter) whole() json.RawMessage {
	if a.complete == nil {
		return json.RawMessage("[]")
	}
	return marshal(a.complete)
}

// argsObject is a function call's args: ADK wants an object.
func argsObject(v json.RawMessage) json.RawMessage {
	if len(v) > 0 && v[0] == '{' {
		return v
	}
	if len(v) == 0 {
		return json.RawMessage("{}")
	}
	return marshal(map[string]json.RawMessage{"value": v})
}

// responseObject is a function response: ADK wants an object, and wraps
// anything else as {"result": …} itself.
func responseObject(v json.RawMessage) json.RawMessage {
	if len(v) > 0 && v[0] == '{' {
		return v
	}
	return marshal(map[string]json.RawMessage{"result": orNull(v)})
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
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

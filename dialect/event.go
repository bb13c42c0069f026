package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/part"
)

// Kind is what an Event is.
type Kind uint8

// The kinds of Event.
const (
	// Text is a piece of the answer's text (Text).
	Text Kind = iota + 1
	// Reasoning is a piece of the model's reasoning (Text), kept apart
	// from the answer.
	Reasoning
	// ToolCall is a whole tool call: ID, Name and its arguments (JSON).
	ToolCall
	// ToolResult is a tool's result: ID, Name when known, its output
	// (JSON).
	ToolResult
	// End is the end of the run: Finish and Usage (JSON) when the dialect
	// has them. More records may follow (a usage chunk); the stream's own
	// end is what ends it.
	End
	// Error is an error the agent reported: Text is its message, Code its
	// code when it gave one, JSON the error object when it was one. With
	// Err set it is the stage's own (a tool call's arguments past the
	// cap), and Err is what the stream ends with.
	Error
	// Question is the agent asking a person (docs/questions.md): JSON is
	// its input_required record, compact, from the agent or made by the
	// mapper (ADK's tool confirmation); the stage reads it into Question,
	// bounded by limits.questions.bytes, before it is written.
	Question
	// Part is a part that is not text (docs/parts.md): JSON is its part
	// record, compact, from the agent or made by the mapper (an ADK
	// event's inline image); the stage reads it into Part, bounded by
	// limits.parts, before it is written.
	Part
)

// Event is one event of the normalized model every dialect maps into.
type Event struct {
	Kind     Kind
	Text     string
	ID, Name string
	JSON     json.RawMessage
	Finish   string
	Usage    json.RawMessage
	Code     string
	Err      error
	// Question is the question read from JSON (Kind Question).
	Question *ask.Question
	// Part is the part read from JSON (Kind Part).
	Part *part.Part
}

// Mapper reads one dialect. It may keep state between records (tool call
// arguments that arrive in pieces).
type Mapper interface {
	// Map appends to out the events of one record, compact JSON; event is
	// its SSE event type, "" for none.
	Map(out []Event, event string, rec []byte) []Event
	// Flush appends the events that the clean end of the stream completes
	// (tool calls still open).
	Flush(out []Event) []Event
}

// NewMapper returns the mapper of dialect d, nil for raw, auto or one it
// does not know. What it holds between records is capped at 8 MiB.
func NewMapper(d config.Dialect) Mapper { return newMapper(d, defaultMaxRecord) }

// defaultMaxRecord is limits.record_bytes' default.
const defaultMaxRecord = 8 << 20

// errArgsTooLarge ends a stream whose open tool calls' arguments pass the
// cap: the tool_call line could not be written.
var errArgsTooLarge = fmt.Errorf("tool call arguments: %w", core.ErrRecordTooLarge)

// newMapper is NewMapper with max, the cap on what the mapper holds
// between records (the open tool calls' arguments, a data stream line,
// the names and ids it remembers).
func newMapper(d config.Dialect, max int) Mapper {
	switch d {
	case config.DialectOpenAIChat:
		return &chatMapper{max: max}
	case config.DialectOpenAIResponses:
		return &responsesMapper{}
	case config.DialectOpenAIAgents:
		return &agentsMapper{}
	case config.DialectVercelUI:
		return &vercelMapper{names: table[string]{max: max}, v4: dataStream{max: max}}
	case config.DialectAGUI:
		return &aguiMapper{max: max, names: table[string]{max: max}}
	case config.DialectA2A:
		return &a2aMapper{}
	case config.DialectLangGraph:
		return &langgraphMapper{calls: chatMapper{max: max}, partial: table[int]{max: max}, complete: table[bool]{max: max}}
	case config.DialectADK:
		return &adkMapper{}
	case dialectText:
		return textMapper{}
	}
	return nil
}

// jsonOf is v as a JSON value: the text itself when it is JSON, else a
// JSON string of it; an empty text is {}.
func jsonOf(v string) json.RawMessage {
	if v == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(v)) {
		var b bytes.Buffer
		if json.Compact(&b, []byte(v)) == nil {
			return b.Bytes()
		}
	}
	return quote(v)
}

// quote is s as a JSON string.
func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// compact is v compacted, nil when it is empty or null.
func compact(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return nil
	}
	return b.Bytes()
}

// codeOf reads an error code that may be a string or a number.
func codeOf(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// errorEvent is an Error event from an error object with message and
// code keys (OpenAI's, JSON-RPC's), or a bare string.
func errorEvent(v json.RawMessage) Event {
	var e struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
		Type    string          `json:"type"`
	}
	if json.Unmarshal(v, &e) != nil {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return Event{Kind: Error, Text: s}
		}
		return Event{Kind: Error, Text: string(v)}
	}
	if e.Message == "" {
		e.Message = string(compact(v))
	}
	code := codeOf(e.Code)
	if code == "" {
		code = e.Type
	}
	return Event{Kind: Error, Text: e.Message, Code: code, JSON: compact(v)}
}

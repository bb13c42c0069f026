package dialect

import (
	"encoding/json"
	"strings"
)

// vercelMapper reads the Vercel AI SDK's UI message stream (v5 and later,
// PROTOCOLS.md §2.3): text from text-delta, reasoning from
// reasoning-delta, a tool call from tool-input-available, its result from
// tool-output-available (or tool-output-error), the end from finish or
// abort, an error from error. [DONE] ends the stream in the deframer.
//
// A text reply of the legacy v4 data stream protocol (its records
// {"output": "<chunk>"}) is read as that protocol (dataStream).
type vercelMapper struct {
	names table[string] // tool names by call id
	v4    dataStream
}

type vercelChunk struct {
	Type         string          `json:"type"`
	Delta        string          `json:"delta"`
	ToolCallID   string          `json:"toolCallId"`
	ToolName     string          `json:"toolName"`
	Input        json.RawMessage `json:"input"`
	Output       json.RawMessage `json:"output"`
	ErrorText    string          `json:"errorText"`
	FinishReason string          `json:"finishReason"`
	Reason       string          `json:"reason"`
}

func (m *vercelMapper) Map(out []Event, _ string, rec []byte) []Event {
	if chunk, ok := outputText(rec); ok {
		return m.v4.mapChunk(out, chunk)
	}
	var c vercelChunk
	if json.Unmarshal(rec, &c) != nil {
		return out
	}
	switch c.Type {
	case "text-delta":
		return append(out, Event{Kind: Text, Text: c.Delta})
	case "reasoning-delta":
		return append(out, Event{Kind: Reasoning, Text: c.Delta})
	case "tool-input-available":
		m.names.put(c.ToolCallID, c.ToolName, len(c.ToolName))
		return append(out, Event{Kind: ToolCall, ID: c.ToolCallID, Name: c.ToolName, JSON: orEmpty(compact(c.Input))})
	case "tool-output-available":
		name, _ := m.names.get(c.ToolCallID)
		return append(out, Event{Kind: ToolResult, ID: c.ToolCallID, Name: name, JSON: orNull(compact(c.Output))})
	case "tool-output-error":
		name, _ := m.names.get(c.ToolCallID)
		return append(out, Event{Kind: ToolResult, ID: c.ToolCallID, Name: name,
			JSON: marshal(map[string]string{"error": c.ErrorText})})
	case "error":
		return append(out, Event{Kind: Error, Text: c.ErrorText})
	case "finish":
		return append(out, Event{Kind: End, Finish: c.FinishReason})
	case "abort":
		return append(out, Event{Kind: End, Finish: strings.TrimSpace("abort " + c.Reason)})
	}
	return out
}

func (m *vercelMapper) Flush(out []Event) []Event { return m.v4.flush(out) }

package dialect

import (
	"encoding/json"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/part"
)

// vercelMapper reads the Vercel AI SDK's UI message stream (v5 and later,
// PROTOCOLS.md §2.3): text from text-delta, reasoning from
// reasoning-delta, a tool call from tool-input-available, its result from
// tool-output-available (or tool-output-error), a part that is not text
// from file (its url a data URL: the bytes inline; any other: a file
// part naming it), the end from finish or abort, an error from error. [DONE] ends the stream in the deframer.
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
	URL          string          `json:"url"`
	MediaType    string          `json:"mediaType"`
}

func (m *vercelMapper) Map(out []Event, event string, rec []byte) []Event {
	if out, ok := m.fast(out, rec); ok {
		return out
	}
	return m.slow(out, event, rec)
}

// fast maps a text or reasoning delta, a finish, or a chunk that maps to
// nothing, read in place (scan), and reports false for any other, or one
// it cannot read so.
func (m *vercelMapper) fast(out []Event, rec []byte) ([]Event, bool) {
	if chunk, ok := outputText(rec); ok {
		return m.v4.mapChunk(out, chunk), true
	}
	var s scan
	var typ, delta, finish string
	var seen uint32
	ok := s.top(rec, func(k []byte) {
		switch string(k) {
		case "type":
			s.once(&seen, 1)
			s.name(&typ, "text-delta", "reasoning-delta")
		case "delta":
			s.once(&seen, 2)
			s.str(&delta)
		case "toolCallId":
			s.once(&seen, 4)
			s.check()
		case "toolName":
			s.once(&seen, 8)
			s.check()
		case "errorText":
			s.once(&seen, 16)
			s.check()
		case "finishReason":
			s.once(&seen, 32)
			s.str(&finish)
		case "reason":
			s.once(&seen, 64)
			s.check()
		case "url", "mediaType":
			s.check()
		default: // input and output: json.RawMessage, any value
			s.other(k, "type", "delta", "toolCallId", "toolName", "input", "output", "errorText", "finishReason", "reason", "url", "mediaType")
		}
	})
	if !ok {
		return out, false
	}
	switch typ {
	case "text-delta":
		return append(out, Event{Kind: Text, Text: delta}), true
	case "reasoning-delta":
		return append(out, Event{Kind: Reasoning, Text: delta}), true
	case "finish":
		return append(out, Event{Kind: End, Finish: finish}), true
	case "tool-input-available", "tool-output-available", "tool-output-error", "error", "abort", "file":
		return out, false
	}
	return out, true
}

// slow maps a chunk decoded by encoding/json: every chunk as fast maps its
// own.
func (m *vercelMapper) slow(out []Event, _ string, rec []byte) []Event {
	if chunk, ok := outputTextSlow(rec); ok {
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
	case "file":
		return append(out, vercelFile(c.URL, c.MediaType))
	}
	return out
}

// vercelFile is the Part event of a file chunk: a data URL's bytes
// inline, as sent (the stage checks them against limits.parts), any
// other URL a file part naming it, never fetched.
func vercelFile(url, mediaType string) Event {
	p, ok, err := part.FromDataURL(url, "", config.Parts{})
	if !ok {
		p, err = part.NewFile(mediaType, "", url)
	}
	if err != nil {
		return Event{Kind: Error, Err: part.Agent(err)}
	}
	return Event{Kind: Part, JSON: part.AppendRecord(nil, p)}
}

func (m *vercelMapper) Flush(out []Event) []Event { return m.v4.flush(out) }

package dialect

import (
	"encoding/json"
	"strings"
)

// aguiMapper reads AG-UI events (PROTOCOLS.md §2.7): text from
// TEXT_MESSAGE_CONTENT and TEXT_MESSAGE_CHUNK, reasoning from the
// REASONING_* and THINKING_* content events, a tool call from
// TOOL_CALL_START, its ARGS and its END (or the chunks), its result from
// TOOL_CALL_RESULT, the end from RUN_FINISHED, an error from RUN_ERROR.
type aguiMapper struct {
	calls map[string]*aguiCall
	order []string          // call ids not yet ended, in start order
	last  string            // the last call id, for chunks that omit it
	names map[string]string // tool names by call id, for results
}

type aguiCall struct {
	name string
	args strings.Builder
}

type aguiEvent struct {
	Type         string          `json:"type"`
	Delta        string          `json:"delta"`
	ToolCallID   string          `json:"toolCallId"`
	ToolCallName string          `json:"toolCallName"`
	Content      json.RawMessage `json:"content"`
	Message      string          `json:"message"`
	Code         json.RawMessage `json:"code"`
	Result       json.RawMessage `json:"result"`
}

func (m *aguiMapper) Map(out []Event, _ string, rec []byte) []Event {
	var e aguiEvent
	if json.Unmarshal(rec, &e) != nil {
		return out
	}
	switch e.Type {
	case "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK":
		return append(out, Event{Kind: Text, Text: e.Delta})
	case "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_CHUNK", "THINKING_TEXT_MESSAGE_CONTENT":
		return append(out, Event{Kind: Reasoning, Text: e.Delta})
	case "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_CHUNK":
		id := e.ToolCallID
		if id == "" {
			id = m.last
		}
		c := m.call(id)
		if e.ToolCallName != "" {
			c.name = e.ToolCallName
		}
		c.args.WriteString(e.Delta)
	case "TOOL_CALL_END":
		return m.end(out, e.ToolCallID)
	case "TOOL_CALL_RESULT":
		out = m.end(out, e.ToolCallID) // a result ends its call, END or not
		content := compact(e.Content)
		var s string
		if json.Unmarshal(content, &s) == nil {
			content = jsonOf(s) // tools often answer JSON as a string
		}
		return append(out, Event{Kind: ToolResult, ID: e.ToolCallID, Name: m.names[e.ToolCallID], JSON: orNull(content)})
	case "RUN_FINISHED":
		out = m.Flush(out)
		return append(out, Event{Kind: End, Finish: "stop"})
	case "RUN_ERROR":
		return append(out, Event{Kind: Error, Text: e.Message, Code: codeOf(e.Code)})
	}
	return out
}

func (m *aguiMapper) call(id string) *aguiCall {
	if m.calls == nil {
		m.calls = map[string]*aguiCall{}
	}
	m.last = id
	c, ok := m.calls[id]
	if !ok {
		c = &aguiCall{}
		m.calls[id] = c
		m.order = append(m.order, id)
	}
	return c
}

// end emits the call id if it is open.
func (m *aguiMapper) end(out []Event, id string) []Event {
	c, ok := m.calls[id]
	if !ok {
		return out
	}
	delete(m.calls, id)
	if m.names == nil {
		m.names = map[string]string{}
	}
	m.names[id] = c.name
	for i, o := range m.order {
		if o == id {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	return append(out, Event{Kind: ToolCall, ID: id, Name: c.name, JSON: jsonOf(c.args.String())})
}

func (m *aguiMapper) Flush(out []Event) []Event {
	for len(m.order) > 0 {
		out = m.end(out, m.order[0])
	}
	return out
}

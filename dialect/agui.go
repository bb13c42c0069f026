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
// The open calls' names and arguments together are held up to max bytes:
// past it the stream ends with errArgsTooLarge.
type aguiMapper struct {
	calls map[string]*aguiCall
	order []string      // call ids in start order, some of them ended
	last  string        // the last call id, for chunks that omit it
	names table[string] // tool names by call id, for results
	held  int           // the bytes the open calls hold
	max   int
}

type aguiCall struct {
	name string
	args strings.Builder
	held int // the bytes it holds, counted in m.held
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

func (m *aguiMapper) Map(out []Event, event string, rec []byte) []Event {
	var e aguiEvent
	if !e.scan(rec) {
		return m.slow(out, event, rec)
	}
	return m.event(out, &e)
}

// scan reads an event that carries no JSON value (content, code, result)
// into e, in place, as encoding/json would decode it, and reports false
// for any other, or one it cannot read so.
func (e *aguiEvent) scan(rec []byte) bool {
	var s scan
	var seen uint32
	return s.top(rec, func(k []byte) {
		switch string(k) {
		case "type":
			s.once(&seen, 1)
			s.name(&e.Type, "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK", "TOOL_CALL_ARGS",
				"REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_CHUNK", "THINKING_TEXT_MESSAGE_CONTENT")
		case "delta":
			s.once(&seen, 2)
			s.str(&e.Delta)
		case "toolCallId":
			s.once(&seen, 4)
			s.str(&e.ToolCallID)
		case "toolCallName":
			s.once(&seen, 8)
			s.str(&e.ToolCallName)
		case "message":
			s.once(&seen, 16)
			s.str(&e.Message)
		case "content", "code", "result":
			s.bad = s.bad || !s.null()
		default:
			s.other(k, "type", "delta", "toolCallId", "toolCallName", "content", "message", "code", "result")
		}
	})
}

// slow maps an event decoded by encoding/json: every event as Map maps
// its own.
func (m *aguiMapper) slow(out []Event, _ string, rec []byte) []Event {
	var e aguiEvent
	if json.Unmarshal(rec, &e) != nil {
		return out
	}
	return m.event(out, &e)
}

// event maps a decoded event.
func (m *aguiMapper) event(out []Event, e *aguiEvent) []Event {
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
		max := m.max
		if max <= 0 {
			max = defaultMaxRecord
		}
		add := len(e.ToolCallName) + len(e.Delta)
		if m.held += add; m.held > max {
			return append(out, Event{Kind: Error, Err: errArgsTooLarge})
		}
		c.held += add
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
		name, _ := m.names.get(e.ToolCallID)
		return append(out, Event{Kind: ToolResult, ID: e.ToolCallID, Name: name, JSON: orNull(content)})
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
		c = &aguiCall{held: len(id) + entryCost}
		m.calls[id] = c
		m.held += c.held
		if len(m.order) > 2*len(m.calls)+16 {
			m.order = m.openOrder() // drop the ended ids, now and then
		}
		m.order = append(m.order, id)
	}
	return c
}

// openOrder is order without the calls that ended.
func (m *aguiMapper) openOrder() []string {
	open := m.order[:0]
	for _, id := range m.order {
		if _, ok := m.calls[id]; ok {
			open = append(open, id)
		}
	}
	clear(m.order[len(open):])
	return open
}

// end emits the call id if it is open.
func (m *aguiMapper) end(out []Event, id string) []Event {
	c, ok := m.calls[id]
	if !ok {
		return out
	}
	delete(m.calls, id)
	m.held -= c.held
	m.names.put(id, c.name, len(c.name))
	return append(out, Event{Kind: ToolCall, ID: id, Name: c.name, JSON: jsonOf(c.args.String())})
}

func (m *aguiMapper) Flush(out []Event) []Event {
	for _, id := range m.order {
		out = m.end(out, id) // an id ended already is skipped
	}
	m.order = m.order[:0]
	return out
}

package dialect

import (
	"encoding/json"
	"strings"
)

// langgraphMapper reads a LangGraph server's run stream (PROTOCOLS.md
// §1.4, §2.5), by SSE event type: "messages" (messages-tuple: each data
// a [chunk, metadata] pair, text from the chunk's content, tool call
// chunks accumulated by index), the JS SDK's "messages/partial" and
// "messages/complete" (whole messages so far: the text that grew),
// "updates" ({node: {messages: […]}}: each new message whole) and
// "values" (the whole state: the messages past those seen). With several
// modes at once (stream_mode: [messages, updates]) the finest one seen
// wins: once a messages event came, updates and values are skipped, and
// once an updates event came, values are. "metadata" and subgraph events
// ("updates|ns") are skipped; "error" ends the stream in the deframer.
type langgraphMapper struct {
	calls    chatMapper  // messages mode: tool call chunks
	partial  table[int]  // messages/partial: text length seen by message id
	complete table[bool] // messages/complete: ids whose calls are out
	values   int         // values mode: messages seen
	finest   int         // the finest mode seen: lgValues, …
}

// The modes, coarsest first.
const (
	lgValues = iota + 1
	lgUpdates
	lgMessages
)

var lgModes = map[string]int{
	"values": lgValues, "updates": lgUpdates,
	"messages": lgMessages, "messages-tuple": lgMessages, "messages/partial": lgMessages, "messages/complete": lgMessages,
}

type lgMessage struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"tool_calls"`
	ToolCallChunks []struct {
		Index *int   `json:"index"`
		ID    string `json:"id"`
		Name  string `json:"name"`
		Args  string `json:"args"`
	} `json:"tool_call_chunks"`
}

// text is the message's text: content as a string, or its text parts.
func (m *lgMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func (m *lgMessage) isAI() bool {
	return m.Type == "ai" || m.Type == "AIMessageChunk" || m.Type == "AIMessage"
}
func (m *lgMessage) isTool() bool { return m.Type == "tool" || m.Type == "ToolMessage" }

func (l *langgraphMapper) Map(out []Event, event string, rec []byte) []Event {
	return l.mapEvent(out, event, rec, true)
}

// slow is Map with every record decoded by encoding/json.
func (l *langgraphMapper) slow(out []Event, event string, rec []byte) []Event {
	return l.mapEvent(out, event, rec, false)
}

// mapEvent is Map; fast reads a messages chunk of text in place (scan)
// where it can.
func (l *langgraphMapper) mapEvent(out []Event, event string, rec []byte, fast bool) []Event {
	mode := lgModes[event]
	if mode < l.finest {
		return out // a coarser view of what a finer mode already said
	}
	l.finest = mode
	switch event {
	case "messages", "messages-tuple":
		if fast {
			if out, ok := lgFastChunk(out, rec); ok {
				return out
			}
		}
		var pair []json.RawMessage
		var msg lgMessage
		if json.Unmarshal(rec, &pair) != nil || len(pair) == 0 || json.Unmarshal(pair[0], &msg) != nil {
			return out
		}
		if msg.isTool() {
			out = l.calls.Flush(out)
			return append(out, toolResult(&msg))
		}
		if !msg.isAI() {
			return out
		}
		if len(msg.ToolCallChunks) == 0 && len(msg.ToolCalls) > 0 {
			// A message the model did not stream in pieces (a chat model's
			// invoke, @langchain/core's fake models): its tool calls whole.
			out = l.calls.Flush(out)
			return wholeMessage(out, &msg, true)
		}
		for _, c := range msg.ToolCallChunks {
			i := 0
			if c.Index != nil {
				i = *c.Index
			}
			if !l.calls.add(i, c.ID, c.Name, c.Args) {
				return append(out, Event{Kind: Error, Err: errArgsTooLarge})
			}
		}
		return append(out, Event{Kind: Text, Text: msg.text()})
	case "messages/partial":
		var msgs []lgMessage
		json.Unmarshal(rec, &msgs)
		for i := range msgs {
			m := &msgs[i]
			if !m.isAI() {
				continue
			}
			t := m.text()
			if seen, _ := l.partial.get(m.ID); len(t) > seen {
				out = append(out, Event{Kind: Text, Text: t[seen:]})
				l.partial.put(m.ID, len(t), 0)
			}
		}
	case "messages/complete":
		var msgs []lgMessage
		json.Unmarshal(rec, &msgs)
		for i := range msgs {
			m := &msgs[i]
			if _, done := l.complete.get(m.ID); done {
				continue
			}
			l.complete.put(m.ID, true, 0)
			if m.isAI() {
				if t, seen := m.text(), l.partialSeen(m.ID); len(t) > seen {
					out = append(out, Event{Kind: Text, Text: t[seen:]})
				}
			}
			out = wholeMessage(out, m, false)
		}
	case "updates":
		var nodes map[string]struct {
			Messages []lgMessage `json:"messages"`
		}
		json.Unmarshal(rec, &nodes)
		for _, n := range nodes {
			for i := range n.Messages {
				out = wholeMessage(out, &n.Messages[i], true)
			}
		}
	case "values":
		var state struct {
			Messages []lgMessage `json:"messages"`
		}
		json.Unmarshal(rec, &state)
		if len(state.Messages) > l.values {
			for i := range state.Messages[l.values:] {
				out = wholeMessage(out, &state.Messages[l.values+i], true)
			}
			l.values = len(state.Messages)
		}
	}
	return out
}

// lgFastChunk maps a messages event whose chunk is an AI message's text
// (content a string, no tool calls or tool call chunks) or a message that
// is neither AI nor tool, read in place (scan), and reports false for any
// other, or one it cannot read as encoding/json would decode it.
func lgFastChunk(out []Event, rec []byte) ([]Event, bool) {
	s := scan{b: rec}
	var m lgMessage
	var text string
	s.array(func(i int) {
		if i > 0 {
			return // the metadata: skipped, checked
		}
		var seen uint32
		s.object(func(k []byte) {
			switch string(k) {
			case "type":
				s.once(&seen, 1)
				s.name(&m.Type, "AIMessageChunk", "ai")
			case "id":
				s.once(&seen, 2)
				s.check()
			case "name":
				s.once(&seen, 4)
				s.check()
			case "tool_call_id":
				s.once(&seen, 8)
				s.check()
			case "content":
				s.once(&seen, 16)
				if s.peek() != '"' && !s.null() {
					s.bad = true // parts: left to encoding/json
					return
				}
				s.str(&text)
			case "tool_calls", "tool_call_chunks":
				if s.null() {
					return
				}
				s.array(func(int) { s.bad = true })
			default:
				s.other(k, "type", "id", "content", "name", "tool_call_id", "tool_calls", "tool_call_chunks")
			}
		})
	})
	s.space()
	if s.bad || s.i != len(rec) || s.i == 0 || rec[0] != '[' || m.isTool() {
		return out, false
	}
	if !m.isAI() {
		return out, true
	}
	return append(out, Event{Kind: Text, Text: text}), true
}

func (l *langgraphMapper) partialSeen(id string) int {
	n, _ := l.partial.get(id)
	return n
}

// wholeMessage maps a whole message: an AI message's text (when withText)
// and tool calls, a tool message's result.
func wholeMessage(out []Event, m *lgMessage, withText bool) []Event {
	switch {
	case m.isAI():
		if withText {
			out = append(out, Event{Kind: Text, Text: m.text()})
		}
		for _, c := range m.ToolCalls {
			out = append(out, Event{Kind: ToolCall, ID: c.ID, Name: c.Name, JSON: orEmpty(compact(c.Args))})
		}
	case m.isTool():
		out = append(out, toolResult(m))
	}
	return out
}

func toolResult(m *lgMessage) Event {
	content := compact(m.Content)
	var s string
	if json.Unmarshal(content, &s) == nil {
		content = jsonOf(s)
	}
	return Event{Kind: ToolResult, ID: m.ToolCallID, Name: m.Name, JSON: orNull(content)}
}

func (l *langgraphMapper) Flush(out []Event) []Event { return l.calls.Flush(out) }

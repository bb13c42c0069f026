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
// "values" (the whole state: the messages past those seen). "metadata"
// and subgraph events ("updates|ns") are skipped; "error" ends the stream
// in the deframer.
type langgraphMapper struct {
	calls    chatMapper      // messages mode: tool call chunks
	partial  map[string]int  // messages/partial: text length seen by message id
	complete map[string]bool // messages/complete: ids whose calls are out
	values   int             // values mode: messages seen
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
	switch event {
	case "messages", "messages-tuple":
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
		for _, c := range msg.ToolCallChunks {
			i := 0
			if c.Index != nil {
				i = *c.Index
			}
			call := l.calls.call(i)
			if c.ID != "" {
				call.id = c.ID
			}
			if c.Name != "" {
				call.name = c.Name
			}
			call.args.WriteString(c.Args)
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
			if l.partial == nil {
				l.partial = map[string]int{}
			}
			t := m.text()
			if seen := l.partial[m.ID]; len(t) > seen {
				out = append(out, Event{Kind: Text, Text: t[seen:]})
				l.partial[m.ID] = len(t)
			}
		}
	case "messages/complete":
		var msgs []lgMessage
		json.Unmarshal(rec, &msgs)
		for i := range msgs {
			m := &msgs[i]
			if l.complete[m.ID] {
				continue
			}
			if l.complete == nil {
				l.complete = map[string]bool{}
			}
			l.complete[m.ID] = true
			if m.isAI() {
				if t := m.text(); len(t) > l.partial[m.ID] {
					out = append(out, Event{Kind: Text, Text: t[l.partial[m.ID]:]})
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

// adkMapper reads ADK events (PROTOCOLS.md §2.6), in either key case:
// text from partial events, or from a complete event no partial text came
// before (the complete event after partials repeats them), thoughts as
// reasoning, function calls and responses as tool calls and results, an
// event with an error code as an error.
type adkMapper struct {
	partials bool // partial text seen since the last complete event
}

type adkPartIn struct {
	Text                  *string      `json:"text"`
	Thought               bool         `json:"thought"`
	FunctionCall          *adkFunction `json:"functionCall"`
	FunctionCallSnake     *adkFunction `json:"function_call"`
	FunctionResponse      *adkFunction `json:"functionResponse"`
	FunctionResponseSnake *adkFunction `json:"function_response"`
}

type adkFunction struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Response json.RawMessage `json:"response"`
}

func (a *adkMapper) Map(out []Event, _ string, rec []byte) []Event {
	var e struct {
		Content *struct {
			Parts []adkPartIn `json:"parts"`
		} `json:"content"`
		Partial           bool            `json:"partial"`
		ErrorCode         json.RawMessage `json:"errorCode"`
		ErrorCodeSnake    json.RawMessage `json:"error_code"`
		ErrorMessage      string          `json:"errorMessage"`
		ErrorMessageSnake string          `json:"error_message"`
		FinishReason      string          `json:"finishReason"`
		UsageMetadata     json.RawMessage `json:"usageMetadata"`
	}
	if json.Unmarshal(rec, &e) != nil {
		return out
	}
	if code := codeOf(e.ErrorCode) + codeOf(e.ErrorCodeSnake); code != "" {
		msg := e.ErrorMessage + e.ErrorMessageSnake
		if msg == "" {
			msg = code
		}
		return append(out, Event{Kind: Error, Text: msg, Code: code})
	}
	if e.Content == nil {
		return out
	}
	for _, p := range e.Content.Parts {
		switch {
		case p.Text != nil:
			if !e.Partial && a.partials {
				continue // the aggregate of the partials already out
			}
			kind := Text
			if p.Thought {
				kind = Reasoning
			}
			out = append(out, Event{Kind: kind, Text: *p.Text})
		case p.FunctionCall != nil || p.FunctionCallSnake != nil:
			f := p.FunctionCall
			if f == nil {
				f = p.FunctionCallSnake
			}
			out = append(out, Event{Kind: ToolCall, ID: f.ID, Name: f.Name, JSON: orEmpty(compact(f.Args))})
		case p.FunctionResponse != nil || p.FunctionResponseSnake != nil:
			f := p.FunctionResponse
			if f == nil {
				f = p.FunctionResponseSnake
			}
			out = append(out, Event{Kind: ToolResult, ID: f.ID, Name: f.Name, JSON: orNull(compact(f.Response))})
		}
	}
	a.partials = e.Partial
	if e.FinishReason != "" {
		out = append(out, Event{Kind: End, Finish: strings.ToLower(e.FinishReason), Usage: compact(e.UsageMetadata)})
	}
	return out
}

func (a *adkMapper) Flush(out []Event) []Event { return out }

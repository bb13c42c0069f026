package dialect

import (
	"encoding/json"
	"strings"
)

// chatMapper reads OpenAI Chat Completions chunks (PROTOCOLS.md §2.1):
// text from choices[0].delta.content, reasoning from
// delta.reasoning_content (the field several compatible servers add),
// tool calls accumulated by index until a finish_reason or the end, usage
// from the last chunk. [DONE] ends the stream in the deframer. The open
// calls' ids, names and arguments together are held up to max bytes: past
// it the stream ends with errArgsTooLarge.
type chatMapper struct {
	open  map[int]*chatCall
	order []int // the open calls' indexes, in the order they began
	held  int   // the bytes the open calls hold
	max   int
}

type chatCall struct {
	id, name string
	args     strings.Builder
}

type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (m *chatMapper) Map(out []Event, event string, rec []byte) []Event {
	if out, ok := m.fast(out, rec); ok {
		return out
	}
	return m.slow(out, event, rec)
}

// fast maps a chunk of text, reasoning or a finish_reason, read in place
// (scan), and reports false for any other, or one it cannot read so.
func (m *chatMapper) fast(out []Event, rec []byte) ([]Event, bool) {
	var s scan
	var content, reasoningContent, reasoning, finish string
	var seen, choiceSeen, deltaSeen uint32
	ok := s.top(rec, func(k []byte) {
		switch string(k) {
		case "choices":
			s.once(&seen, 1)
			s.array(func(i int) {
				if i > 0 {
					s.bad = true // n > 1: encoding/json reads them all
					return
				}
				s.object(func(k []byte) {
					switch string(k) {
					case "delta":
						s.once(&choiceSeen, 1)
						s.object(func(k []byte) {
							switch string(k) {
							case "content":
								s.once(&deltaSeen, 1)
								s.str(&content)
							case "reasoning_content":
								s.once(&deltaSeen, 2)
								s.str(&reasoningContent)
							case "reasoning":
								s.once(&deltaSeen, 4)
								s.str(&reasoning)
							case "tool_calls":
								s.once(&deltaSeen, 8)
								s.bad = s.bad || !s.null()
							default:
								s.other(k, "content", "reasoning_content", "reasoning", "tool_calls")
							}
						})
					case "finish_reason":
						s.once(&choiceSeen, 2)
						s.str(&finish)
					default:
						s.other(k, "delta", "finish_reason")
					}
				})
			})
		case "usage": // the last chunk, and errors: left to slow
			s.once(&seen, 2)
			s.bad = s.bad || !s.null()
		case "error":
			s.once(&seen, 4)
			s.bad = s.bad || !s.null()
		default:
			s.other(k, "choices", "usage", "error")
		}
	})
	if !ok {
		return out, false
	}
	if reasoningContent != "" || reasoning != "" {
		out = append(out, Event{Kind: Reasoning, Text: reasoningContent + reasoning})
	}
	if content != "" {
		out = append(out, Event{Kind: Text, Text: content})
	}
	if finish != "" {
		out = m.Flush(out)
		out = append(out, Event{Kind: End, Finish: finish})
	}
	return out, true
}

// slow maps a chunk decoded by encoding/json: every chunk as fast maps
// its own.
func (m *chatMapper) slow(out []Event, _ string, rec []byte) []Event {
	var c chatChunk
	if json.Unmarshal(rec, &c) != nil {
		return out
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return append(out, errorEvent(c.Error))
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		if r := d.ReasoningContent + d.Reasoning; r != "" {
			out = append(out, Event{Kind: Reasoning, Text: r})
		}
		if d.Content != "" {
			out = append(out, Event{Kind: Text, Text: d.Content})
		}
		for _, tc := range d.ToolCalls {
			if !m.add(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments) {
				return append(out, Event{Kind: Error, Err: errArgsTooLarge})
			}
		}
		if ch.FinishReason != "" {
			out = m.Flush(out)
			out = append(out, Event{Kind: End, Finish: ch.FinishReason})
		}
		break // choices[0]: n > 1 is not a chat
	}
	if u := compact(c.Usage); u != nil {
		out = append(out, Event{Kind: End, Usage: u})
	}
	return out
}

// add adds a piece of the call at index (its id and name when the piece
// has them), and reports false when the open calls would hold more than
// max.
func (m *chatMapper) add(index int, id, name, args string) bool {
	c := m.open[index]
	if c == nil {
		if m.open == nil {
			m.open = map[int]*chatCall{}
		}
		c = &chatCall{}
		m.open[index] = c
		m.order = append(m.order, index)
		m.held += entryCost
	}
	max := m.max
	if max <= 0 {
		max = defaultMaxRecord
	}
	if m.held += len(id) + len(name) + len(args); m.held > max {
		return false
	}
	if id != "" {
		c.id = id
	}
	if name != "" {
		c.name = name
	}
	c.args.WriteString(args)
	return true
}

func (m *chatMapper) Flush(out []Event) []Event {
	for _, i := range m.order {
		c := m.open[i]
		out = append(out, Event{Kind: ToolCall, ID: c.id, Name: c.name, JSON: jsonOf(c.args.String())})
	}
	clear(m.open)
	m.order, m.held = m.order[:0], 0
	return out
}

// responsesMapper reads OpenAI Responses API events (PROTOCOLS.md §2.2),
// by the data's type (the SSE event type is the same): text from
// response.output_text.delta, reasoning from the reasoning text and
// summary deltas, a tool call from each function_call output item when it
// is done, a generated image from each image_generation_call output item
// when it is done (its partial images are not the image: skipped), the
// end from response.completed or response.incomplete, an error from
// response.failed or an error event.
type responsesMapper struct{}

type responsesEvent struct {
	Type     string          `json:"type"`
	Delta    string          `json:"delta"`
	Message  string          `json:"message"`
	Code     json.RawMessage `json:"code"`
	Item     json.RawMessage `json:"item"`
	Response struct {
		Status            string          `json:"status"`
		Usage             json.RawMessage `json:"usage"`
		Error             json.RawMessage `json:"error"`
		IncompleteDetails struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	} `json:"response"`
}

func (m responsesMapper) Map(out []Event, event string, rec []byte) []Event {
	if out, ok := m.fast(out, event, rec); ok {
		return out
	}
	return m.slow(out, event, rec)
}

// fast maps a text or reasoning delta, or an event that maps to nothing,
// read in place (scan), and reports false for any other, or one it cannot
// read so.
func (responsesMapper) fast(out []Event, event string, rec []byte) ([]Event, bool) {
	typ, delta, ok := scanResponsesEvent(rec)
	if !ok {
		return out, false
	}
	if typ == "" {
		typ = event
	}
	switch typ {
	case "response.output_text.delta":
		return append(out, Event{Kind: Text, Text: delta}), true
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		return append(out, Event{Kind: Reasoning, Text: delta}), true
	case "response.output_item.done", "response.completed", "response.incomplete", "response.failed", "error":
		return out, false
	}
	return out, true
}

// scanResponsesEvent reads the type and delta of a Responses event as
// encoding/json decodes them into responsesEvent, when its response is
// null or absent; ok is false when it cannot read it so.
func scanResponsesEvent(rec []byte) (typ, delta string, ok bool) {
	var s scan
	var seen uint32
	ok = s.top(rec, func(k []byte) {
		switch string(k) {
		case "type":
			s.once(&seen, 1)
			s.name(&typ, "response.output_text.delta", "response.reasoning_text.delta", "response.reasoning_summary_text.delta")
		case "delta":
			s.once(&seen, 2)
			s.str(&delta)
		case "message":
			s.once(&seen, 4)
			s.check()
		case "response":
			s.once(&seen, 8)
			s.bad = s.bad || !s.null()
		default: // code and item: json.RawMessage, any value
			s.other(k, "type", "delta", "message", "code", "item", "response")
		}
	})
	return typ, delta, ok
}

// slow maps an event decoded by encoding/json: every event as fast maps
// its own.
func (responsesMapper) slow(out []Event, event string, rec []byte) []Event {
	var e responsesEvent
	if json.Unmarshal(rec, &e) != nil {
		return out
	}
	if e.Type == "" {
		e.Type = event
	}
	switch e.Type {
	case "response.output_text.delta":
		return append(out, Event{Kind: Text, Text: e.Delta})
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		return append(out, Event{Kind: Reasoning, Text: e.Delta})
	case "response.output_item.done":
		var item struct {
			Type         string          `json:"type"`
			CallID       string          `json:"call_id"`
			Name         string          `json:"name"`
			Arguments    string          `json:"arguments"`
			Output       json.RawMessage `json:"output"`
			Result       json.RawMessage `json:"result"`
			OutputFormat string          `json:"output_format"`
		}
		if json.Unmarshal(e.Item, &item) != nil {
			return out
		}
		switch item.Type {
		case "function_call":
			return append(out, Event{Kind: ToolCall, ID: item.CallID, Name: item.Name, JSON: jsonOf(item.Arguments)})
		case "image_generation_call":
			if len(item.Result) > 0 && item.Result[0] == '"' {
				return append(out, Event{Kind: Part, JSON: imageRecord(item.OutputFormat, item.Result)})
			}
		}
	case "response.completed":
		return append(out, Event{Kind: End, Finish: "stop", Usage: compact(e.Response.Usage)})
	case "response.incomplete":
		return append(out, Event{Kind: End, Finish: e.Response.IncompleteDetails.Reason, Usage: compact(e.Response.Usage)})
	case "response.failed":
		if compact(e.Response.Error) != nil {
			return append(out, errorEvent(e.Response.Error))
		}
		return append(out, Event{Kind: Error, Text: "response failed"})
	case "error":
		ev := Event{Kind: Error, Text: e.Message, Code: codeOf(e.Code), JSON: compact(rec)}
		if ev.Text == "" {
			ev.Text = string(rec)
		}
		return append(out, ev)
	}
	return out
}

func (responsesMapper) Flush(out []Event) []Event { return out }

// imageRecord is the part record of a generated image: result, its
// base64 as a JSON string, as sent; format the item's output_format (png,
// jpeg or webp; png when it says none).
func imageRecord(format string, result json.RawMessage) json.RawMessage {
	if format == "" {
		format = "png"
	}
	b := make([]byte, 0, len(result)+64)
	b = append(b, `{"inline_data":{"mime_type":`...)
	b = appendString(b, "image/"+format)
	b = append(append(append(b, `,"data":`...), result...), "}}"...)
	return b
}

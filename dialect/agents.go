package dialect

import (
	"encoding/json"
	"strings"
)

// agentsMapper reads the OpenAI Agents SDK's run stream (@openai/agents
// run(agent, input, {stream: true}), its RunStreamEvents written one per
// SSE data frame as JSON.stringify makes them): text from the model's
// output_text_delta events, reasoning from the reasoning deltas of its raw
// Responses events, the usage of each response_done, a tool call from
// each tool_called item, its result from each tool_output item, and the
// final output from a message_output_created item when no delta came
// before it (a model that did not stream its text). The SDK has no error
// event: a server reports a failed run as it likes (an `event: error`
// ends the stream in the deframer).
type agentsMapper struct {
	deltas bool // text deltas came since the last message item
}

type agentsEvent struct {
	Type string `json:"type"`
	Name string `json:"name"`
	Data struct {
		Type     string          `json:"type"`
		Delta    string          `json:"delta"`
		Event    json.RawMessage `json:"event"`
		Response struct {
			Usage json.RawMessage `json:"usage"`
		} `json:"response"`
	} `json:"data"`
	Item struct {
		Type    string `json:"type"`
		RawItem struct {
			Type      string          `json:"type"`
			CallID    string          `json:"callId"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Content   json.RawMessage `json:"content"`
			Output    json.RawMessage `json:"output"`
		} `json:"rawItem"`
		Output json.RawMessage `json:"output"`
	} `json:"item"`
}

func (m *agentsMapper) Map(out []Event, event string, rec []byte) []Event {
	if out, ok := m.fast(out, rec); ok {
		return out
	}
	return m.slow(out, event, rec)
}

// fast maps a raw model stream event without a response (a text delta,
// the provider's own event) or an event that maps to nothing, read in
// place (scan), and reports false for any other, or one it cannot read so.
func (m *agentsMapper) fast(out []Event, rec []byte) ([]Event, bool) {
	var s scan
	var typ, dataType, delta string
	var event []byte
	var seen, dataSeen uint32
	ok := s.top(rec, func(k []byte) {
		switch string(k) {
		case "type":
			s.once(&seen, 1)
			s.name(&typ, "raw_model_stream_event")
		case "name":
			s.once(&seen, 2)
			s.check()
		case "data":
			s.once(&seen, 4)
			s.object(func(k []byte) {
				switch string(k) {
				case "type":
					s.once(&dataSeen, 1)
					s.name(&dataType, "output_text_delta", "model")
				case "delta":
					s.once(&dataSeen, 2)
					s.str(&delta)
				case "event":
					s.once(&dataSeen, 4)
					event = s.raw()
				case "response":
					s.once(&dataSeen, 8)
					s.bad = s.bad || !s.null()
				default:
					s.other(k, "type", "delta", "event", "response")
				}
			})
		case "item":
			s.once(&seen, 8)
			s.bad = s.bad || !s.null()
		default:
			s.other(k, "type", "name", "data", "item")
		}
	})
	if !ok {
		return out, false
	}
	switch typ {
	case "raw_model_stream_event":
		switch dataType {
		case "output_text_delta":
			m.deltas = true
			return append(out, Event{Kind: Text, Text: delta}), true
		case "model":
			if event == nil {
				return out, true
			}
			t, d, ok := scanResponsesEvent(event)
			if !ok {
				return out, false
			}
			if strings.HasPrefix(t, "response.reasoning") && strings.HasSuffix(t, ".delta") {
				return append(out, Event{Kind: Reasoning, Text: d}), true
			}
		}
	case "run_item_stream_event":
		return out, false
	}
	return out, true
}

// slow maps an event decoded by encoding/json: every event as fast maps
// its own.
func (m *agentsMapper) slow(out []Event, _ string, rec []byte) []Event {
	var e agentsEvent
	if json.Unmarshal(rec, &e) != nil {
		return out
	}
	switch e.Type {
	case "raw_model_stream_event":
		switch e.Data.Type {
		case "output_text_delta":
			m.deltas = true
			return append(out, Event{Kind: Text, Text: e.Data.Delta})
		case "model":
			// The provider's own event, beside the SDK's: only its
			// reasoning, which the SDK does not stream otherwise.
			var raw responsesEvent
			if json.Unmarshal(e.Data.Event, &raw) == nil && strings.HasPrefix(raw.Type, "response.reasoning") && strings.HasSuffix(raw.Type, ".delta") {
				return append(out, Event{Kind: Reasoning, Text: raw.Delta})
			}
		case "response_done":
			if u := compact(e.Data.Response.Usage); u != nil {
				return append(out, Event{Kind: End, Usage: u})
			}
		}
	case "run_item_stream_event":
		raw := &e.Item.RawItem
		id := raw.CallID
		if id == "" {
			id = raw.ID
		}
		switch e.Name {
		case "tool_called":
			return append(out, Event{Kind: ToolCall, ID: id, Name: raw.Name, JSON: jsonOf(raw.Arguments)})
		case "tool_output":
			output := compact(e.Item.Output)
			var s string
			if json.Unmarshal(output, &s) == nil {
				output = jsonOf(s) // tools often answer JSON as a string
			}
			return append(out, Event{Kind: ToolResult, ID: id, Name: raw.Name, JSON: orNull(output)})
		case "message_output_created":
			if m.deltas {
				m.deltas = false
				return out // the text the deltas already gave
			}
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			json.Unmarshal(raw.Content, &parts)
			for _, p := range parts {
				if p.Type == "output_text" && p.Text != "" {
					out = append(out, Event{Kind: Text, Text: p.Text})
				}
			}
			// An empty message still says the run answered.
			return append(out, Event{Kind: End})
		}
	}
	return out
}

func (m *agentsMapper) Flush(out []Event) []Event { return out }

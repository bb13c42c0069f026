package dialect

import (
	"encoding/json"
	"strings"
)

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

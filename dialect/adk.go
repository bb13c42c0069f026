package dialect

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/ask"
)

// adkMapper reads ADK events (PROTOCOLS.md §2.6), in either key case:
// text from partial events, or from a complete event no partial text came
// before (the complete event after partials repeats them), thoughts as
// reasoning, function calls and responses as tool calls and results, an
// event with an error code as an error. A run that pauses for a person
// asks a question (adkQuestion): a tool confirmation
// (adk_request_confirmation), or a long-running tool's call (its id in
// the event's longRunningToolIds). A part's inlineData or fileData is a
// part that is not text (docs/parts.md).
type adkMapper struct {
	partials bool // partial text seen since the last complete event
}

type adkPartIn struct {
	Text                  *string         `json:"text"`
	Thought               bool            `json:"thought"`
	FunctionCall          *adkFunction    `json:"functionCall"`
	FunctionCallSnake     *adkFunction    `json:"function_call"`
	FunctionResponse      *adkFunction    `json:"functionResponse"`
	FunctionResponseSnake *adkFunction    `json:"function_response"`
	InlineData            json.RawMessage `json:"inlineData"`
	InlineDataSnake       json.RawMessage `json:"inline_data"`
	FileData              json.RawMessage `json:"fileData"`
	FileDataSnake         json.RawMessage `json:"file_data"`
}

type adkFunction struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args"`
	Response json.RawMessage `json:"response"`
}

func (a *adkMapper) Map(out []Event, event string, rec []byte) []Event {
	if out, ok := a.fast(out, rec); ok {
		return out
	}
	return a.slow(out, event, rec)
}

// fast maps an event whose parts are all text (a partial event, a turn's
// complete text) and that has no error, finish reason or usage, read in
// place (scan); it reports false for any other, or one it cannot read as
// encoding/json would decode it.
func (a *adkMapper) fast(out []Event, rec []byte) ([]Event, bool) {
	n := len(out)
	var s scan
	var partial, content bool
	var errorMessage, errorMessageSnake, finish string
	var seen uint32
	ok := s.top(rec, func(k []byte) {
		switch string(k) {
		case "content":
			s.once(&seen, 1)
			var contentSeen uint32
			content = s.object(func(k []byte) {
				switch string(k) {
				case "parts":
					s.once(&contentSeen, 1)
					s.array(func(int) { out = adkFastPart(&s, out) })
				default:
					s.other(k, "parts")
				}
			})
		case "partial":
			s.once(&seen, 2)
			s.boolean(&partial)
		case "errorCode", "error_code", "usageMetadata":
			s.bad = s.bad || !s.null()
		case "errorMessage":
			s.once(&seen, 4)
			s.str(&errorMessage)
		case "error_message":
			s.once(&seen, 8)
			s.str(&errorMessageSnake)
		case "finishReason":
			s.once(&seen, 16)
			s.str(&finish)
		default:
			s.other(k, "content", "partial", "errorCode", "error_code", "errorMessage", "error_message", "finishReason", "usageMetadata")
		}
	})
	if !ok || finish != "" {
		return out[:n], false
	}
	if !content {
		return out[:n], true
	}
	if !partial && a.partials {
		out = out[:n] // the aggregate of the partials already out
	}
	a.partials = partial
	return out, true
}

// adkFastPart reads a part at the cursor: its text, thought or not; any
// other part is bad.
func adkFastPart(s *scan, out []Event) []Event {
	var text string
	var hasText, thought bool
	var seen uint32
	s.object(func(k []byte) {
		switch string(k) {
		case "text":
			s.once(&seen, 1)
			hasText = !s.null()
			if hasText {
				s.str(&text)
			}
		case "thought":
			s.once(&seen, 2)
			s.boolean(&thought)
		case "functionCall", "function_call", "functionResponse", "function_response",
			"inlineData", "inline_data", "fileData", "file_data":
			s.bad = s.bad || !s.null()
		default:
			s.other(k, "text", "thought", "functionCall", "function_call", "functionResponse", "function_response",
				"inlineData", "inline_data", "fileData", "file_data")
		}
	})
	if !hasText {
		return out
	}
	kind := Text
	if thought {
		kind = Reasoning
	}
	return append(out, Event{Kind: kind, Text: text})
}

// slow maps an event decoded by encoding/json: every event as Map maps
// its own.
func (a *adkMapper) slow(out []Event, _ string, rec []byte) []Event {
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
		LongRunning       []string        `json:"longRunningToolIds"`
		LongRunningSnake  []string        `json:"long_running_tool_ids"`
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
			if f.Name == ConfirmationCall {
				out = append(out, Event{Kind: Question, JSON: ADKQuestion(f.ID, f.Name, f.Args)})
				continue
			}
			out = append(out, Event{Kind: ToolCall, ID: f.ID, Name: f.Name, JSON: orEmpty(compact(f.Args))})
			if f.ID != "" && (slices.Contains(e.LongRunning, f.ID) || slices.Contains(e.LongRunningSnake, f.ID)) {
				out = append(out, Event{Kind: Question, JSON: ADKQuestion(f.ID, f.Name, f.Args)})
			}
		case p.FunctionResponse != nil || p.FunctionResponseSnake != nil:
			f := p.FunctionResponse
			if f == nil {
				f = p.FunctionResponseSnake
			}
			out = append(out, Event{Kind: ToolResult, ID: f.ID, Name: f.Name, JSON: orNull(compact(f.Response))})
		case compact(p.InlineData) != nil || compact(p.InlineDataSnake) != nil:
			out = append(out, Event{Kind: Part, JSON: wrapLine("inline_data", orRaw(p.InlineData, p.InlineDataSnake))})
		case compact(p.FileData) != nil || compact(p.FileDataSnake) != nil:
			out = append(out, Event{Kind: Part, JSON: wrapLine("file_data", orRaw(p.FileData, p.FileDataSnake))})
		}
	}
	a.partials = e.Partial
	if e.FinishReason != "" {
		out = append(out, Event{Kind: End, Finish: strings.ToLower(e.FinishReason), Usage: compact(e.UsageMetadata)})
	}
	return out
}

func (a *adkMapper) Flush(out []Event) []Event { return out }

// orRaw is a, compact, unless it is empty or null; then b. An ADK part's
// inlineData is {mimeType, data, displayName} (data base64, URL-safe from
// the Python server), which the stage reads as a part record under
// either spelling.
func orRaw(a, b json.RawMessage) json.RawMessage {
	if c := compact(a); c != nil {
		return c
	}
	return compact(b)
}

// ConfirmationCall is the name of the function call by which ADK asks a
// person to approve a tool's call (a FunctionTool with
// requireConfirmation, or one that calls toolContext.requestConfirmation):
// its args are {originalFunctionCall, toolConfirmation: {hint, payload,
// confirmed}}, and the run goes on when the next user message carries
// its function response, {confirmed, payload}.
const ConfirmationCall = "adk_request_confirmation"

// InputCall is the name of the function call of ADK's own request_input
// tool (a long-running tool): the model asks the person its message, the
// answer shaped as its response_schema, and the run goes on when the next
// user message carries the call's function response.
const InputCall = "adk_request_input"

// ConfirmationSchema is the schema of a tool confirmation's answer, the
// response ADK reads (ToolConfirmation).
const ConfirmationSchema = `{"type":"object","properties":{"confirmed":{"type":"boolean"},"payload":{}},"required":["confirmed"]}`

// ADKQuestion is the input_required record of an ADK function call that
// pauses the run (id, name, args): a tool confirmation (ConfirmationCall)
// asks for {confirmed, payload}, its message the hint; ADK's request_input
// (InputCall) asks its message, shaped as its response_schema when that is
// an object's; any other call, a long-running tool's, asks for the tool's
// response, any object, its message naming the call. Its id is the call's, which the answer's
// function response names. The ADK preset checks an answer against it.
func ADKQuestion(id, name string, args json.RawMessage) json.RawMessage {
	q := struct {
		ID      string          `json:"id,omitempty"`
		Kind    string          `json:"kind"`
		Message string          `json:"message"`
		Schema  json.RawMessage `json:"schema"`
	}{ID: id, Kind: "form"}
	switch name {
	default:
		q.Message = name + "(" + string(orEmpty(compact(args))) + ") waits for its result"
		q.Schema = json.RawMessage(`{"type":"object"}`)
	case InputCall:
		var in struct {
			Message string          `json:"message"`
			Schema  json.RawMessage `json:"response_schema"`
		}
		json.Unmarshal(args, &in)
		q.Message = strings.TrimSpace(in.Message)
		if q.Message == "" {
			q.Message = "The agent asks for input"
		}
		q.Schema = json.RawMessage(`{"type":"object"}`)
		if c := compact(in.Schema); c != nil {
			// The model wrote it: taken only when it is an object's
			// schema the answer can be checked against.
			q.Schema = c
			if _, err := ask.Parse(marshal(struct {
				Q any `json:"input_required"`
			}{q}), 0); err != nil {
				q.Schema = json.RawMessage(`{"type":"object"}`)
			}
		}
	case ConfirmationCall:
		var confirm struct {
			Original *adkFunction `json:"originalFunctionCall"`
			Confirm  struct {
				Hint string `json:"hint"`
			} `json:"toolConfirmation"`
		}
		json.Unmarshal(args, &confirm)
		q.Message = strings.TrimSpace(confirm.Confirm.Hint)
		if q.Message == "" && confirm.Original != nil {
			q.Message = "Approve " + confirm.Original.Name + "(" + string(orEmpty(compact(confirm.Original.Args))) + ")?"
		}
		if q.Message == "" {
			q.Message = "Approve the tool call?"
		}
		q.Schema = json.RawMessage(ConfirmationSchema)
	}
	return marshal(struct {
		Q any `json:"input_required"`
	}{q})
}

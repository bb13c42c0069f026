package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// request is what the door reads of a chat completions or responses
// request: the method's input, whether it streams, the model asked for.
type request struct {
	model  string
	stream bool
	// usage: a chat completions stream ends with a usage chunk
	// (stream_options.include_usage).
	usage bool
	// message is the last user message's text and messages the history
	// in chat form, both JSON (input); previous a responses request's
	// previous_response_id, a JSON string, nil when it has none (scoped to
	// the caller by Open); parts the last user message's parts that are
	// not text, a JSON array of part records (partsOf), nil for none.
	message, messages, previous, parts []byte
}

// readRequest decodes body, a request of route: the model, stream, and
// what the method's input is made of (input), its parts checked against
// lim. A request it cannot read is the door's 400, naming the parameter
// (413 for a part over lim).
func readRequest(route string, body []byte, lim config.Parts) (request, *core.Answer) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return request{}, refusal(http.StatusBadRequest, "", "invalid_json",
			"the request body is not a JSON object (want e.g. {\"model\": …, \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}]})")
	}
	var req request
	if err := json.Unmarshal(fields["model"], &req.model); err != nil || req.model == "" {
		return request{}, refusal(http.StatusBadRequest, "model", "missing_model", "model is required: a string, the id GET /v1/models lists")
	}
	if s := fields["stream"]; len(s) > 0 && string(s) != "null" {
		if json.Unmarshal(s, &req.stream) != nil {
			return request{}, refusal(http.StatusBadRequest, "stream", "invalid_type", "stream must be true or false, not "+core.Clip(string(s)))
		}
	}
	var opts struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if json.Unmarshal(fields["stream_options"], &opts) == nil {
		req.usage = opts.IncludeUsage // else not asked: OpenAI's API ignores it without stream
	}
	var (
		messages []byte
		bad      *core.Answer
	)
	if route == RouteResponses {
		req.message, messages, req.parts, bad = readInput(fields["input"], lim)
		if p := bytes.TrimSpace(fields["previous_response_id"]); bad == nil && len(p) > 0 && string(p) != "null" {
			if p[0] != '"' || !json.Valid(p) {
				return request{}, refusal(http.StatusBadRequest, "previous_response_id", "invalid_type",
					"previous_response_id must be a string, not "+core.Clip(string(p)))
			}
			req.previous = p
		}
	} else {
		req.message, messages, req.parts, bad = readMessages(fields["messages"], lim)
	}
	if bad != nil {
		return request{}, bad
	}
	var ok bool
	if req.messages, ok = rawjson.AppendCompact(nil, messages); !ok {
		return request{}, refusal(http.StatusBadRequest, "messages", "invalid_value", "the messages nest too deeply")
	}
	return req, nil
}

// input is the method's input, the shape every conversational door gives
// (docs/doors.md): {"message": <the last user message's text>,
// "messages": <the history, chat messages>, "parts": [<the last user
// message's parts>], "ids": {<idKey>: <the answer's id>,
// "previous_response_id": …}}, parts left out when there are none. It is
// at most about twice the body: the last user message's text, and its
// parts, are in both.
func (req *request) input(idKey, id string) []byte {
	in := make([]byte, 0, len(req.message)+len(req.messages)+len(req.parts)+len(req.previous)+len(idKey)+len(id)+96)
	in = append(append(in, `{"message":`...), req.message...)
	in = append(append(in, `,"messages":`...), req.messages...)
	if req.parts != nil {
		in = append(append(in, `,"parts":`...), req.parts...)
	}
	in = append(append(append(append(in, `,"ids":{"`...), idKey...), `":`...), appendQuoted(nil, id)...)
	if req.previous != nil {
		in = append(append(in, `,"previous_response_id":`...), req.previous...)
	}
	return append(in, "}}"...)
}

// scopedString is the JSON string id scoped to owner (core.Owner.Scope),
// a JSON string; nil for nil.
func scopedString(owner core.Owner, id []byte) []byte {
	var s string
	if id == nil || json.Unmarshal(id, &s) != nil {
		return id
	}
	return appendQuoted(nil, owner.Scope(s))
}

// message is a chat message as the door reads it: its role and content.
type message struct {
	Role    string          `json:"role"`
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
}

// readMessages reads a chat completions request's messages: a non-empty
// array of messages with a role. message is the last user message's text
// as a JSON string, parts its parts that are not text (partsOf).
func readMessages(raw json.RawMessage, lim config.Parts) (text, messages, parts []byte, bad *core.Answer) {
	var list []message
	if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
		return nil, nil, nil, refusal(http.StatusBadRequest, "messages", "invalid_value",
			"messages is required: a non-empty array of {\"role\", \"content\"} objects")
	}
	for i, m := range list {
		if m.Role == "" {
			return nil, nil, nil, refusal(http.StatusBadRequest, fmt.Sprintf("messages[%d].role", i), "invalid_value",
				fmt.Sprintf("messages[%d] has no role (want user, assistant, system, developer or tool)", i))
		}
	}
	if text, parts, bad = lastUser(list, "messages", lim); bad != nil {
		return nil, nil, nil, bad
	}
	return text, raw, parts, nil
}

// readInput reads a responses request's input: a string, one user
// message, or an array of input items, the last user message's text taken
// as for chat. Its messages are the history in chat form: a string input
// [{"role": "user", "content": input}]; an array, each item with a role
// as {"role", "content"}, its content a string as sent, or its text
// parts' texts joined by newlines (Responses' parts are input_text and
// output_text, not chat's); items without one (function calls and their
// outputs, reasoning, references) are left out, and so are the parts
// that are not text: the last user message's are parts (partsOf).
func readInput(raw json.RawMessage, lim config.Parts) (text, messages, parts []byte, bad *core.Answer) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		messages = append(append([]byte(`[{"role":"user","content":`), raw...), "}]"...)
		return raw, messages, nil, nil
	}
	var list []message
	if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
		return nil, nil, nil, refusal(http.StatusBadRequest, "input", "invalid_value",
			"input is required: a string, or a non-empty array of input items ({\"role\": \"user\", \"content\": …})")
	}
	if text, parts, bad = lastUser(list, "input", lim); bad != nil {
		return nil, nil, nil, bad
	}
	messages = make([]byte, 0, len(raw))
	messages = append(messages, '[')
	for i, m := range list {
		if m.Role == "" {
			continue
		}
		content := []byte(`""`) // an assistant's item may have none
		if c := bytes.TrimSpace(m.Content); len(c) > 0 && string(c) != "null" {
			if content, bad = contentText(c, "input", i); bad != nil {
				return nil, nil, nil, bad
			}
		}
		if len(messages) > 1 {
			messages = append(messages, ',')
		}
		messages = append(appendQuoted(append(messages, `{"role":`...), m.Role), `,"content":`...)
		messages = append(append(messages, content...), '}')
	}
	return text, append(messages, ']'), parts, nil
}

// lastUser is the text of the last message of list whose role is user, as
// a JSON string (contentText), and its parts that are not text (partsOf).
func lastUser(list []message, param string, lim config.Parts) (text, parts []byte, bad *core.Answer) {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Role == "user" {
			if text, bad = contentText(list[i].Content, param, i); bad != nil {
				return nil, nil, bad
			}
			parts, bad = partsOf(list[i].Content, param, i, lim)
			return text, parts, bad
		}
	}
	return nil, nil, refusal(http.StatusBadRequest, param, "invalid_value", param+" has no user message: the agent is called with the last one's text")
}

// contentText is the text of a message's content, as a JSON string: the
// content when that is a string, else its text parts' texts (type text,
// input_text or output_text) joined by newlines. The text is the caller's
// JSON strings, never decoded and encoded again. A refusal names the
// content of item i of param.
func contentText(content json.RawMessage, param string, i int) ([]byte, *core.Answer) {
	c := bytes.TrimSpace(content)
	if len(c) > 0 && c[0] == '"' {
		return c, nil
	}
	var parts []struct {
		Type string          `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if len(c) == 0 || c[0] != '[' || json.Unmarshal(c, &parts) != nil {
		return nil, refusal(http.StatusBadRequest, fmt.Sprintf("%s[%d].content", param, i), "invalid_value",
			fmt.Sprintf("%s[%d].content must be a string or an array of content parts", param, i))
	}
	text := []byte{'"'}
	n := 0
	for _, p := range parts {
		if (p.Type == "text" || p.Type == "input_text" || p.Type == "output_text") && len(p.Text) > 0 && p.Text[0] == '"' {
			if n > 0 {
				text = append(text, `\n`...)
			}
			text = append(text, p.Text[1:len(p.Text)-1]...)
			n++
		}
	}
	return append(text, '"'), nil
}

// A piece of the answer, read from one record.
type piece struct {
	reasoning bool
	// text is a JSON string's contents, escaped, without its quotes.
	text []byte
	// part is a part that is not text (text nil), its bytes a slice of
	// the record.
	part *part.Part
}

// pieceOf is the piece of the answer one record is, ok false for a record
// that adds none. The mapping stage (emit: text) writes {"text": …} and
// {"reasoning": …}, and {"tool_call"}, {"tool_result"} and {"end"} lines
// that add none; a record it passed through (a stream it could not place,
// a stage not in front) is read as A2A reads one: an object with a string
// text member is that text, a JSON string its value, anything else its
// JSON as text.
func pieceOf(record []byte) (piece, bool) {
	record = bytes.TrimSpace(record)
	if len(record) == 0 {
		return piece{}, false
	}
	switch record[0] {
	case '"':
		if len(record) < 3 || record[len(record)-1] != '"' {
			return piece{}, false // "", or not a string
		}
		return piece{text: record[1 : len(record)-1]}, true
	case '{':
		if p := readPart(record); p != nil {
			return piece{part: p}, true
		}
		if ask.Is(record) {
			if q, err := ask.Parse(record, 0); err == nil {
				return piece{text: questionText(nil, q)}, true
			}
		}
		var text, reasoning []byte
		n, other := 0, false
		rawjson.Members(record, func(key, value []byte) bool {
			n++
			switch {
			case rawjson.KeyIs(key, "text") && len(value) > 1 && value[0] == '"':
				text = value
			case rawjson.KeyIs(key, "reasoning") && len(value) > 1 && value[0] == '"':
				reasoning = value
			case rawjson.KeyIs(key, "tool_call"), rawjson.KeyIs(key, "tool_result"), rawjson.KeyIs(key, "end"):
			default:
				other = true
			}
			return true
		})
		switch {
		case text != nil:
			return piece{text: text[1 : len(text)-1]}, len(text) > 2
		case reasoning != nil && n == 1:
			return piece{reasoning: true, text: reasoning[1 : len(reasoning)-1]}, len(reasoning) > 2
		case n == 1 && !other:
			return piece{}, false // a tool call, a tool result, the end
		}
	}
	return piece{text: escape(nil, record)}, true
}

// escape appends value, compact JSON, escaped as a JSON string's contents:
// compact JSON has no control character outside its strings, and its
// strings' are escaped, so only quotes and backslashes need one.
func escape(dst, value []byte) []byte {
	for _, c := range value {
		if c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}

// textOf is a unary output's text and reasoning, JSON strings' escaped
// contents, and its parts that are not text: the mapping stage's whole
// answer ({"text": …, "reasoning": …, "parts": […]}), or what it passed
// through (one record, or the array of a stream's records), each read as
// pieceOf reads a record. text may be a slice of out: not to append to.
func textOf(out []byte) (text, reasoning []byte, parts []*part.Part) {
	if o := bytes.TrimSpace(out); len(o) > 0 && o[0] == '{' {
		// The stage's whole answer, or an agent's object: a string text
		// member is the text, a string reasoning member beside it the
		// reasoning. Read in place: a string's contents are the same
		// compact or not, and the answer is not copied.
		found := false
		var question []byte
		rawjson.Members(o, func(key, value []byte) bool {
			if rawjson.KeyIs(key, ask.Key) {
				question = value
			}
			if rawjson.KeyIs(key, "parts") && len(value) > 0 && value[0] == '[' {
				var records []json.RawMessage
				json.Unmarshal(value, &records)
				for _, r := range records {
					if p := readPart(r); p != nil {
						parts = append(parts, p)
					}
				}
			}
			if len(value) > 1 && value[0] == '"' {
				switch {
				case rawjson.KeyIs(key, "text"):
					text, found = value[1:len(value)-1], true
				case rawjson.KeyIs(key, "reasoning"):
					reasoning = value[1 : len(value)-1]
				}
			}
			return true
		})
		if found && question != nil {
			// The stage's whole answer of a call that asked: the
			// question after the text.
			if q, err := ask.Parse(wrapQuestion(question), 0); err == nil {
				text = questionText(append([]byte(nil), text...), q)
			}
		}
		if found {
			return text, reasoning, parts
		}
		text, reasoning, parts = nil, nil, nil
	}
	// Anything else is written as JSON text: compact, so that escape
	// need escape only quotes and backslashes.
	if c, ok := rawjson.AppendCompact(nil, out); ok {
		out = c
	}
	add := func(record []byte) {
		if p, ok := pieceOf(record); ok && p.part != nil {
			parts = append(parts, p.part)
		} else if ok && p.reasoning {
			reasoning = append(reasoning, p.text...)
		} else if ok {
			text = append(text, p.text...)
		}
	}
	if len(out) > 0 && out[0] == '[' {
		var records []json.RawMessage
		if json.Unmarshal(out, &records) == nil {
			for _, r := range records {
				add(r)
			}
			return text, reasoning, parts
		}
	}
	add(out)
	return text, reasoning, parts
}

// questionText appends the text a question is in an answer, escaped as
// a JSON string's contents: its message, and for a url question a blank
// line and the link. OpenAI's API has no pause: the question is the
// assistant's text, and its answer the next user turn.
func questionText(dst []byte, q *ask.Question) []byte {
	dst = rawjson.AppendContents(dst, q.Message, rawjson.EscapeInvalid)
	if q.Kind == ask.KindURL && q.URL != "" {
		dst = rawjson.AppendContents(append(dst, `\n\n`...), q.URL, rawjson.EscapeInvalid)
	}
	return dst
}

// wrapQuestion is the record {"input_required": v}.
func wrapQuestion(v []byte) []byte {
	return append(append([]byte(`{"input_required":`), v...), '}')
}

// errorBody is OpenAI's error object: {"error": {"message", "type",
// "param", "code"}}, param null when empty.
func errorBody(message, typ, param, code string) []byte {
	type detail struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	}
	d := detail{Message: message, Type: typ, Code: code}
	if param != "" {
		d.Param = &param
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(struct {
		Error detail `json:"error"`
	}{d})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// errorType is the error object's type for an HTTP status, as OpenAI's
// API names them.
func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// failureBody is a failure's error object: its reason, lower case, as the
// code.
func failureBody(f core.Failure) []byte {
	return errorBody(f.Message, errorType(f.Status), "", strings.ToLower(f.Reason))
}

// writeFailure answers f before the first byte: its status, Retry-After
// when it has one, and its error object.
func writeFailure(w http.ResponseWriter, f core.Failure) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	w.WriteHeader(f.Status)
	w.Write(failureBody(f))
}

// refusal is the door's own answer to a request it refuses before the
// agent: status and OpenAI's error object.
func refusal(status int, param, code, message string) *core.Answer {
	return &core.Answer{Status: status, Outcome: metrics.BadRequest, Reason: refusalReasons[status],
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   errorBody(message, errorType(status), param, code)}
}

// refusalReasons are the log line's reasons of the statuses the door
// refuses with.
var refusalReasons = map[int]string{
	http.StatusBadRequest:   "BAD_REQUEST",
	http.StatusUnauthorized: "UNAUTHENTICATED",
	http.StatusNotFound:     "NOT_FOUND",
	// A caller's part over limits.parts.
	http.StatusRequestEntityTooLarge: "PART_TOO_LARGE",
}

package openai

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// chatBody is a chat completions request of model for the user's text.
func chatBody(model, text string, stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": model, "stream": stream,
		"messages": []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": text}}})
	return string(b)
}

// apiError is OpenAI's error object, read strictly: exactly error with
// message, type, param and code.
type apiError struct {
	Message, Type string
	Param, Code   *string
}

func readError(t *testing.T, body string) (apiError, bool) {
	t.Helper()
	var v map[string]map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &v) != nil || len(v) != 1 || v["error"] == nil || len(v["error"]) != 4 {
		return apiError{}, false
	}
	var e apiError
	for k, raw := range v["error"] {
		var err error
		switch k {
		case "message":
			err = json.Unmarshal(raw, &e.Message)
		case "type":
			err = json.Unmarshal(raw, &e.Type)
		case "param":
			err = json.Unmarshal(raw, &e.Param)
		case "code":
			err = json.Unmarshal(raw, &e.Code)
		default:
			return apiError{}, false
		}
		if err != nil {
			return apiError{}, false
		}
	}
	return e, e.Message != "" && e.Type != ""
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// events reads a text/event-stream body: each event's event type ("" for
// none) and data.
func events(t *testing.T, body string) (types, data []string) {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("stream %q does not end with a whole event", body)
	}
	for _, e := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		typ := ""
		if rest, ok := strings.CutPrefix(e, "event: "); ok {
			typ, e, _ = strings.Cut(rest, "\n")
		}
		d, ok := strings.CutPrefix(e, "data: ")
		if !ok || strings.Contains(d, "\n") || (d != "[DONE]" && !json.Valid([]byte(d))) {
			t.Fatalf("event %q is not [event: <type>] data: <one JSON value>", e)
		}
		types, data = append(types, typ), append(data, d)
	}
	return types, data
}

// chunkOf is a chat.completion.chunk's one choice.
type chunkOf struct {
	ID, Object, Model string
	Created           int64
	Choices           []struct {
		Index int
		Delta struct {
			Role, Content    *string
			ReasoningContent *string `json:"reasoning_content"`
		}
		FinishReason *string `json:"finish_reason"`
	}
}

// chatStream reads a chat completions stream: its content and reasoning,
// the number of content chunks, and whether it ended with finish_reason
// stop and [DONE]; it fails the test on a chunk out of shape.
func chatStream(t *testing.T, body string) (content, reasoning string, pieces int, done bool) {
	t.Helper()
	_, data := events(t, body)
	for i, d := range data {
		if d == "[DONE]" {
			if i != len(data)-1 {
				t.Fatalf("[DONE] is not the last event: %q", data)
			}
			return content, reasoning, pieces, true
		}
		var c chunkOf
		if json.Unmarshal([]byte(d), &c) != nil || c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") || len(c.Choices) != 1 {
			if _, ok := readError(t, d); ok && i == len(data)-1 {
				return content, reasoning, pieces, false
			}
			t.Fatalf("event %d %s is not a chat.completion.chunk", i, d)
		}
		ch := c.Choices[0]
		if i == 0 && (ch.Delta.Role == nil || *ch.Delta.Role != "assistant") {
			t.Errorf("first chunk %s has no role assistant", d)
		}
		if ch.Delta.Content != nil && *ch.Delta.Content != "" {
			content += *ch.Delta.Content
			pieces++
		}
		if ch.Delta.ReasoningContent != nil {
			reasoning += *ch.Delta.ReasoningContent
		}
		if ch.FinishReason != nil && (*ch.FinishReason != "stop" || i != len(data)-2) {
			t.Errorf("chunk %d of %d has finish_reason %q, want stop on the last before [DONE]", i, len(data), *ch.FinishReason)
		}
	}
	return content, reasoning, pieces, false
}

// TestChatCompletions: the method's input is the last user message's
// text and the messages; stream false answers a chat.completion, stream
// true its chunks and [DONE], whatever the method's mode.
func TestChatCompletions(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	input := s.serve(t, Options{Method: "input", Model: "m"})
	body := `{"model":"m","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},` +
		`{"role":"user","content":[{"type":"text","text":"a \"quoted\"\n"},{"type":"image_url","image_url":{"url":"https://example.com/x.png"}},{"type":"text","text":"b"}]}]}`
	resp, got := post(t, input+RouteChat, body)
	var c struct {
		Object  string
		Model   string
		Created int64
		Choices []struct {
			Index   int
			Message struct{ Role, Content string }
			Finish  string `json:"finish_reason"`
		}
		Usage map[string]int
	}
	if err := json.Unmarshal([]byte(got), &c); err != nil || resp.StatusCode != 200 || c.Object != "chat.completion" || c.Model != "m" ||
		c.Created == 0 || len(c.Choices) != 1 || c.Choices[0].Message.Role != "assistant" || c.Choices[0].Finish != "stop" || len(c.Usage) != 3 {
		t.Fatalf("chat.completion = %d %s (%v)", resp.StatusCode, got, err)
	}
	var in struct {
		Got struct {
			Message  string
			Messages json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(c.Choices[0].Message.Content), &in); err != nil || in.Got.Message != "a \"quoted\"\n\nb" {
		t.Errorf("the agent's input = %s (%v), want message: the last user message's text parts joined by a newline", c.Choices[0].Message.Content, err)
	}
	keyed := s.serve(t, Options{Method: "input", Model: "m", APIKey: "sekret", KeySet: true})
	if _, got := post(t, keyed+RouteChat, chatBody("m", "hi", false), "Authorization", "Bearer sekret"); !strings.Contains(got, `\"authorization\":null`) {
		t.Errorf("the door's key reached the agent: %s", got)
	}
	var sent struct{ Messages json.RawMessage }
	json.Unmarshal([]byte(body), &sent)
	if string(in.Got.Messages) != string(sent.Messages) {
		t.Errorf("the agent's messages = %s, want the request's %s", in.Got.Messages, sent.Messages)
	}

	// A unary method, streamed: its output as one piece.
	resp, got = post(t, s.serve(t, Options{Method: "unary"})+RouteChat, chatBody("unary", "hi", true))
	if content, _, pieces, done := chatStream(t, got); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" ||
		content != "echo: hi" || pieces != 1 || !done {
		t.Errorf("a unary method streamed = %d %q", resp.StatusCode, got)
	}
	// A streaming method, unary: the whole text, reasoning apart.
	resp, got = post(t, s.serve(t, Options{Method: "chat"})+RouteChat, chatBody("chat", "hi", false))
	if !strings.Contains(got, `"message":{"role":"assistant","content":"echo: hi","reasoning_content":"thinking"}`) {
		t.Errorf("a streaming method, unary = %d %s", resp.StatusCode, got)
	}
}

// TestDialects: whatever dialect the agent streams in, the mapping stage
// reads it, and its text arrives as content deltas (one per piece),
// reasoning as reasoning_content; a unary request gets the same text.
func TestDialects(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	for _, tt := range []struct {
		method, content, reasoning string
		pieces                     int
	}{
		{"chat", "echo: hi", "thinking", 2},
		{"vercel", "echo: hi", "thinking", 2},
		{"replay_chat", "Hello, world!", "", 2},
		{"replay_vercel", "Hello, world!", "", 3},
		{"replay_responses", "Hello, world!", "", 2},
		{"replay_agui", "Hello, world!Anything else?", "", 4},
	} {
		t.Run(tt.method, func(t *testing.T) {
			base := s.serve(t, Options{Method: tt.method, Model: "m"})
			resp, got := post(t, base+RouteChat, chatBody("m", "hi", true))
			content, reasoning, pieces, done := chatStream(t, got)
			if resp.StatusCode != 200 || content != tt.content || reasoning != tt.reasoning || pieces != tt.pieces || !done {
				t.Errorf("stream = %d: content %q in %d chunks, reasoning %q, done %v; want %q in %d, %q, done\n%s",
					resp.StatusCode, content, pieces, reasoning, done, tt.content, tt.pieces, tt.reasoning, got)
			}
			_, got = post(t, base+RouteChat, chatBody("m", "hi", false))
			var c struct {
				Choices []struct {
					Message struct {
						Content   string
						Reasoning *string `json:"reasoning_content"`
					}
				}
			}
			if json.Unmarshal([]byte(got), &c) != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content != tt.content ||
				(tt.reasoning != "") != (c.Choices[0].Message.Reasoning != nil) {
				t.Errorf("unary = %s, want content %q", got, tt.content)
			}
		})
	}
}

// TestResponses: POST /v1/responses, with input a string or items: the
// response object, or its events in order with sequence numbers from 0.
func TestResponses(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	base := s.serve(t, Options{Method: "chat", Model: "m"})
	resp, got := post(t, base+RouteResponses, `{"model":"m","input":"hi"}`)
	if resp.StatusCode != 200 || !strings.Contains(got, `"object":"response"`) || !strings.Contains(got, `"status":"completed"`) ||
		!strings.Contains(got, `"content":[{"type":"output_text","text":"echo: hi","annotations":[]}]`) {
		t.Errorf("response = %d %s", resp.StatusCode, got)
	}
	resp, got = post(t, base+RouteResponses, `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hey"}]}],"stream":true}`)
	types, data := events(t, got)
	want := "response.created response.in_progress response.output_item.added response.content_part.added response.output_text.delta " +
		"response.output_text.delta response.output_text.done response.content_part.done response.output_item.done response.completed"
	if resp.StatusCode != 200 || strings.Join(types, " ") != want {
		t.Fatalf("events = %d %q, want %s", resp.StatusCode, types, want)
	}
	var text string
	for i, d := range data {
		var e struct {
			Type  string
			Seq   int `json:"sequence_number"`
			Delta string
		}
		if json.Unmarshal([]byte(d), &e) != nil || e.Type != types[i] || e.Seq != i {
			t.Errorf("event %d %s: want type %s, sequence_number %d", i, d, types[i], i)
		}
		text += e.Delta
	}
	if text != "echo: hey" || !strings.Contains(data[len(data)-1], `"text":"echo: hey"`) {
		t.Errorf("deltas %q, completed %s; want echo: hey", text, data[len(data)-1])
	}

	input := s.serve(t, Options{Method: "input", Model: "m"})
	_, got = post(t, input+RouteResponses, `{"model":"m","input":"just \"this\""}`)
	if !strings.Contains(got, `{\"got\":{\"message\":\"just \\\"this\\\"\",\"messages\":[{\"role\":\"user\",\"content\":\"just \\\"this\\\"\"}],\"ids\":{\"response_id\":\"`+core.OwnerOf(http.Header{}).Scope("resp_")) {
		t.Errorf("a string input reached the agent as %s", got)
	}
}

// TestModels: GET /v1/models lists the model; HEAD too, without a body.
func TestModels(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	base := s.serve(t, Options{Method: "chat", Model: "price-agent"})
	resp, got := do(t, http.MethodGet, base+RouteModels, "")
	var l struct {
		Object string
		Data   []struct {
			ID, Object string
			OwnedBy    string `json:"owned_by"`
			Created    int64
		}
	}
	if json.Unmarshal([]byte(got), &l) != nil || resp.StatusCode != 200 || l.Object != "list" || len(l.Data) != 1 ||
		l.Data[0].ID != "price-agent" || l.Data[0].Object != "model" || l.Data[0].OwnedBy != "sidecar" || l.Data[0].Created == 0 {
		t.Errorf("models = %d %s", resp.StatusCode, got)
	}
	if resp, got := do(t, http.MethodHead, base+RouteModels, ""); resp.StatusCode != 200 || got != "" {
		t.Errorf("HEAD models = %d %q", resp.StatusCode, got)
	}
	if resp, got := do(t, http.MethodGet, base+RouteModels+"/price-agent", ""); resp.StatusCode != 200 ||
		!strings.HasPrefix(got, `{"id":"price-agent","object":"model","created":`) {
		t.Errorf("GET the model = %d %s", resp.StatusCode, got)
	}
	resp, got = do(t, http.MethodGet, base+RouteModels+"/gpt-4o", "")
	if e, ok := readError(t, got); resp.StatusCode != 404 || !ok || str(e.Code) != "model_not_found" {
		t.Errorf("GET another model = %d %s, want 404 model_not_found", resp.StatusCode, got)
	}
}

// TestErrors: every refusal before the first byte is OpenAI's error
// object with its status (and Retry-After on a 503); after it, a chat
// stream ends with one error event and no [DONE], a responses stream with
// response.failed.
func TestErrors(t *testing.T) {
	s := newSidecar(t, startAgent(t), "limits: {request_bytes: 8KiB}\n")
	base := s.serve(t, Options{Method: "chat", Model: "m"})
	keyed := s.serve(t, Options{Method: "chat", Model: "m", APIKey: "sekret", KeySet: true})
	for _, tt := range []struct {
		name, url, method, body string
		header                  []string
		status                  int
		typ, param, code        string
	}{
		{"not JSON", base + RouteChat, "POST", `{"model":`, nil, 400, "invalid_request_error", "<null>", "invalid_json"},
		{"not an object", base + RouteChat, "POST", `[1]`, nil, 400, "invalid_request_error", "<null>", "invalid_json"},
		{"no model", base + RouteChat, "POST", `{"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "model", "missing_model"},
		{"no messages", base + RouteChat, "POST", `{"model":"m"}`, nil, 400, "invalid_request_error", "messages", "invalid_value"},
		{"empty messages", base + RouteChat, "POST", `{"model":"m","messages":[]}`, nil, 400, "invalid_request_error", "messages", "invalid_value"},
		{"a message without role", base + RouteChat, "POST", `{"model":"m","messages":[{"role":"user","content":"a"},{"content":"b"}]}`, nil, 400, "invalid_request_error", "messages[1].role", "invalid_value"},
		{"no user message", base + RouteChat, "POST", `{"model":"m","messages":[{"role":"system","content":"a"}]}`, nil, 400, "invalid_request_error", "messages", "invalid_value"},
		{"content neither string nor parts", base + RouteChat, "POST", `{"model":"m","messages":[{"role":"user","content":5}]}`, nil, 400, "invalid_request_error", "messages[0].content", "invalid_value"},
		{"stream not a boolean", base + RouteChat, "POST", `{"model":"m","stream":"yes","messages":[{"role":"user","content":"a"}]}`, nil, 400, "invalid_request_error", "stream", "invalid_type"},
		{"responses without input", base + RouteResponses, "POST", `{"model":"m"}`, nil, 400, "invalid_request_error", "input", "invalid_value"},
		{"body over the limit", base + RouteChat, "POST", chatBody("m", strings.Repeat("x", 16<<10), false), nil, 413, "invalid_request_error", "<null>", "request_too_large"},
		{"unknown model", base + RouteChat, "POST", chatBody("gpt-4o", "hi", false), nil, 404, "invalid_request_error", "model", "model_not_found"},
		{"unknown model, responses", base + RouteResponses, "POST", `{"model":"x","input":"hi"}`, nil, 404, "invalid_request_error", "model", "model_not_found"},
		{"no route", base + "/v1/completions", "POST", `{}`, nil, 404, "invalid_request_error", "<null>", "not_found"},
		{"GET chat", base + RouteChat, "GET", ``, nil, 405, "invalid_request_error", "<null>", "method_not_allowed"},
		{"POST models", base + RouteModels, "POST", `{}`, nil, 405, "invalid_request_error", "<null>", "method_not_allowed"},
		{"no key", keyed + RouteChat, "POST", chatBody("m", "hi", false), nil, 401, "invalid_request_error", "<null>", "invalid_api_key"},
		{"wrong key", keyed + RouteChat, "POST", chatBody("m", "hi", false), []string{"Authorization", "Bearer sekret2"}, 401, "invalid_request_error", "<null>", "invalid_api_key"},
		{"key as Basic", keyed + RouteChat, "POST", chatBody("m", "hi", false), []string{"Authorization", "Basic sekret"}, 401, "invalid_request_error", "<null>", "invalid_api_key"},
		{"models without key", keyed + RouteModels, "GET", ``, nil, 401, "invalid_request_error", "<null>", "invalid_api_key"},
		{"a foreign Origin", base + RouteChat, "POST", chatBody("m", "hi", false), []string{"Origin", "https://evil.example"}, 403, "invalid_request_error", "<null>", "permission_denied"},
		{"an agent failing before the first byte", s.serve(t, Options{Method: "down", Model: "m"}) + RouteChat, "POST", chatBody("m", "hi", true), nil, 500, "server_error", "<null>", "agent_status"},
	} {
		resp, got := do(t, tt.method, tt.url, tt.body, tt.header...)
		e, ok := readError(t, got)
		if resp.StatusCode != tt.status || !ok || e.Type != tt.typ || str(e.Param) != tt.param || str(e.Code) != tt.code ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s, want %d {type %s, param %s, code %s}", tt.name, resp.StatusCode, got, tt.status, tt.typ, tt.param, tt.code)
		}
		if tt.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tt.name)
		}
		if tt.status == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s: 405 without Allow", tt.name)
		}
	}
	for _, h := range []string{"Bearer sekret", "bearer  sekret"} {
		if resp, got := post(t, keyed+RouteChat, chatBody("m", "hi", false), "Authorization", h); resp.StatusCode != 200 {
			t.Errorf("Authorization %q = %d %s, want 200", h, resp.StatusCode, got)
		}
	}
	if resp, got := post(t, base+RouteChat, chatBody("m", "hi", false), "Origin", strings.Replace(base, "127.0.0.1", "127.0.0.1", 1)); resp.StatusCode != 200 {
		t.Errorf("the door's own Origin = %d %s, want 200", resp.StatusCode, got)
	}
	if resp, got := do(t, http.MethodGet, keyed+RouteHealth, ""); resp.StatusCode != 200 {
		t.Errorf("/healthz without the key = %d %s, want 200 (no key on health)", resp.StatusCode, got)
	}

	// After the first byte: the chat stream's last event is the error,
	// with no [DONE]; the responses stream's response.failed.
	fail := s.serve(t, Options{Method: "fail", Model: "m"})
	resp, got := post(t, fail+RouteChat, chatBody("m", "hi", true))
	_, data := events(t, got)
	if e, ok := readError(t, data[len(data)-1]); resp.StatusCode != 200 || !ok || e.Message != "the model is overloaded" || e.Type != "server_error" ||
		strings.Contains(got, "[DONE]") || strings.Count(got, `"error"`) != 1 {
		t.Errorf("a chat stream the agent fails = %d %s, want its partial text, one error event, no [DONE]", resp.StatusCode, got)
	}
	resp, got = post(t, fail+RouteResponses, `{"model":"m","input":"hi","stream":true}`)
	types, data := events(t, got)
	if resp.StatusCode != 200 || types[len(types)-1] != "response.failed" || strings.Contains(got, "response.completed") ||
		!strings.Contains(data[len(data)-1], `"status":"failed","error":{"code":"agent_error","message":"the model is overloaded"}`) {
		t.Errorf("a responses stream the agent fails = %d %s, want response.failed last", resp.StatusCode, got)
	}
	resp, got = post(t, fail+RouteChat, chatBody("m", "hi", false))
	if e, ok := readError(t, got); resp.StatusCode != 502 || !ok || e.Message != "the model is overloaded" || e.Type != "server_error" {
		t.Errorf("a unary call the agent fails = %d %s, want 502 with its message", resp.StatusCode, got)
	}
}

// TestHostGuard: on a loopback listener, a Host that is not a loopback
// name (DNS rebinding) is refused, on every route; a loopback name with
// any port or none (a tunnel's: kubectl port-forward, ssh -L) is served.
func TestHostGuard(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	base := s.serve(t, Options{Method: "chat", Model: "m"})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	for host, want := range map[string]int{
		"evil.example:" + port: 403, "evil.example": 403, "localhost:1": 200, "localhost": 200, "[::1]": 200, "127.0.0.1.nip.io:" + port: 403,
		"localhost:" + port: 200, "127.0.0.1:" + port: 200, "[::1]:" + port: 200, "LOCALHOST:" + port: 200,
	} {
		for _, path := range []string{RouteModels, RouteHealth} {
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			bufio.NewReader(resp.Body).WriteTo(&b)
			conn.Close()
			if e, ok := readError(t, b.String()); resp.StatusCode != want || (want == 403 && (!ok || str(e.Code) != "permission_denied")) {
				t.Errorf("GET %s with Host %s = %d %s, want %d", path, host, resp.StatusCode, b.String(), want)
			}
		}
	}
}

// TestGate: the shared gate's refusals in OpenAI's shape: busy (every
// slot taken, no queue) and draining are 503 with Retry-After, which the
// openai clients honour when they retry.
func TestGate(t *testing.T) {
	s := newSidecar(t, startAgent(t), "limits: {concurrency: 1, queue: 0}\n")
	base := s.serve(t, Options{Method: "hold", Model: "m"})
	req, _ := http.NewRequest(http.MethodPost, base+RouteChat, strings.NewReader(chatBody("m", "hi", true)))
	req.Header.Set("Content-Type", "application/json")
	held, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	first, err := bufio.NewReader(held.Body).ReadString('\n') // the role chunk: the call holds the slot
	if err != nil || !strings.HasPrefix(first, "data: ") {
		t.Fatalf("the held stream began %q (%v)", first, err)
	}
	resp, got := post(t, base+RouteChat, chatBody("m", "hi", false))
	if e, ok := readError(t, got); resp.StatusCode != 503 || !ok || str(e.Code) != "busy" || e.Type != "server_error" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a call while busy = %d %s (Retry-After %q), want 503 busy with Retry-After", resp.StatusCode, got, resp.Header.Get("Retry-After"))
	}
	s.Drain()
	resp, got = post(t, base+RouteResponses, `{"model":"m","input":"hi"}`)
	if e, ok := readError(t, got); resp.StatusCode != 503 || !ok || str(e.Code) != "shutting_down" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a call while draining = %d %s, want 503 shutting_down with Retry-After", resp.StatusCode, got)
	}
}

// TestReplyCap: what the door keeps of an answer is capped by
// limits.reply_bytes: a unary answer past it is 502 reply_too_large, a
// streamed response (whose closing events carry the whole text) ends
// failed with it and ends the agent's call; a chat stream keeps nothing,
// and streams it all.
func TestReplyCap(t *testing.T) {
	s := newSidecar(t, startAgent(t), "limits: {reply_bytes: 16KiB}\n")
	base := s.serve(t, Options{Method: "big", Model: "m"}) // 64 deltas of 1 KiB
	resp, got := post(t, base+RouteChat, chatBody("m", "hi", false))
	if e, ok := readError(t, got); resp.StatusCode != 502 || !ok || str(e.Code) != "reply_too_large" {
		t.Errorf("a 64 KiB unary answer over a 16 KiB cap = %d %.300s, want 502 reply_too_large", resp.StatusCode, got)
	}
	resp, got = post(t, base+RouteResponses, `{"model":"m","input":"hi"}`)
	if e, ok := readError(t, got); resp.StatusCode != 502 || !ok || str(e.Code) != "reply_too_large" {
		t.Errorf("a 64 KiB unary response over a 16 KiB cap = %d %.300s, want 502 reply_too_large", resp.StatusCode, got)
	}
	resp, got = post(t, base+RouteResponses, `{"model":"m","input":"hi","stream":true}`)
	types, data := events(t, got)
	deltas := strings.Count(strings.Join(types, " "), "response.output_text.delta")
	if resp.StatusCode != 200 || types[len(types)-1] != "response.failed" || strings.Contains(got, "response.completed") ||
		!strings.Contains(data[len(data)-1], `"code":"reply_too_large"`) || deltas > 16 || deltas < 15 {
		t.Errorf("a 64 KiB streamed response over a 16 KiB cap = %d: %d deltas, events %q, want at most 16 KiB of deltas then response.failed reply_too_large",
			resp.StatusCode, deltas, types)
	}
	logged, unary := false, 0
	for _, e := range s.logs.FilterMessage("call").All() {
		f := e.ContextMap()
		logged = logged || f["route"] == RouteResponses && f["status"] == int64(200) && f["reason"] == "REPLY_TOO_LARGE" && f["outcome"] != "ok"
		// The unary answers were gathered from the agent's stream and
		// failed before their first byte: their lines say the 502 sent.
		if f["route"] == RouteChat && f["reason"] == "REPLY_TOO_LARGE" || f["route"] == RouteResponses && f["status"] != int64(200) {
			if f["status"] != int64(502) || f["reason"] != "REPLY_TOO_LARGE" {
				t.Errorf("the call line of a unary answer over the cap = %v, want status 502, reason REPLY_TOO_LARGE", f)
			}
			unary++
		}
	}
	if !logged {
		t.Errorf("no call log line of the streamed response saying REPLY_TOO_LARGE: %v", s.logs.All())
	}
	if unary != 2 {
		t.Errorf("%d call lines of the two unary answers over the cap, want 2: %v", unary, s.logs.All())
	}
	resp, got = post(t, base+RouteChat, chatBody("m", "hi", true))
	if content, _, pieces, done := chatStream(t, got); resp.StatusCode != 200 || len(content) != 64<<10 || pieces != 64 || !done {
		t.Errorf("a 64 KiB chat stream = %d: %d bytes in %d chunks, done %v; want all of it", resp.StatusCode, len(content), pieces, done)
	}
}

// TestNotReady: while the agent is not ready, a call waits its bounded
// time, then is 503 not_ready with Retry-After; /healthz says 503.
func TestNotReady(t *testing.T) {
	s := newSidecar(t, startAgent(t), "")
	s.Prober = &doortest.Prober{} // never ready
	s.ReadyWait = 10 * time.Millisecond
	base := s.serve(t, Options{Method: "chat", Model: "m"})
	resp, got := post(t, base+RouteChat, chatBody("m", "hi", true))
	if e, ok := readError(t, got); resp.StatusCode != 503 || !ok || str(e.Code) != "not_ready" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a call while the agent is not ready = %d %s, want 503 not_ready with Retry-After", resp.StatusCode, got)
	}
	if resp, got := do(t, http.MethodGet, base+RouteHealth, ""); resp.StatusCode != 503 {
		t.Errorf("/healthz while not ready = %d %s, want 503", resp.StatusCode, got)
	}
}

// TestRefusalsLogged: a request the door refuses before it is a call (no
// key, a foreign Origin) gets one call log line with the door's protocol,
// the status, reason and route, and counts in the metrics; refused before
// its body is read, it takes no concurrency slot: with the one slot held,
// a wrong key's 1 MiB body, never sent, is 401 at once, not 503.
func TestRefusalsLogged(t *testing.T) {
	s := newSidecar(t, startAgent(t), "limits: {concurrency: 1, queue: 0}\n")
	m := metrics.New(Name)
	s.Metrics, s.Protocols = m, []string{Name}
	base := s.serve(t, Options{Method: "hold", Model: "m", APIKey: "sekret", KeySet: true})
	req, _ := http.NewRequest(http.MethodPost, base+RouteChat, strings.NewReader(chatBody("m", "hi", true)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sekret")
	held, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	if first, err := bufio.NewReader(held.Body).ReadString('\n'); err != nil || !strings.HasPrefix(first, "data: ") {
		t.Fatalf("the held stream began %q (%v)", first, err) // it holds the one slot
	}
	s.logs.TakeAll()

	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer wrong\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		RouteChat, strings.TrimPrefix(base, "http://"), 1<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a wrong key, its body unsent: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong key with the one slot held = %d, want 401 (no slot taken, the body unread)", resp.StatusCode)
	}
	checkRefusal(t, s, 401, "UNAUTHENTICATED", RouteChat)

	resp, _ = post(t, base+RouteResponses, `{"model":"m","input":"hi"}`, "Authorization", "Bearer sekret", "Origin", "https://evil.example")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Origin = %d, want 403", resp.StatusCode)
	}
	checkRefusal(t, s, 403, "PERMISSION_DENIED", "") // the Server's guard refuses before the door routes

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `sidecar_protocol_calls_total{outcome="bad_request",protocol="openai"} 2`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s", want)
	}
}

// checkRefusal checks the one log line since the last: a call of the
// door refused with status and reason on route.
func checkRefusal(t *testing.T, s *sidecar, status int, reason, route string) {
	t.Helper()
	lines := s.logs.TakeAll()
	if len(lines) != 1 {
		t.Fatalf("a %d logged %d lines %v, want one", status, len(lines), lines)
	}
	f := lines[0].ContextMap()
	if lines[0].Message != "call" || f["protocol"] != Name || f["status"] != int64(status) || f["reason"] != reason ||
		f["route"] != route || f["outcome"] != "bad_request" {
		t.Errorf("a %d logged %s %v, want a call of protocol %s, status %d, reason %s, route %s, outcome bad_request",
			status, lines[0].Message, f, Name, status, reason, route)
	}
}

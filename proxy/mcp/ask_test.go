package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/redistest"
)

// askMap is the method map of the tests of an agent that asks, in front of
// askAgent: confirm streams (ndjson), approve is unary.
const askMap = `
upstream: {url: AGENT}
methods:
  confirm: {mode: stream, call: POST /confirm, reply: ndjson, description: Transfers after a person approves.}
  approve: {call: POST /approve, description: Approves after a person does.}
`

// confirmQuestion is the question askAgent asks when its input has no
// reply.
const confirmQuestion = `{"input_required":{"message":"Approve the transfer?","id":"q1","schema":{"type":"object","properties":{"approve":{"type":"boolean"}},"required":["approve"]}}}`

// askAgent is an agent that asks before it answers: a call whose input has
// no reply asks confirmQuestion (POST /confirm: some text, then the
// question, as ndjson; POST /approve: the question as its output), and one
// with a reply answers with what the reply says ("approved", "declined",
// …). Its calls' inputs are kept, in order.
type askAgent struct {
	mu     sync.Mutex
	inputs []string
	// question, when set, replaces confirmQuestion.
	question string
}

func (a *askAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.inputs = append(a.inputs, string(b))
	q := a.question
	a.mu.Unlock()
	if q == "" {
		q = confirmQuestion
	}
	var in struct {
		Reply *struct {
			ID      string          `json:"id"`
			Action  string          `json:"action"`
			Content json.RawMessage `json:"content"`
		} `json:"reply"`
	}
	json.Unmarshal(b, &in)
	answer := ""
	if in.Reply != nil {
		answer = fmt.Sprintf("%s %s %s", in.Reply.ID, in.Reply.Action, in.Reply.Content)
	}
	switch r.URL.Path {
	case "/confirm":
		w.Header().Set("Content-Type", "application/x-ndjson")
		if answer == "" {
			fmt.Fprintf(w, "{\"text\":\"checking \"}\n%s\n", q)
			return
		}
		fmt.Fprintf(w, "{\"text\":\"done: \"}\n{\"text\":%q}\n", answer)
	case "/approve":
		w.Header().Set("Content-Type", "application/json")
		if answer == "" {
			fmt.Fprint(w, q)
			return
		}
		fmt.Fprintf(w, `%q`, "done: "+answer)
	default:
		http.NotFound(w, r)
	}
}

func (a *askAgent) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.inputs...)
}

// serveAsk serves askMap, head prepended, in front of a new askAgent.
func serveAsk(t *testing.T, head string) (*served, *askAgent) {
	t.Helper()
	a := &askAgent{}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return serveMap(t, head+askMap, srv.URL, Options{}), a
}

// initializeWith opens a 2025-11-25 session whose client declared caps.
func initializeWith(t *testing.T, url, caps string) string {
	t.Helper()
	resp, b := post(t, url, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize = %d %q", resp.StatusCode, b)
	}
	return id
}

// result is a tools/call result as the tests read it.
type result struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	ResultType        string          `json:"resultType"`
	InputRequests     map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
}

func (r result) text() string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// lastResult is the result of the last message of a tools/call's answer,
// JSON or SSE.
func lastResult(t *testing.T, resp *http.Response, b []byte) result {
	t.Helper()
	var msg rpcReply
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		ev := events(t, b)
		msg = ev[len(ev)-1]
	} else {
		msg = decode(t, b)
	}
	var r result
	if msg.Error != nil || json.Unmarshal(msg.Result, &r) != nil {
		t.Fatalf("answer %s: not a result", b)
	}
	return r
}

// TestAskWithoutElicitation: a 2025 session whose client declared no
// elicitation gets the agent's question as the call's result (not an
// error): its text the question's message, its structuredContent the
// question; the agent is called once.
func TestAskWithoutElicitation(t *testing.T) {
	s, agent := serveAsk(t, "")
	session := initializeWith(t, s.url, `{}`)
	for _, tool := range []string{"confirm", "approve"} {
		resp, b := post(t, s.url, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"amount":5}}}`,
			"Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")
		r := lastResult(t, resp, b)
		if r.IsError || r.text() != "Approve the transfer?" || !strings.Contains(string(r.StructuredContent), `"input_required"`) ||
			!strings.Contains(string(r.StructuredContent), `"approve"`) {
			t.Errorf("%s: result %s, want the question, not an error", tool, b)
		}
	}
	if n := len(agent.calls()); n != 2 {
		t.Errorf("the agent was called %d times, want once per tool", n)
	}
}

// sseReader reads a tools/call's SSE answer as it comes.
type sseReader struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
	id   int64 // the call's request id
}

// startCall posts a tools/call of tool in session and returns its answer's
// reader once its head arrived.
func startCall(t *testing.T, url, session, tool, args string) *sseReader {
	t.Helper()
	id := callIDs.Add(1)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":`+strconv.FormatInt(id, 10)+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("tools/call = %d %s %s, want an SSE stream", resp.StatusCode, ct, b)
	}
	return &sseReader{t: t, resp: resp, r: bufio.NewReader(resp.Body), id: id}
}

// callIDs numbers the tests' calls: a request id is never reused while a
// call of it may still be held.
var callIDs atomic.Int64

// next is the stream's next message.
func (s *sseReader) next() rpcReply {
	s.t.Helper()
	line, err := s.r.ReadString('\n')
	if err != nil {
		s.t.Fatalf("reading the stream: %v", err)
	}
	s.r.ReadString('\n') // the blank line
	data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: ")
	if !ok {
		s.t.Fatalf("line %q is no data: line", line)
	}
	return decode(s.t, []byte(data))
}

// elicitation reads messages up to the elicitation/create request.
func (s *sseReader) elicitation() rpcReply {
	s.t.Helper()
	for {
		m := s.next()
		if m.Method == "elicitation/create" {
			return m
		}
		if m.Method == "" {
			s.t.Fatalf("the call ended (%s %s) without an elicitation", m.Result, m.Params)
		}
	}
}

// final reads messages up to the call's response, and returns its result.
func (s *sseReader) final() result {
	s.t.Helper()
	for {
		m := s.next()
		if m.Method != "" {
			continue
		}
		var r result
		if m.Error != nil || json.Unmarshal(m.Result, &r) != nil {
			s.t.Fatalf("the call's response %s %+v is no result", m.Result, m.Error)
		}
		return r
	}
}

// respond posts the client's response to the request id in session.
func respond(t *testing.T, url, session string, id json.RawMessage, result string) (int, string) {
	t.Helper()
	resp, b := post(t, url, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":`+result+`}`,
		"Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")
	return resp.StatusCode, string(b)
}

// TestAskElicitation: in a 2025-11-25 session whose client declared
// elicitation, the agent's question goes to the client as
// elicitation/create on the call's stream (the message and the schema as
// requestedSchema), the client's response POSTed in the session is
// answered 202, and the method is called again with the arguments plus
// the reply: the call's result is that call's. So for a streaming tool and
// a unary one; decline reaches the agent as such; notifications/cancelled
// ends a call that waits for its answer; the call again's progress counts
// on from the first's.
func TestAskElicitation(t *testing.T) {
	s, agent := serveAsk(t, "")
	session := initializeWith(t, s.url, `{"elicitation":{}}`)
	for _, tt := range []struct{ tool, answer, want string }{
		{"confirm", `{"action":"accept","content":{"approve":true}}`, `done: q1 accept {"approve":true}`},
		{"approve", `{"action":"accept","content":{"approve":false}}`, `done: q1 accept {"approve":false}`},
		{"confirm", `{"action":"decline"}`, `done: q1 decline `},
	} {
		c := startCall(t, s.url, session, tt.tool, `{"amount":5}`)
		el := c.elicitation()
		var p struct {
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
		}
		json.Unmarshal(el.Params, &p)
		if p.Message != "Approve the transfer?" || !strings.Contains(string(p.RequestedSchema), `"approve":{"type":"boolean"}`) {
			t.Errorf("%s: elicitation/create %s", tt.tool, el.Params)
		}
		if code, b := respond(t, s.url, session, el.ID, tt.answer); code != http.StatusAccepted {
			t.Fatalf("the response = %d %s, want 202", code, b)
		}
		if r := c.final(); r.IsError || r.text() != tt.want {
			t.Errorf("%s answered %s: result %+v, want %q", tt.tool, tt.answer, r, tt.want)
		}
	}
	// notifications/cancelled ends a call that waits for an answer: its
	// stream ends with no result, and its question waits no more.
	c := startCall(t, s.url, session, "confirm", `{}`)
	c.elicitation()
	if resp, b := post(t, s.url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+strconv.FormatInt(c.id, 10)+`}}`,
		"Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25"); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled = %d %s", resp.StatusCode, b)
	}
	if rest, err := io.ReadAll(c.r); err != nil || len(rest) != 0 {
		t.Errorf("a cancelled call's stream went on with %q (%v), want its end", rest, err)
	}
	if n := s.door.waiting.len(); n != 0 {
		t.Errorf("%d elicitations still wait after the cancel, want none", n)
	}

	// With a progress token, the call again's progress goes on counting
	// from the first call's.
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"confirm","arguments":{},"_meta":{"progressToken":"p"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	c = &sseReader{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
	var progress []string
	for {
		m := c.next()
		if m.Method == "elicitation/create" {
			respond(t, s.url, session, m.ID, `{"action":"cancel"}`)
			continue
		}
		if m.Method == "notifications/progress" {
			var p struct {
				Progress int    `json:"progress"`
				Message  string `json:"message"`
			}
			json.Unmarshal(m.Params, &p)
			progress = append(progress, fmt.Sprintf("%d %s", p.Progress, p.Message))
			continue
		}
		break
	}
	if got := strings.Join(progress, "|"); got != "1 checking |2 done: |3 q1 cancel " {
		t.Errorf("progress = %q, want one count across both calls", got)
	}

	calls := agent.calls()
	if len(calls) != 9 || calls[0] != `{"amount":5}` || calls[1] != `{"amount":5,"reply":{"id":"q1","action":"accept","content":{"approve":true}}}` {
		t.Errorf("the agent's inputs = %q", calls)
	}
}

// TestAskElicitationHostile: an answer that fails the question's schema
// ends the call with an isError result and the agent is not called again;
// a response to the elicitation's id from another session answers
// nothing, and the call still waits for its own; a client that never
// answers has the call end at limits.questions.wait, the agent told with
// a cancel whose reason is expired; past
// limits.questions.waiting a question is not sent (isError); a question
// over limits.questions.bytes (a 10 MB schema) ends the call as
// QUESTION_TOO_LARGE, an isError result, and a malformed one as
// BAD_REPLY.
func TestAskElicitationHostile(t *testing.T) {
	s, agent := serveAsk(t, "limits: {questions: {wait: 300ms, waiting: 1}}\n")
	session := initializeWith(t, s.url, `{"elicitation":{}}`)
	other := initializeWith(t, s.url, `{"elicitation":{}}`)

	c := startCall(t, s.url, session, "confirm", `{}`)
	el := c.elicitation()
	if code, b := respond(t, s.url, other, el.ID, `{"action":"accept","content":{"approve":true}}`); code != http.StatusAccepted {
		t.Errorf("another session's response = %d %s, want 202 (answering nothing)", code, b)
	}
	respond(t, s.url, session, el.ID, `{"action":"accept","content":{"approve":"yes"}}`)
	if r := c.final(); !r.IsError || !strings.Contains(r.text(), "does not meet the question's schema") {
		t.Errorf("an answer failing the schema: %+v, want isError saying so", r)
	}
	if n := len(agent.calls()); n != 1 {
		t.Errorf("the agent was called %d times, want once: a bad answer never reaches it", n)
	}

	start := time.Now()
	c = startCall(t, s.url, session, "confirm", `{}`)
	c.elicitation()
	// Meanwhile, one question waits: another call's is not sent.
	c2 := startCall(t, s.url, other, "confirm", `{}`)
	if r := c2.final(); !r.IsError || !strings.Contains(r.text(), "limits.questions.waiting") {
		t.Errorf("a question past limits.questions.waiting: %+v", r)
	}
	if r := c.final(); !r.IsError || !strings.Contains(r.text(), "no answer came within") || !strings.Contains(r.text(), "the agent was told") || time.Since(start) < 300*time.Millisecond {
		t.Errorf("a client that never answers: %+v after %s", r, time.Since(start))
	}
	// The agent is told, before the caller has the result: the method
	// again, its input the arguments with a cancel whose reason is expired.
	if calls := agent.calls(); len(calls) != 4 || calls[3] != `{"reply":{"id":"q1","action":"cancel","reason":"expired"}}` {
		t.Errorf("the agent's inputs = %q, want the last a cancel saying the question expired", calls)
	}
	if n := s.door.waiting.len(); n != 0 {
		t.Errorf("%d elicitations still wait, want none", n)
	}

	agent.mu.Lock()
	agent.question = `{"input_required":{"message":"big","schema":{"type":"object","description":"` + strings.Repeat("x", 10<<20) + `"}}}`
	agent.mu.Unlock()
	resp, b := post(t, s.url, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"approve","arguments":{}}}`,
		"Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")
	if r := lastResult(t, resp, b); !r.IsError || !strings.Contains(r.text(), "limits.questions.bytes") {
		t.Errorf("a 10 MB question: %.300s", b)
	}
	// A malformed question, streamed, ends the call with an isError
	// result saying what is wrong.
	agent.mu.Lock()
	agent.question = `{"input_required":{"message":"pick","kind":"poll"}}`
	agent.mu.Unlock()
	resp, b = post(t, s.url, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"confirm","arguments":{}}}`,
		"Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")
	if r := lastResult(t, resp, b); !r.IsError || !strings.Contains(r.text(), `kind "poll" is not form, url or auth`) {
		t.Errorf("a malformed question: %s", b)
	}
}

// TestAskStateless: on 2026-07-28 the agent's question is an
// input-required result (its elicitation/create input request, a signed
// requestState); the call again with inputResponses and that state is the
// agent's call with the reply. A tampered state is invalid params, a
// missing answer is asked again without the agent, an answer failing the
// schema is an isError result, another caller's state is refused.
func TestAskStateless(t *testing.T) {
	s, agent := serveAsk(t, "")
	caps := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	call := func(tool, extra string, h ...string) (*http.Response, []byte) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"amount":5}` + extra + `,` + caps + `}}`
		return post(t, s.url, body, append([]string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", tool}, h...)...)
	}
	for _, tool := range []string{"confirm", "approve"} {
		resp, b := call(tool, "")
		r := lastResult(t, resp, b)
		in, ok := r.InputRequests["q1"]
		if r.ResultType != "input_required" || !ok || in.Method != "elicitation/create" || !strings.Contains(string(in.Params), `"requestedSchema"`) || r.RequestState == "" {
			t.Fatalf("%s: first call = %s, want an input-required result", tool, b)
		}
		state, _ := json.Marshal(r.RequestState)
		resp, b = call(tool, `,"inputResponses":{"q1":{"action":"accept","content":{"approve":true}},"extra":{}},"requestState":`+string(state))
		if r := lastResult(t, resp, b); r.ResultType != "complete" || r.text() != `done: q1 accept {"approve":true}` {
			t.Errorf("%s: call again = %s", tool, b)
		}

		tampered, _ := json.Marshal(r.RequestState[:10] + "x" + r.RequestState[11:])
		_, b = call(tool, `,"inputResponses":{"q1":{"action":"accept","content":{"approve":true}}},"requestState":`+string(tampered))
		if m := decode(t, b); m.Error == nil || m.Error.Code != codeInvalidParams {
			t.Errorf("%s: a tampered state = %s, want -32602", tool, b)
		}
		_, b = call(tool, `,"inputResponses":{"q1":{"action":"accept","content":{"approve":true}}},"requestState":`+string(state), "Authorization", "Bearer someone-else")
		if m := decode(t, b); m.Error == nil || m.Error.Code != codeInvalidParams {
			t.Errorf("%s: another caller's state = %s, want -32602", tool, b)
		}
		resp, b = call(tool, `,"inputResponses":{"wrong":{"action":"accept"}},"requestState":`+string(state))
		if r := lastResult(t, resp, b); r.ResultType != "input_required" || r.RequestState == "" {
			t.Errorf("%s: no answer to the question = %s, want it asked again", tool, b)
		}
		resp, b = call(tool, `,"inputResponses":{"q1":{"action":"accept","content":{"approve":1}}},"requestState":`+string(state))
		if r := lastResult(t, resp, b); !r.IsError || !strings.Contains(r.text(), "schema") {
			t.Errorf("%s: an answer failing the schema = %s", tool, b)
		}
	}
	if n := len(agent.calls()); n != 4 {
		t.Errorf("the agent was called %d times, want twice per tool: %q", n, agent.calls())
	}
}

// TestGoSDKElicitation: the official Go SDK's client (go-sdk v1.8.0) with
// an ElicitationHandler answers the agent's question in each revision: by
// default (2026-07-28) its multi round-trip middleware fulfils the
// input-required result and calls again with the requestState; in a
// 2025-11-25 and a 2025-06-18 session the handler answers the
// elicitation/create the door sends on the call's stream. Either way the
// tool's result is the agent's answer to the reply, for a streaming tool
// and a unary one.
func TestGoSDKElicitation(t *testing.T) {
	s, _ := serveAsk(t, "")
	for _, version := range []string{"", version20251125, version20250618} {
		t.Run("version "+version, func(t *testing.T) {
			asked := make(chan string, 10)
			client := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-test", Version: "1.0.0"}, &gomcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *gomcp.ElicitRequest) (*gomcp.ElicitResult, error) {
					asked <- r.Params.Message
					return &gomcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				}})
			cs := goConnect(t, client, s.url, version)
			for _, tool := range []string{"confirm", "approve"} {
				res, err := cs.CallTool(t.Context(), &gomcp.CallToolParams{Name: tool, Arguments: map[string]any{"amount": 5}})
				if err != nil {
					t.Fatalf("%s: %v", tool, err)
				}
				text := ""
				if len(res.Content) > 0 {
					if c, ok := res.Content[0].(*gomcp.TextContent); ok {
						text = c.Text
					}
				}
				if res.IsError || text != `done: q1 accept {"approve":true}` {
					t.Errorf("%s: result %q (isError %v), want the agent's answer to the reply", tool, text, res.IsError)
				}
				select {
				case m := <-asked:
					if m != "Approve the transfer?" {
						t.Errorf("%s: the handler was asked %q", tool, m)
					}
				default:
					t.Errorf("%s: the handler was never asked", tool)
				}
			}
		})
	}
}

// TestSDKElicitation: the MCP TypeScript SDK 1.x client and the 2.x
// client, each with an elicitation handler, answer the agent's question:
// 1.x and 2.x's default in a 2025-11-25 session (elicitation/create on the
// call's stream), 2.x's auto mode on 2026-07-28 (it fulfils the
// input-required result and calls again with the requestState). The
// tool's result is the agent's answer to the reply.
func TestSDKElicitation(t *testing.T) {
	s, _ := serveAsk(t, "")
	want := func(version string) []string {
		return []string{
			`{"step":"connect","version":"` + version + `"}`,
			`{"step":"confirm","asked":["Approve the transfer?"],"text":"done: q1 accept {\"approve\":true}","isError":false}`,
			`{"step":"approve","asked":["Approve the transfer?"],"text":"done: q1 accept {\"approve\":true}","isError":false}`,
		}
	}
	t.Run("sdk 1.x", func(t *testing.T) {
		deps.MatchLines(t, deps.Node(t, "mcp", "elicit.mjs", s.url), want("2025-11-25"))
	})
	for _, tt := range []struct{ mode, version string }{{"auto", "2026-07-28"}, {"legacy", "2025-11-25"}} {
		t.Run("client 2.x "+tt.mode, func(t *testing.T) {
			deps.MatchLines(t, deps.Node(t, "mcp2", "elicit.mjs", s.url, tt.mode), want(tt.version))
		})
	}
}

// TestSharedElicitation: with the Redis store, a session's elicitation
// capability is the session's on every replica, and the client's response
// to an elicitation reaches the call that asked, whichever replica it
// lands on: a call on replica a is answered by a response POSTed to b,
// and a call on b by one POSTed to a.
func TestSharedElicitation(t *testing.T) {
	srv := redistest.Start(t)
	agent := &askAgent{}
	up := httptest.NewServer(agent)
	t.Cleanup(up.Close)
	a := serveMap(t, askMap, up.URL, Options{Store: openStore(t, srv)})
	b := serveMap(t, askMap, up.URL, Options{Store: openStore(t, srv)})
	session := initializeWith(t, a.url, `{"elicitation":{}}`)
	for _, tt := range []struct{ call, answer *served }{{a, b}, {b, a}} {
		c := startCall(t, tt.call.url, session, "confirm", `{}`)
		el := c.elicitation()
		if code, body := respond(t, tt.answer.url, session, el.ID, `{"action":"accept","content":{"approve":true}}`); code != http.StatusAccepted {
			t.Fatalf("the response on the other replica = %d %s", code, body)
		}
		if r := c.final(); r.IsError || r.text() != `done: q1 accept {"approve":true}` {
			t.Errorf("result %+v, want the agent's answer to the reply", r)
		}
	}
}

// TestSharedStateless: with the Redis store every replica signs with one
// key, so the call again with the requestState one replica issued is
// served by another.
func TestSharedStateless(t *testing.T) {
	srv := redistest.Start(t)
	up := httptest.NewServer(&askAgent{})
	t.Cleanup(up.Close)
	a := serveMap(t, askMap, up.URL, Options{Store: openStore(t, srv)})
	b := serveMap(t, askMap, up.URL, Options{Store: openStore(t, srv)})
	call := func(s *served, extra string) (*http.Response, []byte) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"approve","arguments":{}` + extra +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
		return post(t, s.url, body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "approve")
	}
	resp, body := call(a, "")
	r := lastResult(t, resp, body)
	if r.RequestState == "" {
		t.Fatalf("first call on a = %s", body)
	}
	state, _ := json.Marshal(r.RequestState)
	resp, body = call(b, `,"inputResponses":{"q1":{"action":"accept","content":{"approve":true}}},"requestState":`+string(state))
	if r := lastResult(t, resp, body); r.ResultType != "complete" || r.text() != `done: q1 accept {"approve":true}` {
		t.Errorf("call again on b = %s", body)
	}
}

// TestAskURLMode: a url question goes to a 2025-11-25 client that declared
// elicitation.url in URL mode (its url, an elicitationId, no schema), and
// its accept reaches the agent; a client that declared form mode only
// gets the question as the result; so does a form question whose schema
// elicitation cannot carry (a nested object).
func TestAskURLMode(t *testing.T) {
	s, agent := serveAsk(t, "")
	agent.question = `{"input_required":{"message":"Sign in first","kind":"url","url":"https://example.com/login","id":"login"}}`
	both := initializeWith(t, s.url, `{"elicitation":{"form":{},"url":{}}}`)
	c := startCall(t, s.url, both, "approve", `{}`)
	el := c.elicitation()
	var p struct {
		Mode, URL, ElicitationID, Message string
		RequestedSchema                   json.RawMessage
	}
	json.Unmarshal(el.Params, &p)
	if p.Mode != "url" || p.URL != "https://example.com/login" || p.ElicitationID != "login" || p.RequestedSchema != nil {
		t.Errorf("elicitation/create %s, want URL mode", el.Params)
	}
	respond(t, s.url, both, el.ID, `{"action":"accept"}`)
	if r := c.final(); r.IsError || r.text() != "done: login accept " {
		t.Errorf("result %+v", r)
	}

	form := initializeWith(t, s.url, `{"elicitation":{"form":{}}}`)
	for _, q := range []string{agent.question,
		`{"input_required":{"message":"Where to?","schema":{"type":"object","properties":{"address":{"type":"object","properties":{"city":{"type":"string"}}}}}}}`} {
		agent.mu.Lock()
		agent.question = q
		agent.mu.Unlock()
		resp, b := post(t, s.url, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"approve","arguments":{}}}`,
			"Mcp-Session-Id", form, "MCP-Protocol-Version", "2025-11-25")
		if r := lastResult(t, resp, b); r.IsError || !strings.Contains(string(r.StructuredContent), `"input_required"`) {
			t.Errorf("%s to a form-only client: %s, want the question as the result", q, b)
		}
	}
}

// TestAskAfterDialect: an agent that streams in a dialect (an OpenAI chat
// stream) and then asks has its question carried: the mapping stage
// passes the question record on after the text.
func TestAskAfterDialect(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi \"},\"finish_reason\":null}]}\n\n")
		fmt.Fprint(w, "data: "+confirmQuestion+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	s := serveMap(t, "upstream: {url: AGENT}\nmethods:\n  confirm: {mode: stream, call: POST /x, reply: sse}\n", up.URL, Options{})
	session := initializeWith(t, s.url, `{}`)
	resp, b := post(t, s.url, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"confirm","arguments":{}}}`,
		"Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-11-25")
	if r := lastResult(t, resp, b); r.text() != "Approve the transfer?" || !strings.Contains(string(r.StructuredContent), `"input_required"`) {
		t.Errorf("result %s, want the question", b)
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// testADKQuestions: through the contract, in front of the real
// TypeScript ADK api server, a run paused on a tool confirmation or a
// long-running tool is answered as any agent's question is: the same
// input again with reply. The preset's events pass unchanged (emit raw):
// the caller sees ADK's own adk_request_confirmation call, and the
// caller that answers it natively, with the function response as its
// message, is served as before.
func testADKQuestions(t *testing.T, url string) {
	base := startSidecar(t, "upstream: {url: "+url+", ready: {path: /list-apps}}\npreset: adk\nadk: {app: transfer}\n")
	session := func(user string) string {
		t.Helper()
		r := unaryCall(t, base, "create_session", `{"user_id":"`+user+`"}`)
		var s struct{ ID string }
		if json.Unmarshal(r.output, &s); r.status != 200 || s.ID == "" {
			t.Fatalf("create_session = %d %s %q", r.status, r.output, r.detail)
		}
		return s.ID
	}
	// paused runs message in a new session of user and returns the
	// session, the input of the call, and the id of the call the run
	// paused on: name's.
	paused := func(user, message, name string) (sid, input, id string) {
		t.Helper()
		sid = session(user)
		input = `{"user_id":"` + user + `","session_id":"` + sid + `","message":"` + message + `"}`
		for _, l := range streamCall(t, base, "stream_query", input) {
			var e struct {
				LongRunning []string `json:"longRunningToolIds"`
				Content     struct {
					Parts []struct {
						FunctionCall *struct{ ID, Name string } `json:"functionCall"`
					} `json:"parts"`
				} `json:"content"`
			}
			json.Unmarshal([]byte(l), &e)
			for _, p := range e.Content.Parts {
				if f := p.FunctionCall; f != nil && f.Name == name && len(e.LongRunning) == 1 && e.LongRunning[0] == f.ID {
					return sid, input, f.ID
				}
			}
		}
		t.Fatalf("stream_query %s: no long-running %s call", input, name)
		return
	}
	withReply := func(input, reply string) string { return strings.TrimSuffix(input, "}") + `,"reply":` + reply + `}` }
	lastText := func(lines []string) string {
		var text string
		for _, l := range lines {
			var e event
			json.Unmarshal([]byte(l), &e)
			for _, p := range e.Content.Parts {
				json.Unmarshal(p["text"], &text)
			}
		}
		return text
	}

	t.Run("confirmation accepted", func(t *testing.T) {
		_, input, id := paused("q1", "approve 100", "adk_request_confirmation")
		got := streamCall(t, base, "stream_query", withReply(input, `{"id":"`+id+`","action":"accept","content":{"confirmed":true}}`))
		if text := lastText(got); text != `transfer_money: {"transferred":100}` {
			t.Errorf("the answered run = %q, want the transfer made", got)
		}
	})
	t.Run("confirmation declined", func(t *testing.T) {
		_, input, id := paused("q2", "approve 7", "adk_request_confirmation")
		got := streamCall(t, base, "stream_query", withReply(input, `{"id":"`+id+`","action":"decline"}`))
		if text := lastText(got); !strings.Contains(text, "rejected") {
			t.Errorf("the declined run = %q, want the tool call rejected", got)
		}
	})
	t.Run("long-running tool answered", func(t *testing.T) {
		_, input, id := paused("q3", "ticket fix the printer", "open_ticket")
		got := streamCall(t, base, "async_stream_query", withReply(input, `{"id":"`+id+`","action":"accept","content":{"status":"done","by":"ann"}}`))
		if text := lastText(got); text != `open_ticket: {"status":"done","by":"ann"}` {
			t.Errorf("the answered run = %q, want the tool's response", got)
		}
	})
	t.Run("answered natively", func(t *testing.T) {
		sid, _, id := paused("q4", "approve 5", "adk_request_confirmation")
		input := `{"user_id":"q4","session_id":"` + sid + `","message":{"role":"user","parts":[{"functionResponse":{"id":"` + id +
			`","name":"adk_request_confirmation","response":{"confirmed":true}}}]}}`
		if text := lastText(streamCall(t, base, "stream_query", input)); text != `transfer_money: {"transferred":5}` {
			t.Errorf("the natively answered run ends %q, want the transfer made", text)
		}
	})
	t.Run("the adk dialect's question", func(t *testing.T) {
		// A plain method in front of /run_sse, emit text: the confirmation
		// is one input_required line, the schema ADK's answer needs.
		plain := startSidecar(t, "upstream: {url: "+url+", ready: {path: /list-apps}}\nmethods:\n"+
			"  new_session: {call: POST /apps/transfer/users/d1/sessions, body: {}}\n"+
			"  ask: {mode: stream, call: POST /run_sse, dialect: adk, emit: text, body: {appName: transfer, userId: d1, "+
			"sessionId: \"{input.session_id}\", newMessage: {role: user, parts: [{text: \"{input.message}\"}]}}}\n")
		s := unaryCall(t, plain, "new_session", `{}`)
		var sess struct{ ID string }
		json.Unmarshal(s.output, &sess)
		got := streamCall(t, plain, "ask", `{"session_id":"`+sess.ID+`","message":"approve 3"}`)
		want := []string{`{"tool_call":{"id":"adk-`, `{"input_required":{"id":"adk-`, `{"end":{}}`}
		ok := len(got) == len(want)
		for i := 0; ok && i < len(want); i++ {
			ok = strings.HasPrefix(got[i], want[i])
		}
		if !ok || !strings.Contains(got[1], `"kind":"form","message":"Please approve or reject the tool call transfer_money()`) ||
			!strings.Contains(got[1], `"schema":{"type":"object","properties":{"confirmed":{"type":"boolean"},"payload":{}},"required":["confirmed"]}`) {
			t.Errorf("ask = %q, want the transfer_money call, the confirmation's question, the end", got)
		}
	})
	t.Run("hostile answers", func(t *testing.T) {
		sid, input, id := paused("q5", "approve 9", "adk_request_confirmation")
		tests := []struct {
			name, input string
			status      int
			detail      string
		}{
			{"fails the schema", withReply(input, `{"id":"`+id+`","action":"accept","content":{"confirmed":"yes"}}`), 400, "does not meet the question's schema"},
			{"no such question", withReply(input, `{"id":"nope","action":"accept","content":{"confirmed":true}}`), 404, "no question nope"},
			{"another caller's session", withReply(`{"user_id":"intruder","session_id":"`+sid+`","message":"x"}`, `{"id":"`+id+`","action":"accept","content":{"confirmed":true}}`), 404, "Session not found"},
			{"no session", withReply(`{"user_id":"q5","message":"x"}`, `{"id":"`+id+`","action":"accept"}`), 400, "session_id"},
		}
		for _, tt := range tests {
			r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"stream_query","input":`+tt.input+`}`)
			if r.status != tt.status || !strings.Contains(r.body, tt.detail) {
				t.Errorf("%s: stream_query = %d %s, want %d saying %q", tt.name, r.status, r.body, tt.status, tt.detail)
			}
		}
		// The question is still open: answered right, the run goes on.
		got := streamCall(t, base, "stream_query", withReply(input, `{"id":"`+id+`","action":"accept","content":{"confirmed":true}}`))
		if text := lastText(got); text != `transfer_money: {"transferred":9}` {
			t.Errorf("answered after the hostile answers = %q", got)
		}
	})
}

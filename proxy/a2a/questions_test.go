package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/internal/redistest"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/state"
	"github.com/sidecar-dev/sidecar/upstream"
)

// askAgent is the agent of the question tests. /ask streams SSE records,
// /ask1 answers once; each reads its input's message and, the first
// time, asks: "checking " then a question (after which its records are
// never read: "never read"). The message picks the question: "auth" is of
// kind auth, "free" has no schema, "url" is of kind url, "big" has a
// schema of 10 MB, "bad" has no message; any other a form asking
// {"approve": <boolean>} (required). When its input has a reply it says
// what it got: "got <action> <content> for <message>". inputs are the
// inputs it was called with.
type askAgent struct {
	url    string
	gate   chan struct{} // "gated": its question waits for a send on it
	mu     sync.Mutex
	inputs []askInput
}

// askInput is what the tests read of the agent's input.
type askInput struct {
	Message string `json:"message"`
	IDs     struct {
		ContextID string `json:"context_id"`
		TaskID    string `json:"task_id"`
	} `json:"ids"`
	Reply *struct {
		ID      string          `json:"id"`
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
		Reason  string          `json:"reason"`
	} `json:"reply"`
}

// approveSchema is the form question's schema.
const approveSchema = `{"type":"object","properties":{"approve":{"type":"boolean"}},"required":["approve"]}`

func startAskAgent(t *testing.T) *askAgent {
	t.Helper()
	a := &askAgent{gate: make(chan struct{}, 1)}
	answer := func(r *http.Request) []string {
		var in askInput
		json.NewDecoder(r.Body).Decode(&in)
		a.mu.Lock()
		a.inputs = append(a.inputs, in)
		a.mu.Unlock()
		if in.Reply != nil {
			return []string{`{"text":` + quote(fmt.Sprintf("got %s %s for %s", in.Reply.Action, in.Reply.Content, in.Message)) + `}`}
		}
		return []string{`{"text":"checking "}`, questionFor(in.Message), `{"text":"never read"}`}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ask", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, rec := range answer(r) {
			if i == 1 && strings.Contains(rec, "Gated") {
				select {
				case <-a.gate:
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprintf(w, "data: %s\n\n", rec)
			http.NewResponseController(w).Flush()
		}
	})
	mux.HandleFunc("POST /ask1", func(w http.ResponseWriter, r *http.Request) {
		recs := answer(r)
		w.Header().Set("Content-Type", "application/json")
		if len(recs) > 1 {
			// Pretty-printed, as an agent may answer once: a question
			// still.
			var b bytes.Buffer
			json.Indent(&b, []byte(recs[1]), "", "  ")
			w.Write(b.Bytes())
			return
		}
		w.Write([]byte(recs[0]))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

// questionFor is the question record the agent asks for message.
func questionFor(message string) string {
	switch message {
	case "auth":
		return `{"input_required":{"message":"Sign in first","kind":"auth","url":"https://id.example.com/login","id":"q-auth"}}`
	case "free":
		return `{"input_required":{"message":"Anything to add?","id":"q-free"}}`
	case "url":
		return `{"input_required":{"message":"Pay at the page, then say done","kind":"url","url":"https://pay.example.com/p/1","id":"q-url"}}`
	case "big":
		return `{"input_required":{"message":"Fill this in","schema":{"type":"object","description":"` + strings.Repeat("x", 10<<20) + `"}}}`
	case "bad":
		return `{"input_required":{"kind":"form"}}`
	case "gated":
		return `{"input_required":{"message":"Gated question","id":"q-gated"}}`
	}
	return `{"input_required":{"message":"Approve the transfer?","kind":"form","schema":` + approveSchema + `,"id":"q1"}}`
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// calls are the inputs the agent was called with so far.
func (a *askAgent) calls() []askInput {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]askInput(nil), a.inputs...)
}

// askMap is the question tests' method map; QUESTIONS their
// limits.questions.
const askMap = `
upstream: {url: AGENT}
methods:
  ask: {mode: stream, call: POST /ask, reply: sse}
  ask1: {call: POST /ask1}
limits: {request_bytes: 4096, record_bytes: 16MiB, questions: QUESTIONS}
`

// serveAsk runs the sidecar's A2A door calling method of askMap in front
// of a, its limits.questions questions ("{}": the defaults).
func serveAsk(t *testing.T, a *askAgent, method, questions string) (string, *Door) {
	t.Helper()
	url, _, door := serveMap(t, method, strings.ReplaceAll(askMap, "QUESTIONS", questions), a.url)
	return url, door
}

// askTask is a Task as the question tests read it, in 1.0's shape.
type askTask struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State   string     `json:"state"`
		Message *askMsgObj `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		Parts []askPart `json:"parts"`
	} `json:"artifacts"`
	History []askMsgObj `json:"history"`
}

type askMsgObj struct {
	Role  string    `json:"role"`
	Parts []askPart `json:"parts"`
}

type askPart struct {
	Text string          `json:"text"`
	Data json.RawMessage `json:"data"`
}

func (t askTask) text() string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// answer1 is a 1.0 message answering task id (in context ctx, "" none)
// with parts, JSON.
func answer1(method, id, ctx, parts string) string {
	c := ""
	if ctx != "" {
		c = `,"contextId":` + quote(ctx)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{"message":{"role":"ROLE_USER","messageId":"m2","taskId":%q%s,"parts":%s}}}`, method, id, c, parts)
}

// sendTask is SendMessage's task of body on url (1.0), as auth, or its
// error.
func sendTask(t *testing.T, url, auth, body string) (askTask, *rpcError) {
	t.Helper()
	r := callBy(t, url, auth, body)
	if r.Error != nil {
		return askTask{}, r.Error
	}
	var res struct{ Task askTask }
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("%s: result %s: %v", body, r.Result, err)
	}
	return res.Task, nil
}

// getTask is GetTask of id on url (1.0).
func getAskTask(t *testing.T, url, id string) askTask {
	t.Helper()
	r := callBy(t, url, "", taskReq("GetTask", id))
	if r.Error != nil {
		t.Fatalf("GetTask %s: %+v", id, r.Error)
	}
	var task askTask
	json.Unmarshal(r.Result, &task)
	return task
}

// TestAskSendResume: a message whose agent asks answers its task
// input-required, the question its status message (a text part, and a
// data part holding the whole question), what the agent said before it
// the artifact; an answer that fails the schema, another caller's answer
// and a message with another contextId are refused and the task waits
// on; the answer resumes it, the agent called with the same ids and the
// reply, the artifact going on; history holds the messages and the
// question; then it is completed and takes no more messages. Both a
// streaming method and a unary one.
func TestAskSendResume(t *testing.T) {
	for _, method := range []string{"ask", "ask1"} {
		t.Run(method, func(t *testing.T) {
			a := startAskAgent(t)
			url, _ := serveAsk(t, a, method, "{}")
			task, e := sendTask(t, url, "", send1("1", "SendMessage", "pay bob"))
			if e != nil {
				t.Fatalf("SendMessage: %+v", e)
			}
			if task.Status.State != "TASK_STATE_INPUT_REQUIRED" {
				t.Fatalf("state %s, want TASK_STATE_INPUT_REQUIRED", task.Status.State)
			}
			m := task.Status.Message
			if m == nil || m.Role != "ROLE_AGENT" || len(m.Parts) != 2 || m.Parts[0].Text != "Approve the transfer?" {
				t.Fatalf("status message %+v, want the agent's question: its text, then its data", m)
			}
			var q struct {
				ID, Kind, Message string
				Schema            json.RawMessage
			}
			if err := json.Unmarshal(m.Parts[1].Data, &q); err != nil || q.ID != "q1" || q.Kind != "form" || string(q.Schema) != approveSchema {
				t.Errorf("the question's data part %s, want its id, kind and schema", m.Parts[1].Data)
			}
			if method == "ask" && task.text() != "checking " {
				t.Errorf("artifact %q, want what the agent said before asking", task.text())
			}

			// Refused, the task waiting on.
			refusals := []struct {
				name, auth, body string
				code             int
				says             string
			}{
				{"schema", "", answer1("SendMessage", task.ID, "", `[{"data":{"approve":"yes"}}]`), codeInvalidParams, "schema"},
				{"text alone", "", answer1("SendMessage", task.ID, "", `[{"text":"yes"}]`), codeInvalidParams, "approve"},
				{"two data parts", "", answer1("SendMessage", task.ID, "", `[{"data":{"approve":true}},{"data":{"approve":true}}]`), codeInvalidParams, "one data part"},
				{"another caller", "Bearer someone-else", answer1("SendMessage", task.ID, "", `[{"data":{"approve":true}}]`), codeTaskNotFound, "not found"},
				{"another context", "", answer1("SendMessage", task.ID, "other", `[{"data":{"approve":true}}]`), codeInvalidParams, "context"},
			}
			for _, r := range refusals {
				_, e := sendTask(t, url, r.auth, r.body)
				if e == nil || e.Code != r.code || !strings.Contains(e.Message, r.says) {
					t.Errorf("%s: error %+v, want %d saying %q", r.name, e, r.code, r.says)
				}
			}
			if got := getAskTask(t, url, task.ID); got.Status.State != "TASK_STATE_INPUT_REQUIRED" {
				t.Fatalf("after the refused answers the task is %s, want it still waiting", got.Status.State)
			}
			if n := len(a.calls()); n != 1 {
				t.Fatalf("the agent was called %d times, want once: no refused answer reaches it", n)
			}

			done, e := sendTask(t, url, "", answer1("SendMessage", task.ID, task.ContextID, `[{"text":"go ahead"},{"data":{"approve":true}}]`))
			if e != nil {
				t.Fatalf("the answer: %+v", e)
			}
			if done.ID != task.ID || done.Status.State != "TASK_STATE_COMPLETED" {
				t.Fatalf("after the answer: task %s %s, want %s completed", done.ID, done.Status.State, task.ID)
			}
			want := `got accept {"approve":true} for go ahead`
			if method == "ask" {
				want = "checking " + want
			}
			if done.text() != want {
				t.Errorf("artifact %q, want %q", done.text(), want)
			}
			calls := a.calls()
			if len(calls) != 2 {
				t.Fatalf("the agent was called %d times, want twice", len(calls))
			}
			first, second := calls[0], calls[1]
			if second.IDs != first.IDs || second.IDs.TaskID == "" {
				t.Errorf("the second call's ids %+v, want the first's %+v", second.IDs, first.IDs)
			}
			if r := second.Reply; r == nil || r.ID != "q1" || r.Action != "accept" || string(r.Content) != `{"approve":true}` {
				t.Errorf("the second call's reply %+v, want q1 accept {\"approve\":true}", r)
			}
			h := done.History
			if len(h) != 3 || h[0].Role != "ROLE_USER" || h[0].Parts[0].Text != "pay bob" ||
				h[1].Role != "ROLE_AGENT" || h[1].Parts[0].Text != "Approve the transfer?" ||
				h[2].Role != "ROLE_USER" || h[2].Parts[0].Text != "go ahead" || string(h[2].Parts[1].Data) != `{"approve":true}` {
				t.Errorf("history %+v, want the message, the question, the answer", h)
			}
			if _, e := sendTask(t, url, "", answer1("SendMessage", task.ID, "", `[{"data":{"approve":true}}]`)); e == nil || e.Code != codeUnsupported {
				t.Errorf("an answer to the completed task: %+v, want %d", e, codeUnsupported)
			}
		})
	}
}

// TestAskStream: over message/stream the question ends the stream with a
// final status-update input-required carrying it (0.3: final true); the
// answer streamed resumes the task, its artifact-updates appending.
func TestAskStream(t *testing.T) {
	a := startAskAgent(t)
	url, _ := serveAsk(t, a, "ask", "{}")
	events := readEvents(t, rpc(t, url, "", send0("1", "message/stream", "pay bob")))
	var kinds []string
	var id string
	for _, e := range events {
		var ev struct {
			Kind, ID, TaskID string
			Final            bool
			Status           struct {
				State   string
				Message *struct{ Parts []json.RawMessage }
			}
			Append bool
		}
		json.Unmarshal(e.Result, &ev)
		k := ev.Kind + " " + ev.Status.State
		if ev.Final {
			k += " final"
		}
		if ev.Status.Message != nil {
			k += fmt.Sprintf(" %d parts", len(ev.Status.Message.Parts))
		}
		kinds = append(kinds, k)
		if ev.Kind == "task" {
			id = ev.ID
		}
	}
	want := "task submitted|status-update working|artifact-update |status-update input-required final 2 parts"
	if got := strings.Join(kinds, "|"); got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"m2","taskId":%q,"parts":[{"kind":"data","data":{"approve":false}}]}}}`, id)
	events = readEvents(t, rpc(t, url, "", body))
	var text string
	kinds = nil
	for _, e := range events {
		var ev struct {
			Kind     string
			Status   struct{ State string }
			Append   bool
			Artifact struct {
				Parts []struct{ Text string }
			}
		}
		json.Unmarshal(e.Result, &ev)
		kinds = append(kinds, fmt.Sprintf("%s %s %v", ev.Kind, ev.Status.State, ev.Append))
		for _, p := range ev.Artifact.Parts {
			text += p.Text
		}
	}
	want = "task working false|status-update working false|artifact-update  true|status-update completed false"
	if got := strings.Join(kinds, "|"); got != want {
		t.Errorf("the answer's events %s, want %s", got, want)
	}
	if text != `got accept {"approve":false} for ` {
		t.Errorf("the answer's stream says %q", text)
	}
}

// TestAskKinds: a question of kind auth is auth-required; a url
// question's text answer reaches the agent with no content; a question
// without schema takes a text answer as {"text": …}; {"action":
// "decline"} declines.
func TestAskKinds(t *testing.T) {
	a := startAskAgent(t)
	url, _ := serveAsk(t, a, "ask", "{}")
	tests := []struct {
		ask, state, answer, got string
	}{
		{"auth", "TASK_STATE_AUTH_REQUIRED", `[{"text":"signed in"}]`, `got accept {"text":"signed in"} for signed in`},
		{"url", "TASK_STATE_INPUT_REQUIRED", `[{"text":"done"}]`, `got accept  for done`},
		{"free", "TASK_STATE_INPUT_REQUIRED", `[{"text":"no"}]`, `got accept {"text":"no"} for no`},
		{"pay", "TASK_STATE_INPUT_REQUIRED", `[{"data":{"action":"decline"}}]`, `got decline  for `},
		{"pay", "TASK_STATE_INPUT_REQUIRED", `[{"data":{"action":"cancel"}}]`, `got cancel  for `},
	}
	for _, tt := range tests {
		task, e := sendTask(t, url, "", send1("1", "SendMessage", tt.ask))
		if e != nil || task.Status.State != tt.state {
			t.Errorf("%s: %s %+v, want %s", tt.ask, task.Status.State, e, tt.state)
			continue
		}
		done, e := sendTask(t, url, "", answer1("SendMessage", task.ID, "", tt.answer))
		if e != nil || done.Status.State != "TASK_STATE_COMPLETED" || done.text() != "checking "+tt.got {
			t.Errorf("%s answered %s: %s %q %+v, want completed %q", tt.ask, tt.answer, done.Status.State, done.text(), e, "checking "+tt.got)
		}
	}
}

// TestAskBadQuestion: a question of 10 MB fails its task with
// QUESTION_TOO_LARGE's message, one not well formed with BAD_REPLY's,
// streamed or sent, and the agent is not called again.
func TestAskBadQuestion(t *testing.T) {
	a := startAskAgent(t)
	url, _ := serveAsk(t, a, "ask", "{}")
	for _, tt := range []struct{ ask, says string }{
		{"big", "exceeds limits.questions.bytes"},
		{"bad", "message is missing"},
	} {
		task, e := sendTask(t, url, "", send1("1", "SendMessage", tt.ask))
		if e != nil || task.Status.State != "TASK_STATE_FAILED" || task.Status.Message == nil || !strings.Contains(task.Status.Message.Parts[0].Text, tt.says) {
			t.Errorf("%s sent: %+v %+v, want failed saying %q", tt.ask, task.Status, e, tt.says)
		}
		events := readEvents(t, rpcBy(t, url, "", send1("1", "SendStreamingMessage", tt.ask)))
		last := string(events[len(events)-1].Result)
		if !strings.Contains(last, "TASK_STATE_FAILED") || !strings.Contains(last, tt.says) {
			t.Errorf("%s streamed: last event %s, want failed saying %q", tt.ask, last, tt.says)
		}
	}
	if n := len(a.calls()); n != 4 {
		t.Errorf("the agent was called %d times, want 4", n)
	}
}

// TestAskExpires: a task left waiting longer than limits.questions.wait
// fails saying so, and its answer is refused then; the agent is called
// once. A task canceled while waiting is canceled.
func TestAskExpires(t *testing.T) {
	a := startAskAgent(t)
	url, _ := serveAsk(t, a, "ask", "{wait: 300ms}")
	task, _ := sendTask(t, url, "", send1("1", "SendMessage", "pay"))
	if task.Status.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("state %s", task.Status.State)
	}
	eventually(t, "the task expires", func() bool { return getAskTask(t, url, task.ID).Status.State == "TASK_STATE_FAILED" })
	got := getAskTask(t, url, task.ID)
	if got.Status.Message == nil || !strings.Contains(got.Status.Message.Parts[0].Text, "waited longer than limits.questions.wait (300ms)") {
		t.Errorf("the expired task's message %+v", got.Status.Message)
	}
	if _, e := sendTask(t, url, "", answer1("SendMessage", task.ID, "", `[{"data":{"approve":true}}]`)); e == nil || e.Code != codeUnsupported {
		t.Errorf("an answer to the expired task: %+v, want %d", e, codeUnsupported)
	}
	// The agent is told: called once more with the task's ids and a
	// cancel whose reason is expired, in the background.
	eventually(t, "the agent is told", func() bool { return len(a.calls()) == 2 })
	if told := a.calls()[1]; told.Reply == nil || told.Reply.Action != "cancel" || told.Reply.Reason != "expired" || told.Reply.ID != "q1" ||
		told.IDs.TaskID != task.ID || told.IDs.ContextID != a.calls()[0].IDs.ContextID || told.Message != "" {
		t.Errorf("the agent was told %+v, want a cancel, reason expired, with the task's ids", told)
	}

	task, _ = sendTask(t, url, "", send1("1", "SendMessage", "pay"))
	r := callBy(t, url, "", taskReq("CancelTask", task.ID))
	if r.Error != nil || !strings.Contains(string(r.Result), "TASK_STATE_CANCELED") {
		t.Fatalf("CancelTask of a waiting task: %s %+v", r.Result, r.Error)
	}
	time.Sleep(400 * time.Millisecond) // past its wait: it stays canceled
	if s := getAskTask(t, url, task.ID).Status.State; s != "TASK_STATE_CANCELED" {
		t.Errorf("the canceled task is %s", s)
	}
	if n := len(a.calls()); n != 3 {
		t.Errorf("the agent was called %d times, want 3", n)
	}
}

// TestAskFlood: past limits.questions.waiting tasks waiting, the oldest
// fails as expired: the waiting stay bounded.
func TestAskFlood(t *testing.T) {
	a := startAskAgent(t)
	url, door := serveAsk(t, a, "ask", "{waiting: 3}")
	var ids []string
	for range 8 {
		task, _ := sendTask(t, url, "", send1("1", "SendMessage", "pay"))
		ids = append(ids, task.ID)
	}
	for i, id := range ids {
		got := getAskTask(t, url, id)
		want := "TASK_STATE_INPUT_REQUIRED"
		if i < 5 {
			want = "TASK_STATE_FAILED"
		}
		if got.Status.State != want {
			t.Errorf("task %d: %s, want %s", i, got.Status.State, want)
		}
		if i < 5 && !strings.Contains(got.Status.Message.Parts[0].Text, "limits.questions.waiting (3)") {
			t.Errorf("task %d's message %q", i, got.Status.Message.Parts[0].Text)
		}
	}
	door.tasks.mu.Lock()
	n := len(door.tasks.waiting)
	door.tasks.mu.Unlock()
	if n != 3 {
		t.Errorf("%d tasks waiting, want 3", n)
	}
	// Each of the five is told its question expired.
	eventually(t, "the agents are told", func() bool { return len(a.calls()) == 13 })
	var told []string
	for _, in := range a.calls() {
		if in.Reply != nil && in.Reply.Reason == "expired" {
			told = append(told, in.IDs.TaskID)
		}
	}
	slices.Sort(told)
	five := slices.Sorted(slices.Values(ids[:5]))
	if !slices.Equal(told, five) {
		t.Errorf("told the tasks %q, want the five expired %q", told, five)
	}
}

// TestJSClientAsk: the A2A project's JavaScript SDK, over JSON-RPC and
// HTTP+JSON, each as A2A 1.0 and 0.3, reads the agent's question from a
// task input-required, has an answer that fails the schema refused, and
// answers it: the task completes, sent and streamed.
func TestJSClientAsk(t *testing.T) {
	modules := sdkModules(t)
	a := startAskAgent(t)
	url, _ := serveAsk(t, a, "ask", "{}")
	checkAsk(t, runNode(t, modules, "ask.mjs", url))
}

// checkAsk checks ask.mjs's lines.
func checkAsk(t *testing.T, got []string) {
	t.Helper()
	var want []string
	for _, way := range []string{"JSONRPC 1.0", "HTTP+JSON 1.0", "JSONRPC 0.3", "HTTP+JSON 0.3"} {
		want = append(want,
			`{"step":"`+way+` ask","state":"TASK_STATE_INPUT_REQUIRED","asks":"Approve the transfer?","kind":"form","schema":["approve"],"text":"checking ","history":["user","agent"]}`,
			`{"step":"`+way+` bad answer","error":"RequestMalformedError","message":"task \"`,
			`{"step":"`+way+` get","state":"TASK_STATE_INPUT_REQUIRED","asks":"Approve the transfer?","kind":"form","schema":["approve"],"text":"checking ","history":["user","agent"]}`,
			`{"step":"`+way+` answer","state":"TASK_STATE_COMPLETED","asks":"","text":"checking got accept {\"approve\":true} for go ahead","history":["user","agent","user"]}`,
			`{"step":"`+way+` stream","events":["task TASK_STATE_SUBMITTED","statusUpdate TASK_STATE_WORKING","artifactUpdate checking ","statusUpdate TASK_STATE_INPUT_REQUIRED"]}`,
			`{"step":"`+way+` stream answer","events":["task TASK_STATE_WORKING","statusUpdate TASK_STATE_WORKING","artifactUpdate got accept {\"approve\":false} for ","statusUpdate TASK_STATE_COMPLETED"]}`)
	}
	if len(got) != len(want) {
		t.Fatalf("ask.mjs printed %d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	checkLines(t, got, want)
	for _, line := range got {
		if strings.Contains(line, "bad answer") && !strings.Contains(line, `does not meet the question's schema`) {
			t.Errorf("the refused answer: %s, want the schema's complaint", line)
		}
	}
}

// startAskReplica runs a sidecar whose A2A door calls method of askMap
// in front of a, its tasks in the Redis srv runs (its own client), its
// limits.questions questions.
func startAskReplica(t *testing.T, srv *redistest.Server, a *askAgent, method, questions string) *replica {
	t.Helper()
	store, err := state.Open(config.State{Store: config.StoreRedis, Redis: config.RedisState{
		URL: srv.URL(), KeyPrefix: "sc", TaskTTL: time.Hour, Lease: 15 * time.Second}}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(strings.ReplaceAll(askMap, "AGENT", a.url), "QUESTIONS", questions)))
	if err != nil {
		t.Fatal(err)
	}
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	door := newDoor(t, cfg, Options{Method: method, Store: store, Card: CardInfo{Name: "Story agent", Description: "Tells stories."}})
	t.Cleanup(func() { door.Close() })
	s := &proxy.Server{Config: cfg, Agent: dialect.Agent{Agent: core.Mux{Plain: client}, MaxReply: cfg.Limits.ReplyBytes, MaxRecord: cfg.Limits.RecordBytes}}
	hs := httptest.NewServer(s.HandlerFor(door))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		client.Close()
	})
	return &replica{url: hs.URL, door: door, store: store, srv: s}
}

// TestAskReplicas: with state.store: redis, a task whose agent asked on
// replica A waits in Redis: B and C read it with its question; another
// caller's answer is not found and one failing the schema refused on
// any; the answer on B resumes it there, the agent called with the same
// ids; A then reads it completed, with its history; a second answer is
// refused. A task left waiting expires, read on another replica; one
// canceled from another replica while waiting is canceled.
func TestAskReplicas(t *testing.T) {
	srv := redistest.Start(t)
	ag := startAskAgent(t)
	a := startAskReplica(t, srv, ag, "ask", "{wait: 2s}")
	b := startAskReplica(t, srv, ag, "ask", "{wait: 2s}")
	c := startAskReplica(t, srv, ag, "ask", "{wait: 2s}")
	task, e := sendTask(t, a.url, "", send1("1", "SendMessage", "pay bob"))
	if e != nil || task.Status.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("SendMessage on A: %+v %+v", task.Status, e)
	}
	for _, r := range []*replica{b, c, a} {
		got := getAskTask(t, r.url, task.ID)
		if got.Status.State != "TASK_STATE_INPUT_REQUIRED" || got.Status.Message == nil || len(got.Status.Message.Parts) != 2 ||
			got.text() != "checking " || len(got.History) != 2 {
			t.Errorf("GetTask on %s: %+v, history %d, text %q; want it waiting with its question", r.url, got.Status, len(got.History), got.text())
		}
	}
	if _, e := sendTask(t, b.url, "Bearer someone-else", answer1("SendMessage", task.ID, "", `[{"data":{"approve":true}}]`)); e == nil || e.Code != codeTaskNotFound {
		t.Errorf("another caller's answer on B: %+v, want %d", e, codeTaskNotFound)
	}
	if _, e := sendTask(t, c.url, "", answer1("SendMessage", task.ID, "", `[{"data":{"approve":1}}]`)); e == nil || e.Code != codeInvalidParams || !strings.Contains(e.Message, "schema") {
		t.Errorf("an answer failing the schema on C: %+v, want %d", e, codeInvalidParams)
	}
	done, e := sendTask(t, b.url, "", answer1("SendMessage", task.ID, "", `[{"text":"ok"},{"data":{"approve":true}}]`))
	if e != nil || done.Status.State != "TASK_STATE_COMPLETED" || done.text() != `checking got accept {"approve":true} for ok` {
		t.Fatalf("the answer on B: %+v %q %+v", done.Status, done.text(), e)
	}
	calls := ag.calls()
	if len(calls) != 2 || calls[1].IDs != calls[0].IDs || calls[1].Reply == nil {
		t.Errorf("the agent's calls %+v, want two, the same ids, the second with the reply", calls)
	}
	got := getAskTask(t, a.url, task.ID)
	if got.Status.State != "TASK_STATE_COMPLETED" || len(got.History) != 3 || got.text() != done.text() {
		t.Errorf("GetTask on A after: %+v, history %d, text %q", got.Status, len(got.History), got.text())
	}
	if _, e := sendTask(t, c.url, "", answer1("SendMessage", task.ID, "", `[{"data":{"approve":true}}]`)); e == nil || e.Code != codeUnsupported {
		t.Errorf("a second answer on C: %+v, want %d", e, codeUnsupported)
	}

	waited, _ := sendTask(t, a.url, "", send1("1", "SendMessage", "pay"))
	canceled, _ := sendTask(t, a.url, "", send1("1", "SendMessage", "pay"))
	if r := callBy(t, c.url, "", taskReq("CancelTask", canceled.ID)); r.Error != nil || !strings.Contains(string(r.Result), "TASK_STATE_CANCELED") {
		t.Errorf("CancelTask on C of a task waiting: %s %+v", r.Result, r.Error)
	}
	waitFor(t, "the task waiting expires", 10*time.Second, func() bool {
		return getAskTask(t, b.url, waited.ID).Status.State == "TASK_STATE_FAILED"
	})
	if m := getAskTask(t, c.url, waited.ID).Status.Message; m == nil || !strings.Contains(m.Parts[0].Text, "limits.questions.wait (2s)") {
		t.Errorf("the expired task's message %+v", m)
	}
	if s := getAskTask(t, b.url, canceled.ID).Status.State; s != "TASK_STATE_CANCELED" {
		t.Errorf("the canceled task on B: %s", s)
	}
	// The agent is told once, by the replica that parked the task; the
	// task canceled on C, whose clock on A fires too, is not expired.
	told := func() (ids []string) {
		for _, in := range ag.calls() {
			if in.Reply != nil && in.Reply.Reason == "expired" {
				ids = append(ids, in.IDs.TaskID)
			}
		}
		return ids
	}
	waitFor(t, "the agent is told", 10*time.Second, func() bool { return len(told()) > 0 })
	time.Sleep(2500 * time.Millisecond) // past the canceled task's clock
	if ids := told(); len(ids) != 1 || ids[0] != waited.ID {
		t.Errorf("told %q, want the expired task %s once", ids, waited.ID)
	}
}

// TestJSClientAskReplicas: ask.mjs's steps over three replicas sharing
// their tasks in Redis, each answer landing on another replica than its
// question.
func TestJSClientAskReplicas(t *testing.T) {
	modules := sdkModules(t)
	srv := redistest.Start(t)
	ag := startAskAgent(t)
	var urls []string
	for range 3 {
		urls = append(urls, startAskReplica(t, srv, ag, "ask", "{}").url)
	}
	checkAsk(t, runNode(t, modules, "ask.mjs", urls...))
}

// TestAskREST: over HTTP+JSON the answer that fails the schema is 400
// INVALID_ARGUMENT with the schema's complaint; the task waits on, and
// the answer resumes it.
func TestAskREST(t *testing.T) {
	a := startAskAgent(t)
	url, _ := serveAsk(t, a, "ask", "{}")
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url+RouteSend, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	status, body := post(`{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"pay"}]}}`)
	var res struct{ Task askTask }
	json.Unmarshal([]byte(body), &res)
	if status != 200 || res.Task.Status.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("message:send: %d %s", status, body)
	}
	answer := func(data string) string {
		return `{"message":{"role":"ROLE_USER","messageId":"m2","taskId":` + quote(res.Task.ID) + `,"parts":[{"data":` + data + `}]}}`
	}
	if status, body := post(answer(`{"approve":"no"}`)); status != 400 || !strings.Contains(body, "INVALID_ARGUMENT") || !strings.Contains(body, "schema") {
		t.Errorf("an answer failing the schema: %d %s, want 400 INVALID_ARGUMENT saying why", status, body)
	}
	if status, body := post(answer(`{"approve":true}`)); status != 200 || !strings.Contains(body, "TASK_STATE_COMPLETED") {
		t.Errorf("the answer: %d %s, want the task completed", status, body)
	}
}

// TestAskRace: answers to one task sent at once, on one replica and on
// two sharing Redis, resume it once: one is served, the others refused
// -32004, and the agent is called again once.
func TestAskRace(t *testing.T) {
	srv := redistest.Start(t)
	ag := startAskAgent(t)
	a := startAskReplica(t, srv, ag, "ask", "{}")
	b := startAskReplica(t, srv, ag, "ask", "{}")
	local, _ := serveAsk(t, ag, "ask", "{}")
	for _, urls := range [][]string{{local, local, local, local}, {a.url, b.url, a.url, b.url}} {
		task, _ := sendTask(t, urls[0], "", send1("1", "SendMessage", "pay"))
		before := len(ag.calls())
		var wg sync.WaitGroup
		codes := make([]int, len(urls))
		for i, url := range urls {
			wg.Go(func() {
				_, e := sendTask(t, url, "", answer1("SendMessage", task.ID, "", `[{"data":{"approve":true}}]`))
				if e != nil {
					codes[i] = e.Code
				}
			})
		}
		wg.Wait()
		served := 0
		for _, c := range codes {
			switch c {
			case 0:
				served++
			case codeUnsupported:
			default:
				t.Errorf("an answer at once: %d, want served or %d", c, codeUnsupported)
			}
		}
		if served != 1 || len(ag.calls()) != before+1 {
			t.Errorf("%v: %d answers served (%v), the agent called %d times; want once each", urls, served, codes, len(ag.calls())-before)
		}
	}
}

// TestAskSubscriber: a subscriber to a task whose agent then asks gets
// the task's input-required status-update, with the question, and its
// stream ends there.
func TestAskSubscriber(t *testing.T) {
	a := startAskAgent(t)
	url, _ := serveAsk(t, a, "ask", "{}")
	stream := newSSE(t, rpcBy(t, url, "", send1("1", "SendStreamingMessage", "gated")))
	defer stream.resp.Body.Close()
	var id string
	for id == "" {
		raw, ok := stream.next(t)
		if !ok {
			t.Fatal("the stream ended before its task")
		}
		if k, v := kind(raw); k == "task" {
			id = v
		}
	}
	sub := subscribe(t, url, "", "1.0", taskReq("SubscribeToTask", id))
	first, _ := sub.next(t)
	a.gate <- struct{}{}
	var got []string
	for {
		r, ok := sub.next(t)
		if !ok {
			break
		}
		got = append(got, string(r.Result))
	}
	if len(first.Result) == 0 || len(got) == 0 {
		t.Fatalf("the subscription: first %s, then %q", first.Result, got)
	}
	last := got[len(got)-1]
	if !strings.Contains(last, "TASK_STATE_INPUT_REQUIRED") || !strings.Contains(last, "Gated question") || !strings.Contains(last, "q-gated") {
		t.Errorf("the subscription's last event %s, want the input-required status-update with the question", last)
	}
}

// TestAskCounted: a waiting task's question and history count toward
// limits.task_store_bytes.
func TestAskCounted(t *testing.T) {
	a := startAskAgent(t)
	url, door := serveAsk(t, a, "ask", "{}")
	task, _ := sendTask(t, url, "", send1("1", "SendMessage", "pay"))
	door.tasks.mu.Lock()
	cost := door.tasks.tasks[task.ID].cost
	door.tasks.mu.Unlock()
	question := int64(len(questionFor("pay")))
	if cost < taskOverhead+2*question {
		t.Errorf("the waiting task counts %d bytes, want at least %d: the question, and its copy in the history", cost, taskOverhead+2*question)
	}
}

// TestAskTellCut: the call telling an agent its question expired is cut
// when the door closes (the sidecar stops): Close does not wait out an
// agent that never answers it, and the agent's request ends.
func TestAskTellCut(t *testing.T) {
	told := make(chan struct{})
	ended := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in askInput
		json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "text/event-stream")
		if in.Reply == nil {
			fmt.Fprintf(w, "data: %s\n\n", questionFor("pay"))
			return
		}
		close(told)
		<-r.Context().Done() // never answers the expiry
		close(ended)
	}))
	t.Cleanup(agent.Close)
	a := &askAgent{url: agent.URL}
	url, door := serveAsk(t, a, "ask", "{wait: 100ms}")
	task, _ := sendTask(t, url, "", send1("1", "SendMessage", "pay"))
	if task.Status.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("state %s", task.Status.State)
	}
	select {
	case <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent was not told its question expired")
	}
	closed := make(chan struct{})
	go func() { door.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second): // the tell's own bound is 30 s
		t.Fatal("Close waited for the agent told")
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Error("the agent's request did not end when the door closed")
	}
}

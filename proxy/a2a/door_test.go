package a2a

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

// The shapes the tests read: a Task, an update, the card.
type (
	taskJSON struct {
		Kind      string `json:"kind"`
		ID        string `json:"id"`
		ContextID string `json:"contextId"`
		Status    struct {
			State   string `json:"state"`
			Message *struct {
				Role  string            `json:"role"`
				Parts []json.RawMessage `json:"parts"`
			} `json:"message"`
		} `json:"status"`
		Artifacts []struct {
			ArtifactID string `json:"artifactId"`
			Parts      []struct {
				Kind string          `json:"kind"`
				Text string          `json:"text"`
				Data json.RawMessage `json:"data"`
			} `json:"parts"`
		} `json:"artifacts"`
	}
	eventJSON struct {
		taskJSON
		TaskID   string          `json:"taskId"`
		Final    *bool           `json:"final"`
		Append   bool            `json:"append"`
		Artifact json.RawMessage `json:"artifact"`
	}
)

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// text is an artifact's text parts, joined.
func (tk taskJSON) text() string {
	var b strings.Builder
	for _, a := range tk.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TestCard: both well-known paths, with and without A2A-Version, serve a
// card with the 0.3 and the 1.0 interfaces at the listener's URL, its
// streaming capability the method's.
func TestCard(t *testing.T) {
	url := serve(t, "stream_query")
	for _, path := range []string{RouteCard, RouteLegacyCard} {
		for _, v := range []string{"", "1.0", "0.3"} {
			req, _ := http.NewRequest(http.MethodGet, url+path, nil)
			if v != "" {
				req.Header.Set("A2A-Version", v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var c card
			err = json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("GET %s (A2A-Version %q): %d %v", path, v, resp.StatusCode, err)
			}
			if c.Name != "Story agent" || c.Description != "Tells stories." || c.URL != url+"/" || c.Version == "" ||
				!c.Capabilities.Streaming || c.ProtocolVersion != "0.3.0" || c.PreferredTransport != "JSONRPC" ||
				!slices.Equal(c.DefaultInputModes, []string{"text/plain"}) || !slices.Contains(c.DefaultOutputModes, "text/plain") ||
				len(c.Skills) != 1 || c.Skills[0].ID != "stream_query" || len(c.Skills[0].Tags) == 0 ||
				!slices.Equal(c.AdditionalInterfaces, []legacyInterface{{url + "/", "JSONRPC"}, {url + "/", "HTTP+JSON"}}) ||
				!slices.Equal(c.SupportedInterfaces, []agentInterface{{url + "/", "JSONRPC", "1.0"}, {url + "/", "JSONRPC", "0.3"}, {url + "/", "HTTP+JSON", "1.0"}, {url + "/", "HTTP+JSON", "0.3"}}) {
				t.Errorf("GET %s (A2A-Version %q): card %+v", path, v, c)
			}
		}
	}
	cfg, _ := config.Parse("t.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {query: {}}\n"))
	var c card
	d := newDoor(t, cfg, Options{Method: "query", URL: "https://agent.example/a2a/"})
	rec := httpRecorder(d, http.MethodGet, RouteCard)
	json.Unmarshal(rec, &c)
	if raw := string(httpRecorder(newDoor(t, cfg, Options{Method: "query", Card: CardInfo{Description: "a < b & c"}}), http.MethodGet, RouteCard)); !strings.Contains(raw, `"description": "a < b & c"`) || !strings.HasSuffix(raw, "}\n") {
		t.Errorf("a card whose description has < and &: %s, want them as written", raw)
	}
	if c.URL != "https://agent.example/a2a/" || c.SupportedInterfaces[0].URL != c.URL || c.Capabilities.Streaming || c.Name != "query" || c.Description == "" {
		t.Errorf("a unary method's card with Options.URL and no card info: %+v", c)
	}
}

// TestMessage03: message/send answers the completed Task, its artifact the
// records (text parts joined, the data record a data part), and the
// method's input carries the message and the task's ids; message/stream
// streams the Task, working, one artifact-update per record and a final
// completed status-update, each a JSON-RPC response with the request's id.
func TestMessage03(t *testing.T) {
	url := serve(t, "stream_query")
	r := call(t, url, "", send0(`"s1"`, "message/send", "hi"))
	tk := decode[taskJSON](t, r.Result)
	if r.Error != nil || string(r.ID) != `"s1"` || tk.Kind != "task" || tk.Status.State != "completed" || tk.text() != "[hi] once upon a time" ||
		len(tk.Artifacts) != 1 || len(tk.Artifacts[0].Parts) != 4 || tk.Artifacts[0].Parts[3].Kind != "data" ||
		string(tk.Artifacts[0].Parts[3].Data) != `{"n":1,"task":"`+tk.ID+`","context":"`+anonymous.Scope(tk.ContextID)+`"}` {
		t.Errorf("message/send: %s %+v, want the completed task with its artifact", r.Result, r.Error)
	}

	evs := readEvents(t, rpc(t, url, "", send0("7", "message/stream", "hi")))
	var kinds []string
	var text strings.Builder
	for i, e := range evs {
		ev := decode[eventJSON](t, e.Result)
		if string(e.ID) != "7" || e.Error != nil {
			t.Errorf("event %d: id %s error %v, want id 7 and a result", i, e.ID, e.Error)
		}
		k := ev.Kind
		switch ev.Kind {
		case "status-update":
			k += " " + ev.Status.State
			if *ev.Final != (i == len(evs)-1) {
				t.Errorf("event %d final %v", i, *ev.Final)
			}
		case "artifact-update":
			a := decode[struct {
				Parts []struct{ Text string } `json:"parts"`
			}](t, ev.Artifact)
			text.WriteString(a.Parts[0].Text)
			if ev.Append != (kinds[len(kinds)-1] == "artifact-update") {
				t.Errorf("event %d: append %v", i, ev.Append)
			}
		case "task":
			k += " " + ev.Status.State
		}
		kinds = append(kinds, k)
	}
	want := []string{"task submitted", "status-update working", "artifact-update", "artifact-update", "artifact-update", "artifact-update", "artifact-update", "status-update completed"}
	if !slices.Equal(kinds, want) || text.String() != "[hi] once upon a time" {
		t.Errorf("message/stream: %q, text %q; want %q", kinds, text.String(), want)
	}
}

// TestMessage10: with A2A-Version: 1.0 the methods are SendMessage and
// SendStreamingMessage, results StreamResponse wrappers with SCREAMING
// states and no final flag; a unary method answers both too.
func TestMessage10(t *testing.T) {
	for _, method := range []string{"stream_query", "query"} {
		url := serve(t, method)
		r := call(t, url, "1.0", send1("1", "SendMessage", "hi"))
		res := decode[struct{ Task *taskJSON }](t, r.Result)
		if r.Error != nil || res.Task == nil || res.Task.Kind != "" || res.Task.Status.State != "TASK_STATE_COMPLETED" || !strings.Contains(res.Task.text(), "hi") {
			t.Errorf("%s: SendMessage: %s %+v, want {\"task\": the completed task}", method, r.Result, r.Error)
		}
		if method == "query" { // a unary method does not stream: TestStreamingUnsupported
			continue
		}
		evs := readEvents(t, rpc(t, url, "1.0", send1("2", "SendStreamingMessage", "hi")))
		var got []string
		for _, e := range evs {
			if strings.Contains(string(e.Result), `"final"`) || strings.Contains(string(e.Result), `"kind"`) {
				t.Errorf("%s: a 1.0 event with a 0.3 field: %s", method, e.Result)
			}
			var w map[string]eventJSON
			json.Unmarshal(e.Result, &w)
			for k, ev := range w {
				got = append(got, strings.TrimSpace(k+" "+ev.Status.State))
			}
		}
		if len(got) < 4 || got[0] != "task TASK_STATE_SUBMITTED" || got[1] != "statusUpdate TASK_STATE_WORKING" ||
			got[2] != "artifactUpdate" || got[len(got)-1] != "statusUpdate TASK_STATE_COMPLETED" {
			t.Errorf("%s: SendStreamingMessage: %q", method, got)
		}
	}
}

// TestFailed: an agent's error ends the stream with a failed, final
// status-update carrying its message, and message/send with the failed
// task.
func TestFailed(t *testing.T) {
	url := serve(t, "fail")
	evs := readEvents(t, rpc(t, url, "", send0("1", "message/stream", "hi")))
	last := decode[eventJSON](t, evs[len(evs)-1].Result)
	if last.Kind != "status-update" || last.Status.State != "failed" || last.Final == nil || !*last.Final ||
		last.Status.Message == nil || !strings.Contains(string(last.Status.Message.Parts[0]), "the model is overloaded") {
		t.Errorf("failing stream's last event: %s, want failed, final, with the agent's message", evs[len(evs)-1].Result)
	}
	r := call(t, url, "", send0("2", "message/send", "hi"))
	if tk := decode[taskJSON](t, r.Result); tk.Status.State != "failed" || tk.Status.Message == nil || tk.text() != "partial" {
		t.Errorf("failing message/send: %s", r.Result)
	}
}

// TestErrors: what is no request, no method of the version or no valid
// params is a JSON-RPC error with the request's id.
func TestErrors(t *testing.T) {
	url := serve(t, "stream_query")
	tests := []struct {
		version, body string
		code          int
	}{
		{"", `{"jsonrpc":"2.0","id":1,"method":`, codeParse},
		{"", `[{"jsonrpc":"2.0","id":1,"method":"message/send"}]`, codeInvalidRequest},
		{"", `{"jsonrpc":"1.0","id":1,"method":"message/send"}`, codeInvalidRequest},
		{"", `{"jsonrpc":"2.0","id":1}`, codeInvalidRequest},
		{"", `{"jsonrpc":"2.0","id":1,"method":"message/teleport","params":{}}`, codeMethodNotFound},
		{"", send1("1", "SendMessage", "hi"), codeMethodNotFound},
		{"1.0", send0("1", "message/send", "hi"), codeMethodNotFound},
		{"2.0", send1("1", "SendMessage", "hi"), codeVersionUnsupport},
		{"", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, codeInvalidParams},
		{"", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"kind":"video"}]}}}`, codeInvalidParams},
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}`, codeInvalidParams},
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}`, codeTaskNotFound},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"nope"}}`, codeTaskNotFound},
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"x"}}`, codeTaskNotFound},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"x"}}`, codeTaskNotFound},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{}}`, codeInvalidParams},
		{"", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`, codeMethodNotFound},
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}`, codeMethodNotFound}, // 0.3 has none
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"` + strings.Repeat("i", maxID+1) + `"}}`, codeInvalidParams},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":"` + strings.Repeat("c", maxID+1) + `"}}`, codeInvalidParams},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":101}}`, codeInvalidParams},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":0}}`, codeInvalidParams},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageToken":"nope"}}`, codeInvalidParams},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"TASK_STATE_SLEEPING"}}`, codeInvalidParams},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"statusTimestampAfter":"yesterday"}}`, codeInvalidParams},
		// No push notifications (-32003), as the card says; no extended
		// card declared (-32004, §3.3.4), in both versions.
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"x","pushNotificationConfig":{"url":"https://example.com"}}}`, codePushUnsupported},
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/get","params":{"id":"x"}}`, codePushUnsupported},
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/list","params":{"id":"x"}}`, codePushUnsupported},
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/delete","params":{"id":"x","pushNotificationConfigId":"p"}}`, codePushUnsupported},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"x","url":"https://example.com"}}`, codePushUnsupported},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig","params":{"taskId":"x","id":"p"}}`, codePushUnsupported},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"x"}}`, codePushUnsupported},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"DeleteTaskPushNotificationConfig","params":{"taskId":"x","id":"p"}}`, codePushUnsupported},
		{"", `{"jsonrpc":"2.0","id":1,"method":"agent/getAuthenticatedExtendedCard"}`, codeUnsupported},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`, codeUnsupported},
	}
	for _, tt := range tests {
		r := call(t, url, tt.version, tt.body)
		if r.Error == nil || r.Error.Code != tt.code || r.Result != nil {
			t.Errorf("%s (A2A-Version %q): %s %+v, want error %d", tt.body, tt.version, r.Result, r.Error, tt.code)
		}
		if tt.code != codeParse && tt.code != codeInvalidRequest && string(r.ID) != "1" {
			t.Errorf("%s: id %s, want 1", tt.body, r.ID)
		}
	}
	for _, tt := range []struct {
		method, path string
		status       int
	}{{http.MethodGet, "/", 405}, {http.MethodPost, RouteCard, 405}, {http.MethodGet, "/nope", 404}, {http.MethodGet, "/healthz", 200}} {
		req, _ := http.NewRequest(tt.method, url+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.status)
		}
	}
}

// TestTasks: tasks/get answers a task the door ran; tasks/cancel ends a
// running stream's call, the stream with a final canceled status-update,
// and refuses a task already ended.
func TestTasks(t *testing.T) {
	url := serve(t, "slow")
	resp := rpc(t, url, "", send0("1", "message/stream", "hi"))
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	next := func() eventJSON {
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return decode[eventJSON](t, decode[rpcResult](t, []byte(data)).Result)
			}
		}
		t.Fatal("the stream ended early")
		return eventJSON{}
	}
	first := next()
	for next().Kind != "artifact-update" {
	}
	id := first.ID
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"` + id + `"}}`
	if tk := decode[taskJSON](t, call(t, url, "", get).Result); tk.Status.State != "working" || tk.text() != "thinking" {
		t.Errorf("tasks/get of the running task: %+v", tk)
	}
	cancel := `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"` + id + `"}}`
	if tk := decode[taskJSON](t, call(t, url, "", cancel).Result); tk.ID != id || tk.Status.State != "canceled" {
		t.Errorf("tasks/cancel: %+v, want the task canceled", tk)
	}
	if last := next(); last.Kind != "status-update" || last.Status.State != "canceled" || !*last.Final {
		t.Errorf("the canceled stream's last event: %+v", last)
	}
	for sc.Scan() {
		if sc.Text() != "" {
			t.Errorf("after the final event: %q", sc.Text())
		}
	}
	if tk := decode[taskJSON](t, call(t, url, "1.0", strings.Replace(get, "tasks/get", "GetTask", 1)).Result); tk.Status.State != "TASK_STATE_CANCELED" {
		t.Errorf("GetTask after cancel: %+v", tk)
	}
	if r := call(t, url, "", cancel); r.Error == nil || r.Error.Code != codeTaskNotCancel {
		t.Errorf("tasks/cancel of a canceled task: %+v, want %d", r.Error, codeTaskNotCancel)
	}
}

// TestRefused: what the sidecar refuses before calling the agent is a
// JSON-RPC error, for message/stream too: an input the method's request
// cannot be built from is -32602 with the request's id, a call from a
// sidecar (a loop, refused before its body is read: id null) 508 and
// -32603, a body over the limit 413 and -32600.
func TestRefused(t *testing.T) {
	url := serve(t, "needs_user")
	if r := call(t, url, "", send0("1", "message/stream", "hi")); r.Error == nil || r.Error.Code != codeInvalidParams ||
		string(r.ID) != "1" || !strings.Contains(r.Error.Message, "user_id") {
		t.Errorf("an input without the path's field: %s %+v, want %d naming user_id", r.Result, r.Error, codeInvalidParams)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(send1("2", "SendStreamingMessage", "hi")))
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Sidecar-Hop", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var r rpcResult
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected || r.Error == nil || r.Error.Code != codeInternal || string(r.ID) != "null" || !strings.Contains(r.Error.Message, "loop") {
		t.Errorf("a call from a sidecar: %d %s %+v, want 508, id null and %d", resp.StatusCode, r.ID, r.Error, codeInternal)
	}
	// A page of another site (the shared Host and Origin guard): 403,
	// an invalid request, not an internal error.
	req, _ = http.NewRequest(http.MethodPost, url+"/", strings.NewReader(send0("4", "message/send", "hi")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.test")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	r = rpcResult{}
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || r.Error == nil || r.Error.Code != codeInvalidRequest || !strings.Contains(r.Error.Message, "Origin") {
		t.Errorf("a call from another site's page: %d %+v, want 403 and %d naming the Origin", resp.StatusCode, r.Error, codeInvalidRequest)
	}
	resp = rpc(t, url, "", send0("3", "message/send", strings.Repeat("x", 5000)))
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || r.Error == nil || r.Error.Code != codeInvalidRequest {
		t.Errorf("a body over the limit: %d %+v, want 413 and %d", resp.StatusCode, r.Error, codeInvalidRequest)
	}
}

// TestCancelSend: tasks/cancel of a message/send's task ends its call, and
// the send answers the canceled task, for a streaming method (its first
// record kept) and a unary one.
func TestCancelSend(t *testing.T) {
	for _, method := range []string{"slow", "slow_unary"} {
		t.Run(method, func(t *testing.T) { testCancelSend(t, method) })
	}
}

func testCancelSend(t *testing.T, method string) {
	stream := method == "slow"
	started := make(chan string, 1)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			IDs struct {
				TaskID string `json:"task_id"`
			} `json:"ids"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"text\":\"thinking\"}\n\n")
			http.NewResponseController(w).Flush()
		}
		started <- in.IDs.TaskID
		<-r.Context().Done()
	}))
	t.Cleanup(agent.Close)
	url, _, _ := serveMap(t, method, strings.Replace(testMap, "methods:\n", "methods:\n  slow_unary: {call: POST /slow}\n", 1), agent.URL)
	done := make(chan rpcResult)
	go func() {
		var r rpcResult
		req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(send1("1", "SendMessage", "hi")))
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := testClient.Do(req); err == nil {
			json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
		}
		done <- r
	}()
	var id string
	select {
	case id = <-started:
	case r := <-done:
		t.Fatalf("the SendMessage answered before its call reached the agent: %s %+v", r.Result, r.Error)
	}
	want := ""
	if stream {
		want = "thinking"
		get := `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"` + id + `"}}`
		eventually(t, "the task working with its first record", func() bool {
			r := call(t, url, "1.0", get)
			return r.Error == nil && decode[taskJSON](t, r.Result).text() == "thinking"
		})
	}
	r := call(t, url, "1.0", `{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	if tk := decode[taskJSON](t, r.Result); tk.Status.State != "TASK_STATE_CANCELED" {
		t.Errorf("CancelTask: %s %+v", r.Result, r.Error)
	}
	sent := <-done
	if tk := decode[struct{ Task taskJSON }](t, sent.Result).Task; tk.ID != id || tk.Status.State != "TASK_STATE_CANCELED" || tk.text() != want {
		t.Errorf("the canceled SendMessage answered %s %+v", sent.Result, sent.Error)
	}
}

package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// serveMounted runs the sidecar with the A2A door calling method mounted
// at /a2a on a listener it shares, and returns the mount's URL.
func serveMounted(t *testing.T, method string) string {
	t.Helper()
	url, _, _ := serveAt(t, method, testMap, startAgent(t), "/a2a")
	return url
}

// TestJSClientREST: the A2A project's JavaScript SDK over HTTP+JSON,
// built from the card with its REST transport alone, forced onto the
// door as a 1.0 client and as a 0.3 one (its LegacyRestTransport), sends,
// streams, gets and cancels, against the door on its own listener and
// mounted: each typed error (TaskNotCancelable, TaskNotFound) read from
// the door's google.rpc.Status, a running task canceled from another
// connection while its stream is read.
func TestJSClientREST(t *testing.T) {
	modules := sdkModules(t)
	for _, where := range []string{"own listener", "mounted"} {
		t.Run(where, func(t *testing.T) {
			stream, slow := serve(t, "stream_query"), serve(t, "slow")
			if where == "mounted" {
				stream, slow = serveMounted(t, "stream_query"), serveMounted(t, "slow")
			}
			got := runNode(t, modules, "rest.mjs", stream, slow)
			streamed := `"events":["task TASK_STATE_SUBMITTED","statusUpdate TASK_STATE_WORKING","artifactUpdate","artifactUpdate","artifactUpdate","artifactUpdate","artifactUpdate","statusUpdate TASK_STATE_COMPLETED"],"text":"[hi] once upon a time{\"n\":1`
			var want []string
			for _, way := range []string{"card", "1.0", "0.3"} {
				version := "1.0"
				if way == "0.3" {
					version = "0.3"
				}
				want = append(want,
					`{"step":"`+way+`","binding":"HTTP+JSON","version":"`+version,
					`{"step":"`+way+` send","state":"TASK_STATE_COMPLETED","text":"[hi] once upon a time{\"n\":1`,
					`{"step":"`+way+` stream",`+streamed,
					`{"step":"`+way+` get","state":"TASK_STATE_COMPLETED","same":true}`,
					`{"step":"`+way+` cancel ended","error":"TaskNotCancelableError"`,
					`{"step":"`+way+` get unknown","error":"TaskNotFoundError"`)
			}
			for _, way := range []string{"card", "1.0", "0.3"} {
				want = append(want, `{"step":"`+way+` cancel running","canceled":"TASK_STATE_CANCELED","events":["task TASK_STATE_SUBMITTED","statusUpdate TASK_STATE_WORKING","artifactUpdate","statusUpdate TASK_STATE_CANCELED"]}`)
			}
			if len(got) != len(want) {
				t.Fatalf("rest.mjs printed %d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
			}
			checkLines(t, got, want)
		})
	}
}

// runNode runs script of testdata/a2a with args and returns the lines it
// printed, each checked to be JSON.
func runNode(t *testing.T, modules, script string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"../../testdata/a2a/" + script}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s\n%s", script, err, out, stderr.String())
	}
	t.Logf("%s:\n%s", script, out)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s printed %q", script, line)
		}
		got = append(got, line)
	}
	return got
}

// restDo sends a request of the HTTP+JSON binding, with A2A-Version when
// version is not "" and a JSON body when body is not "", and returns the
// response and its body.
func restDo(t *testing.T, method, url, version, body string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, r)
	if body != "" || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// statusJSON is an error of the HTTP+JSON binding: a google.rpc.Status,
// and over 0.3 the JSON-RPC code and message beside it.
type statusJSON struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Error   struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
			Domain string `json:"domain"`
		} `json:"details"`
	} `json:"error"`
}

// checkStatus checks that resp, b is an error of the binding: HTTP status
// code, its google.rpc.Status with the google.rpc.Code name, and one
// ErrorInfo with reason and domain; what names the request in messages.
func checkStatus(t *testing.T, what string, resp *http.Response, b []byte, code int, name, reason, domain string) statusJSON {
	t.Helper()
	var s statusJSON
	if err := json.Unmarshal(b, &s); err != nil || resp.StatusCode != code || s.Error.Code != code || s.Error.Status != name ||
		s.Error.Message == "" || len(s.Error.Details) != 1 || s.Error.Details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" ||
		s.Error.Details[0].Reason != reason || s.Error.Details[0].Domain != domain {
		t.Errorf("%s: %d %s, want %d, a google.rpc.Status %s with ErrorInfo %s in %s", what, resp.StatusCode, b, code, name, reason, domain)
	}
	return s
}

// restBody is a SendMessageRequest with text, its parts in "content"
// for 0.3's binding, else in "parts".
func restBody(text string, v03 bool) string {
	parts := "parts"
	if v03 {
		parts = "content"
	}
	b, _ := json.Marshal(map[string]any{"message": map[string]any{"messageId": "m1", "role": "ROLE_USER", parts: []any{map[string]string{"text": text}}}})
	return string(b)
}

// TestRESTMessage: over HTTP+JSON, in 1.0 (the header or the query
// parameter, with or without a tenant, the tenant "v1" too) and in 0.3
// (no header at /v1, or A2A-Version: 0.3), POST message:send answers the
// completed task in its {"task": …} wrapper, no JSON-RPC envelope, no
// "kind", in the version's ProtoJSON (a data part {"data": …, "mediaType"}
// in 1.0, {"data": {"data": …}} in 0.3); GET tasks/{id} the Task itself;
// the ended task's cancel is TASK_NOT_CANCELABLE (400), an unknown task
// TASK_NOT_FOUND (404), a negative historyLength INVALID_ARGUMENT.
func TestRESTMessage(t *testing.T) {
	url := serve(t, "stream_query")
	tests := []struct {
		name, prefix, version, query string
		v03                          bool
	}{
		{"1.0", "", "1.0", "", false},
		{"1.0 by query parameter", "", "", "?A2A-Version=1.0", false},
		{"1.0 under a tenant", "/acme", "1.0", "", false},
		{"1.0 under the tenant v1", "/v1", "1.0", "", false},
		{"0.3 at /v1", "/v1", "", "", true},
		{"0.3 by header", "", "0.3", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := url + tt.prefix
			resp, b := restDo(t, http.MethodPost, base+"/message:send"+tt.query, tt.version, restBody("hi", tt.v03))
			ct := "application/a2a+json"
			if tt.v03 {
				ct = "application/json"
			}
			sent := decode[struct{ Task json.RawMessage }](t, b)
			tk := decode[taskJSON](t, sent.Task)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ct || tk.Status.State != "TASK_STATE_COMPLETED" ||
				tk.text() != "[hi] once upon a time" || bytes.Contains(b, []byte(`"jsonrpc"`)) || bytes.Contains(b, []byte(`"kind"`)) {
				t.Fatalf("message:send: %d %s %s, want 200 %s and the completed task", resp.StatusCode, resp.Header.Get("Content-Type"), b, ct)
			}
			if !tt.v03 {
				checkProto(t, "message:send's answer", b, "SendMessageResponse")
			}
			data := `{"data":{"data":{"n":1,`
			if !tt.v03 {
				data = `"mediaType":"application/json"`
			}
			if !bytes.Contains(b, []byte(data)) {
				t.Errorf("message:send: %s, want its data part as %s", b, data)
			}
			resp, b = restDo(t, http.MethodGet, base+"/tasks/"+tk.ID+tt.query, tt.version, "")
			if !tt.v03 {
				checkProto(t, "GET tasks/{id}'s answer", b, "Task")
			}
			if got := decode[taskJSON](t, b); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ct ||
				got.ID != tk.ID || got.Status.State != "TASK_STATE_COMPLETED" || got.text() != tk.text() {
				t.Errorf("GET tasks/{id}: %d %s, want 200 and the task itself", resp.StatusCode, b)
			}
			resp, b = restDo(t, http.MethodGet, base+"/tasks/"+tk.ID+"?historyLength=3&A2A-Version="+tt.version, tt.version, "")
			if resp.StatusCode != 200 {
				t.Errorf("GET tasks/{id}?historyLength=3: %d %s", resp.StatusCode, b)
			}
			resp, b = restDo(t, http.MethodGet, base+"/tasks/"+tk.ID+"?historyLength=-1", tt.version, "")
			checkStatus(t, "historyLength=-1", resp, b, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "a2a-protocol.org")
			resp, b = restDo(t, http.MethodPost, base+"/tasks/"+tk.ID+":cancel"+tt.query, tt.version, "")
			s := checkStatus(t, "cancel of the completed task", resp, b, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", "a2a-protocol.org")
			if tt.v03 && (s.Code != codeTaskNotCancel || s.Message != s.Error.Message) {
				t.Errorf("0.3's cancel of the completed task: %s, want code %d and the message beside the status", b, codeTaskNotCancel)
			}
			resp, b = restDo(t, http.MethodGet, base+"/tasks/no-such-task"+tt.query, tt.version, "")
			checkStatus(t, "GET of an unknown task", resp, b, 404, "NOT_FOUND", "TASK_NOT_FOUND", "a2a-protocol.org")
		})
	}
}

// streamResponses reads an HTTP+JSON stream to its end: each data: line a
// StreamResponse, one member naming what it holds.
func streamResponses(t *testing.T, resp *http.Response) (names []string, events []eventJSON, raw []string) {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s %q, want 200 text/event-stream", resp.StatusCode, ct, b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &m); err != nil || len(m) != 1 {
			t.Fatalf("event %q is no StreamResponse (%v)", data, err)
		}
		for k, v := range m {
			names = append(names, k)
			events = append(events, decode[eventJSON](t, v))
		}
		raw = append(raw, data)
	}
	return names, events, raw
}

// restStream posts a message:stream and returns the response.
func restStream(t *testing.T, url, version, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/a2a+json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestRESTStream: POST message:stream is SSE whose every data: is a
// StreamResponse, no JSON-RPC envelope: the submitted task, working, the
// artifact's updates and the terminal status; in 0.3 (at /v1) each status
// update says final, in 1.0 none does. A failing agent's task ends
// failed, its status message the agent's, its parts in "parts" (1.0) or
// "content" (0.3).
func TestRESTStream(t *testing.T) {
	url, fail := serve(t, "stream_query"), serve(t, "fail")
	for _, v03 := range []bool{false, true} {
		prefix, version := "", "1.0"
		if v03 {
			prefix, version = "/v1", ""
		}
		names, events, raw := streamResponses(t, restStream(t, url+prefix+"/message:stream", version, restBody("hi", v03)))
		want := []string{"task", "statusUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"}
		if strings.Join(names, " ") != strings.Join(want, " ") || events[0].Status.State != "TASK_STATE_SUBMITTED" ||
			events[1].Status.State != "TASK_STATE_WORKING" || events[7].Status.State != "TASK_STATE_COMPLETED" {
			t.Fatalf("0.3 %v: stream %v:\n%s", v03, names, strings.Join(raw, "\n"))
		}
		for i, e := range events {
			if !v03 {
				checkProto(t, "an event", []byte(raw[i]), "StreamResponse")
			}
			if names[i] != "statusUpdate" {
				continue
			}
			if final := e.Final != nil && *e.Final; (v03 && (e.Final == nil || final != (i == 7))) || (!v03 && e.Final != nil) {
				t.Errorf("0.3 %v: status update %s: final %v", v03, raw[i], e.Final)
			}
		}
		names, events, raw = streamResponses(t, restStream(t, fail+prefix+"/message:stream", version, restBody("hi", v03)))
		last := raw[len(raw)-1]
		if !v03 {
			checkProto(t, "a failing stream's last event", []byte(last), "StreamResponse")
		}
		key := `"parts":[{"text":"the model is overloaded"}]`
		if v03 {
			key = `"content":[{"text":"the model is overloaded"}]`
		}
		if names[len(names)-1] != "statusUpdate" || events[len(events)-1].Status.State != "TASK_STATE_FAILED" ||
			!strings.Contains(last, key) || !strings.Contains(last, `"role":"ROLE_AGENT"`) {
			t.Errorf("0.3 %v: a failing agent's stream ends %s, want failed with %s", v03, last, key)
		}
	}
}

// TestRESTGeminiEnterprise: the calls Gemini Enterprise and Agent
// Platform's A2A surface make, byte for byte as shared/PROTOCOLS.md
// records them (GET /v1/card; POST /v1/message:send and :stream with
// ROLE_USER, content[].text and a messageId, no A2A-Version: 0.3), and
// the platform's 1.0 path (/message:send with A2A-Version: 1.0), against
// the door mounted at /a2a as Agent Platform serves it.
func TestRESTGeminiEnterprise(t *testing.T) {
	url := serveMounted(t, "stream_query")
	resp, b := restDo(t, http.MethodGet, url+"/v1/card", "", "")
	c := decode[card](t, b)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"protocolBinding": "HTTP+JSON"`) ||
		c.SupportedInterfaces[3] != (agentInterface{url, "HTTP+JSON", "0.3"}) {
		t.Fatalf("GET /v1/card: %d %s, want the card with the HTTP+JSON 0.3 interface at the mount", resp.StatusCode, b)
	}
	for _, v := range []struct{ path, version string }{{"/v1/message:send", ""}, {"/message:send", "1.0"}} {
		resp, b = restDo(t, http.MethodPost, url+v.path, v.version,
			`{"message":{"messageId":"m1","role":"ROLE_USER","content":[{"text":"hi"}]},"configuration":{"blocking":true}}`)
		tk := decode[struct{ Task taskJSON }](t, b).Task
		if v.version == "1.0" {
			checkProto(t, "POST "+v.path+"'s answer", b, "SendMessageResponse")
		}
		if resp.StatusCode != 200 || tk.Status.State != "TASK_STATE_COMPLETED" || tk.text() != "[hi] once upon a time" || tk.Artifacts[0].ArtifactID == "" {
			t.Errorf("POST %s: %d %s, want the completed task", v.path, resp.StatusCode, b)
		}
	}
	names, events, raw := streamResponses(t, restStream(t, url+"/v1/message:stream", "",
		`{"message":{"messageId":"m2","role":"ROLE_USER","content":[{"text":"hi"}]}}`))
	if len(names) != 8 || names[0] != "task" || events[7].Final == nil || !*events[7].Final || events[7].Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("POST /v1/message:stream: %v\n%s", names, strings.Join(raw, "\n"))
	}
}

// TestRESTErrors: what the binding does not serve, or cannot read, is a
// google.rpc.Status with the spec's status and reason: an A2A-Version the
// door does not speak VERSION_NOT_SUPPORTED (400); ListTasks in 0.3
// and GetExtendedAgentCard UNSUPPORTED_OPERATION, a page over the cap
// INVALID_ARGUMENT, a subscription to no task TASK_NOT_FOUND; the
// push-notification configs PUSH_NOTIFICATION_NOT_SUPPORTED; a message
// naming another task TASK_NOT_FOUND; a message with no text, a task id
// over the cap INVALID_ARGUMENT; a method a route does not take 405 with
// Allow, a body not declared JSON 415, in the sidecar's domain.
func TestRESTErrors(t *testing.T) {
	url := serve(t, "stream_query")
	long := strings.Repeat("x", maxID+1)
	tests := []struct {
		name, method, path, version, body string
		code                              int
		status, reason, domain            string
	}{
		{"unsupported version", "POST", "/message:send", "2.0", restBody("hi", false), 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED", "a2a-protocol.org"},
		{"unsupported version by query", "GET", "/tasks/x?A2A-Version=9.9", "", "", 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED", "a2a-protocol.org"},
		{"list, 0.3", "GET", "/v1/tasks?pageSize=10", "", "", 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION", "a2a-protocol.org"},
		{"list, a page too large", "GET", "/tasks?pageSize=101", "1.0", "", 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "a2a-protocol.org"},
		{"subscribe to no task", "POST", "/tasks/x:subscribe", "1.0", "", 404, "NOT_FOUND", "TASK_NOT_FOUND", "a2a-protocol.org"},
		{"subscribe by GET to no task, 0.3", "GET", "/v1/tasks/x:subscribe", "", "", 404, "NOT_FOUND", "TASK_NOT_FOUND", "a2a-protocol.org"},
		{"extended card", "GET", "/acme/extendedAgentCard", "1.0", "", 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION", "a2a-protocol.org"},
		{"push config create", "POST", "/tasks/x/pushNotificationConfigs", "1.0", `{"url":"https://hook.example/"}`, 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED", "a2a-protocol.org"},
		{"push config delete", "DELETE", "/tasks/x/pushNotificationConfigs/c1", "1.0", "", 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED", "a2a-protocol.org"},
		{"another task", "POST", "/message:send", "1.0", `{"message":{"messageId":"m1","taskId":"t-other","parts":[{"text":"hi"}]}}`, 404, "NOT_FOUND", "TASK_NOT_FOUND", "a2a-protocol.org"},
		{"no part it reads", "POST", "/message:send", "1.0", `{"message":{"messageId":"m1","parts":[{"video":{"a":1}}]}}`, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "a2a-protocol.org"},
		{"not a message", "POST", "/message:stream", "1.0", `[1,2]`, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "a2a-protocol.org"},
		{"task id over the cap", "GET", "/tasks/" + long, "1.0", "", 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "a2a-protocol.org"},
		{"task id at the cap", "GET", "/tasks/" + long[1:], "1.0", "", 404, "NOT_FOUND", "TASK_NOT_FOUND", "a2a-protocol.org"},
		{"cancel, task id over the cap", "POST", "/tasks/" + long + ":cancel", "1.0", "", 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "a2a-protocol.org"},
		{"cancel, task id at the cap", "POST", "/tasks/" + long[1:] + ":cancel", "1.0", "", 404, "NOT_FOUND", "TASK_NOT_FOUND", "a2a-protocol.org"},
		{"method not allowed", "GET", "/message:send", "1.0", "", 405, "INVALID_ARGUMENT", "METHOD_NOT_ALLOWED", "sidecar"},
		{"cancel by GET", "GET", "/tasks/x:cancel", "1.0", "", 405, "INVALID_ARGUMENT", "METHOD_NOT_ALLOWED", "sidecar"},
	}
	for _, tt := range tests {
		resp, b := restDo(t, tt.method, url+tt.path, tt.version, tt.body)
		checkStatus(t, tt.name, resp, b, tt.code, tt.status, tt.reason, tt.domain)
		if tt.code == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s: no Allow header", tt.name)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/message:send", strings.NewReader(restBody("hi", false)))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkStatus(t, "a text/plain body", resp, b, 415, "INVALID_ARGUMENT", "UNSUPPORTED_MEDIA_TYPE", "sidecar")
}

// TestVersionQuery: JSON-RPC reads A2A-Version from the query parameter
// when the header is absent (§3.6.1): SendMessage is a 1.0 method by it,
// an unsupported version by it is -32009; the header wins over it.
func TestVersionQuery(t *testing.T) {
	url := serve(t, "stream_query")
	call := func(t *testing.T, query, version, body string) rpcResult {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url+"/"+query, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if version != "" {
			req.Header.Set("A2A-Version", version)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return decode[rpcResult](t, b)
	}
	if r := call(t, "?A2A-Version=1.0", "", send1("1", "SendMessage", "hi")); r.Error != nil ||
		decode[struct{ Task taskJSON }](t, r.Result).Task.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("SendMessage with ?A2A-Version=1.0: %s %+v, want the completed task", r.Result, r.Error)
	}
	if r := call(t, "?A2A-Version=2.0", "", send1("2", "SendMessage", "hi")); r.Error == nil || r.Error.Code != codeVersionUnsupport {
		t.Errorf("?A2A-Version=2.0: %s %+v, want %d", r.Result, r.Error, codeVersionUnsupport)
	}
	if r := call(t, "?A2A-Version=2.0", "0.3", send0("3", "message/send", "hi")); r.Error != nil {
		t.Errorf("A2A-Version: 0.3 with ?A2A-Version=2.0: %+v, want the header's version", r.Error)
	}
}

// TestRESTHostile: the shared gate's refusals reach an HTTP+JSON caller
// in the binding's shape, never as JSON-RPC: a body over
// limits.request_bytes 413 (declared, or sent chunked, far over it), a
// call with the one slot taken and no queue 503 with Retry-After, its 1
// MiB body never sent nor read, a draining sidecar 503; a caller that
// leaves a stream ends the agent's call; the end of every call (a
// shutdown's EndCalls) ends a held stream with its task's terminal
// status.
func TestRESTHostile(t *testing.T) {
	url := serve(t, "stream_query")
	resp, b := restDo(t, http.MethodPost, url+"/message:send", "1.0", restBody(strings.Repeat("x", 5000), false))
	checkStatus(t, "a declared body over the limit", resp, b, 413, "INVALID_ARGUMENT", "REQUEST_TOO_LARGE", "sidecar")

	// 1 MiB sent chunked, its length unknown: the limit is found reading.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"message":{"messageId":"m1","parts":[{"text":"`))
		for range 256 {
			if _, err := pw.Write(bytes.Repeat([]byte("x"), 4096)); err != nil {
				return // the door stopped reading
			}
		}
		pw.Write([]byte(`"}]}}`))
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/message:stream", pr)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := testClient.Do(req); err != nil {
		t.Errorf("a chunked body over the limit: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		checkStatus(t, "a chunked body over the limit", resp, b, 413, "INVALID_ARGUMENT", "REQUEST_TOO_LARGE", "sidecar")
	}
	pr.CloseWithError(io.ErrClosedPipe)

	busy, s, _ := serveMap(t, "slow", busyMap, startAgent(t))
	held := restStream(t, busy+"/message:stream", "1.0", restBody("hi", false))
	defer held.Body.Close()
	sc := bufio.NewScanner(held.Body)
	var taskID string
	for taskID == "" && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.HasPrefix(data, `{"artifactUpdate"`) {
			taskID = decode[struct{ ArtifactUpdate eventJSON }](t, []byte(data)).ArtifactUpdate.TaskID
		}
	}
	if taskID == "" {
		t.Fatal("the held stream ended before its first record")
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(busy, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /message:send HTTP/1.1\r\nHost: %s\r\nContent-Type: application/a2a+json\r\nA2A-Version: 1.0\r\nContent-Length: %d\r\n\r\n", conn.RemoteAddr(), 1<<20)
	conn.SetReadDeadline(time.Now().Add(hangGuard))
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a busy call whose body was not sent: %v", err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	checkStatus(t, "busy, body unread", resp, b, 503, "UNAVAILABLE", "BUSY", "sidecar")
	if resp.Header.Get("Retry-After") != "1" {
		t.Errorf("busy: Retry-After %q, want 1", resp.Header.Get("Retry-After"))
	}

	s.Drain()
	resp, b = restDo(t, http.MethodPost, busy+"/message:send", "1.0", restBody("hi", false))
	checkStatus(t, "draining", resp, b, 503, "UNAVAILABLE", "SHUTTING_DOWN", "sidecar")
	s.EndCalls()
	var last string
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last = data
		}
	}
	if !strings.HasPrefix(last, `{"statusUpdate"`) || !strings.Contains(last, `"TASK_STATE_FAILED"`) || !strings.Contains(last, taskID) {
		t.Errorf("a held stream at shutdown ended with %s, want its task's failed status update", last)
	}
}

// TestRESTCallerLeaves: a caller that closes an HTTP+JSON stream ends
// the agent's call.
func TestRESTCallerLeaves(t *testing.T) {
	ended := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"text\":\"thinking\"}\n\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
		close(ended)
	}))
	t.Cleanup(agent.Close)
	url, _, _ := serveMap(t, "slow", testMap, agent.URL)
	resp := restStream(t, url+"/message:stream", "1.0", restBody("hi", false))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), `data: {"artifactUpdate"`) {
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || sc.Err() != nil || !strings.HasPrefix(sc.Text(), `data: {"artifactUpdate"`) {
		t.Fatalf("the stream: %d, ended before its first record (%v)", resp.StatusCode, sc.Err())
	}
	select {
	case <-ended:
	case <-time.After(hangGuard):
		t.Fatal("the agent's call did not end when its caller left")
	}
}

// TestRESTUnary: a unary method answers HTTP+JSON as JSON-RPC: its
// output the task's one artifact part, whole for message:send
// (message:stream is UnsupportedOperation: TestStreamingUnsupported).
func TestRESTUnary(t *testing.T) {
	url := serve(t, "query")
	resp, b := restDo(t, http.MethodPost, url+"/message:send", "1.0", restBody("hi", false))
	if tk := decode[struct{ Task taskJSON }](t, b).Task; resp.StatusCode != 200 || tk.Status.State != "TASK_STATE_COMPLETED" || tk.text() != "echo: hi" {
		t.Errorf("message:send of a unary method: %d %s", resp.StatusCode, b)
	}
}

// restRouteTests are paths and the route and task id restRoute reads.
var restRouteTests = []struct {
	path, route, id string
	ok              bool
}{
	{"/message:send", RouteSend, "", true},
	{"/acme/message:stream", RouteStream, "", true},
	{"/v1/message:send", RouteSend, "", true},
	{"/tasks", RouteTasks, "", true},
	{"/t/tasks", RouteTasks, "", true},
	{"/tasks/tasks", RouteTask, "tasks", true},
	{"/tasks/abc", RouteTask, "abc", true},
	{"/tasks/a%2Fb", RouteTask, "a/b", true},
	{"/tasks/abc:cancel", RouteCancel, "abc", true},
	{"/v1/tasks/abc:subscribe", RouteSubscribe, "abc", true},
	{"/tasks/abc/pushNotificationConfigs", RoutePushConfigs, "abc", true},
	{"/t/tasks/abc/pushNotificationConfigs/c1", RoutePushConfigs, "abc", true},
	{"/extendedAgentCard", RouteExtendedCard, "", true},
	{"/v1/card", RouteV1Card, "", true},
	{"/card", "", "", false},
	{"/tasks/", "", "", false},
	{"/tasks/:cancel", "", "", false},
	{"/tasks/%zz", "", "", false},
	{"/a/b/message:send", "", "", false},
	{"//message:send", "", "", false},
	{"/", "", "", false},
}

func TestRESTRoute(t *testing.T) {
	for _, tt := range restRouteTests {
		if route, id, ok := restRoute(tt.path); route != tt.route || id != tt.id || ok != tt.ok {
			t.Errorf("restRoute(%q) = %q, %q, %v, want %q, %q, %v", tt.path, route, id, ok, tt.route, tt.id, tt.ok)
		}
	}
}

// FuzzRESTRoute: no path panics restRoute; a route it reads is one the
// door serves, with a task id when its route has one.
func FuzzRESTRoute(f *testing.F) {
	for _, tt := range restRouteTests {
		f.Add(tt.path)
	}
	f.Fuzz(func(t *testing.T, path string) {
		route, id, ok := restRoute(path)
		if !ok {
			return
		}
		if _, known := restRoutes[route]; !known && route != RouteV1Card {
			t.Fatalf("restRoute(%q) = %q, no route of the door's", path, route)
		}
		if (route == RouteTask || route == RouteCancel || route == RouteSubscribe) && id == "" {
			t.Fatalf("restRoute(%q) = %q with no task id", path, route)
		}
	})
}

// TestRESTOwner: over HTTP+JSON as over JSON-RPC, a task is its caller's
// (the Authorization it was sent with): another caller, or none, gets
// TASK_NOT_FOUND for its GetTask, CancelTask and SubscribeToTask, and
// an empty ListTasks; its owner gets it.
func TestRESTOwner(t *testing.T) {
	url := serve(t, "stream_query")
	do := func(method, path, auth, body string) (int, []byte) {
		t.Helper()
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, url+path, r)
		req.Header.Set("A2A-Version", "1.0")
		if body != "" || method != http.MethodGet {
			req.Header.Set("Content-Type", "application/json")
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, b := do("POST", "/message:send", "Bearer owner", restBody("hi", false))
	var sent struct{ Task struct{ ID string } }
	if json.Unmarshal(b, &sent); code != 200 || sent.Task.ID == "" {
		t.Fatalf("send = %d %s", code, b)
	}
	id := sent.Task.ID
	for _, other := range []string{"Bearer other", ""} {
		for _, c := range []struct{ method, path string }{{"GET", "/tasks/" + id}, {"POST", "/tasks/" + id + ":cancel"}, {"POST", "/tasks/" + id + ":subscribe"}} {
			if code, b := do(c.method, c.path, other, ""); code != 404 || !strings.Contains(string(b), "TASK_NOT_FOUND") {
				t.Errorf("%s %s as %q = %d %s, want 404 TASK_NOT_FOUND", c.method, c.path, other, code, b)
			}
		}
		if code, b := do("GET", "/tasks", other, ""); code != 200 || !strings.Contains(string(b), `"totalSize":0`) {
			t.Errorf("GET /tasks as %q = %d %s, want none of the owner's", other, code, b)
		}
	}
	if code, b := do("GET", "/tasks/"+id, "Bearer owner", ""); code != 200 || !strings.Contains(string(b), id) {
		t.Errorf("GET /tasks/{id} as its owner = %d %s", code, b)
	}
	if code, b := do("GET", "/tasks", "Bearer owner", ""); code != 200 || !strings.Contains(string(b), `"totalSize":1`) || !strings.Contains(string(b), id) {
		t.Errorf("GET /tasks as the owner = %d %s, want its task", code, b)
	}
}

// TestRESTBodiless: a request that needs no body may come without one,
// and no Content-Type: a DELETE of a push config is the A2A error the
// card's pushNotifications: false names, a POST :subscribe the task's
// stream or TaskNotFound, never 415.
func TestRESTBodiless(t *testing.T) {
	url := serve(t, "stream_query")
	tests := []struct {
		name, method, path     string
		code                   int
		status, reason, domain string
	}{
		{"push config delete", "DELETE", "/tasks/x/pushNotificationConfigs/c1", 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED", "a2a-protocol.org"},
		{"subscribe to no task", "POST", "/tasks/x:subscribe", 404, "NOT_FOUND", "TASK_NOT_FOUND", "a2a-protocol.org"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, url+tt.path, nil)
		req.Header.Set("A2A-Version", "1.0")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		checkStatus(t, tt.name, resp, b, tt.code, tt.status, tt.reason, tt.domain)
	}
}

// TestStreamingUnsupported: on a method that does not stream (the card
// says streaming: false), SendStreamingMessage, 0.3's message/stream and
// the HTTP+JSON :stream are UnsupportedOperation (§3.3.4), the agent
// never called.
func TestStreamingUnsupported(t *testing.T) {
	url := serve(t, "query")
	for _, tt := range []struct{ version, body string }{
		{"", send0("1", "message/stream", "hi")},
		{"1.0", send1("1", "SendStreamingMessage", "hi")},
	} {
		if r := call(t, url, tt.version, tt.body); r.Error == nil || r.Error.Code != codeUnsupported {
			t.Errorf("%s on a unary method: %s %+v, want %d", tt.body, r.Result, r.Error, codeUnsupported)
		}
	}
	resp, b := restDo(t, "POST", url+"/message:stream", "1.0", restBody("hi", false))
	checkStatus(t, ":stream on a unary method", resp, b, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION", "a2a-protocol.org")
}

// TestREST03StatusMessage: over 0.3's HTTP+JSON a failed task's status
// message spells its parts both ways 0.3's protos name them: "content"
// (the 0.3.0 proto, which @a2a-js/sdk's 0.3 client reads) and "parts"
// (the later 0.3 proto a2a-go v0.3.3 is generated from: a2apb.Message,
// field 5 parts), so a client of either finds the agent's message. A
// fixture of the shape: a2a-go has no HTTP+JSON client to drive.
func TestREST03StatusMessage(t *testing.T) {
	url := serve(t, "fail")
	resp, b := restDo(t, http.MethodPost, url+"/v1/message:send", "", restBody("hi", true))
	var res struct {
		Task struct {
			Status struct {
				State   string
				Message map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &res); err != nil || resp.StatusCode != 200 || res.Task.Status.State != "TASK_STATE_FAILED" {
		t.Fatalf("0.3 message:send to a failing agent: %d %s (%v), want the failed task", resp.StatusCode, b, err)
	}
	want := `[{"text":"the model is overloaded"}]`
	for _, name := range []string{"content", "parts"} {
		if got := string(res.Task.Status.Message[name]); got != want {
			t.Errorf("the failed task's status message's %q = %s, want %s (%s)", name, got, want, b)
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/redistest"
	"github.com/sidecar-dev/sidecar/state"
)

// TestReplicas' calls through the balancer, one function per part.

// a2aReplicas runs testdata/a2a/replicas.mjs through the balancer: at
// its "held" steps the test finds the replica running the task (the
// agent that holds it) and steers the balancer's next request off it, so
// the cancel and the subscription each land on another replica.
func a2aReplicas(t *testing.T, bal *balancer, reps []*replica) {
	modules := deps.NPM(t, "a2a")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run @a2a-js/sdk")
	}
	const cancelKey, subscribeKey = "a2a-cancel", "a2a-subscribe"
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(deps.Repo(), "testdata", "a2a", "replicas.mjs"), bal.url+"/a2a", cancelKey, subscribeKey)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	proceed := func() { io.WriteString(stdin, "go\n") }
	var got []string
	ran := map[string]int{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		got = append(got, line)
		var s struct{ Step, State string }
		json.Unmarshal([]byte(line), &s)
		switch s.Step {
		case "cancel held":
			ran[cancelKey] = runner(t, reps, cancelKey)
			bal.steerOff(t, ran[cancelKey])
			proceed()
		case "cancel":
			// Canceled: the agent's request ended, on the replica that
			// ran it. Else the stream is released, to end the script.
			if s.State != "TASK_STATE_CANCELED" {
				release(t, reps, cancelKey)
			} else if !agentCanceled(t, reps[ran[cancelKey]], cancelKey) {
				t.Errorf("the task was canceled, but the request of its agent (replica %d) did not end", ran[cancelKey])
			}
		case "subscribe held":
			ran[subscribeKey] = runner(t, reps, subscribeKey)
			bal.steerOff(t, ran[subscribeKey])
			proceed()
		case "subscribed":
			release(t, reps, subscribeKey) // the rest, once the subscriber has the task
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("replicas.mjs: %v\n%s\n%s", err, strings.Join(got, "\n"), stderr.String())
	}
	t.Logf("replicas.mjs:\n%s", strings.Join(got, "\n"))
	const hi = `once upon a time hi `
	held := `"events":["task TASK_STATE_SUBMITTED ","statusUpdate TASK_STATE_WORKING","artifactUpdate once "]}`
	// The stream's caller gets the rest once, in order.
	rest := `"events":["artifactUpdate released ","artifactUpdate upon ","artifactUpdate a ","artifactUpdate time ","artifactUpdate hold-a2a-subscribe ","statusUpdate TASK_STATE_COMPLETED"]}`
	want := []string{
		`{"step":"card","url":"` + bal.url + `/a2a"}`,
		`{"step":"send","state":"TASK_STATE_COMPLETED","text":"` + hi + `"}`,
		`{"step":"stream","events":["task TASK_STATE_SUBMITTED ","statusUpdate TASK_STATE_WORKING","artifactUpdate once ","artifactUpdate upon ","artifactUpdate a ","artifactUpdate time ","artifactUpdate hi ","statusUpdate TASK_STATE_COMPLETED"]}`,
		`{"step":"get","state":"TASK_STATE_COMPLETED","same":true,"text":"` + hi + `"}`,
		`{"step":"list","sent":"TASK_STATE_COMPLETED ` + hi + `","streamed":"TASK_STATE_COMPLETED ` + hi + `"}`,
		`{"step":"cancel held",` + held,
		`{"step":"cancel","state":"TASK_STATE_CANCELED","same":true}`,
		`{"step":"cancel stream","events":["statusUpdate TASK_STATE_CANCELED"]}`,
		`{"step":"cancel get","state":"TASK_STATE_CANCELED"}`,
		`{"step":"subscribe held",` + held,
		"", "", // subscribed, subscription: followed below
		`{"step":"subscribe stream",` + rest,
		`{"step":"subscribe get","state":"TASK_STATE_COMPLETED","text":"once released upon a time hold-a2a-subscribe "}`,
	}
	if len(got) != len(want) {
		t.Fatalf("replicas.mjs printed %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if want[i] != "" && got[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
	wantFollowed(t, got[10], got[11], "once released upon a time hold-"+subscribeKey+" ")
	landedOff(t, bal, "CancelTask", ran[cancelKey])
	landedOff(t, bal, "SubscribeToTask", ran[subscribeKey])
}

// mcpGoReplicas: the Go MCP SDK, pinned to 2025-11-25, runs a session
// through the balancer: initialize, tools/list, tools/call (ask, and
// story held until its progress handler releases the agent, wherever it
// runs), then Close's DELETE ends it on every replica.
func mcpGoReplicas(t *testing.T, bal *balancer, agent string) {
	const key = "mcp-go-replicas"
	var once sync.Once
	client := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-test", Version: "1.0.0"}, &gomcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *gomcp.ProgressNotificationClientRequest) {
			once.Do(func() {
				if resp, err := replicaClient.Post(agent+"/release/"+key, "application/json", nil); err == nil {
					resp.Body.Close()
				}
			})
		}})
	ctx, cancel := context.WithTimeout(t.Context(), replicaClient.Timeout)
	defer cancel()
	transport := &gomcp.StreamableClientTransport{Endpoint: bal.url + "/mcp", HTTPClient: replicaClient, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := client.Connect(ctx, transport, &gomcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if init := cs.InitializeResult(); init.ProtocolVersion != "2025-11-25" || cs.ID() == "" {
		t.Errorf("connected with %s and session %q, want a 2025-11-25 session", init.ProtocolVersion, cs.ID())
	}
	if text := mcpGoCalls(ctx, t, cs, key); text != "once released upon a time hold-"+key+" " {
		t.Errorf("story = %q, want the story released by the progress handler", text)
	}
	id := cs.ID()
	if err := cs.Close(); err != nil {
		t.Errorf("closing the session (DELETE): %v", err)
	}
	for range replicaCount {
		if status, body := mcpToolsList(t, bal, id); status != http.StatusNotFound {
			t.Errorf("tools/list of the closed session = %d %s, want 404 on every replica", status, body)
		}
	}
}

// The MCP door's raw calls, 2025-11-25.
const (
	mcpVersion    = "2025-11-25"
	mcpInitBody   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + mcpVersion + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	mcpListBody   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	mcpAcceptBoth = "application/json, text/event-stream"
)

// mcpInitialize opens a session through the balancer (initialize, then
// notifications/initialized, which lands on another replica) and returns
// its id; the initialize must answer status.
func mcpInitialize(t *testing.T, bal *balancer, status int) string {
	t.Helper()
	code, id, b := mcpOpen(t, bal)
	if code != status || (status == http.StatusOK && id == "") {
		t.Fatalf("initialize = %d %s (session %q), want %d", code, b, id, status)
	}
	if status == http.StatusOK {
		code, body, _ := postTimed(t, bal.url+"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			"Accept", mcpAcceptBoth, "Mcp-Session-Id", id, "MCP-Protocol-Version", mcpVersion)
		if code != http.StatusAccepted {
			t.Fatalf("notifications/initialized = %d %s, want 202", code, body)
		}
	}
	return id
}

// mcpOpen sends initialize through the balancer: its status, session id
// and body.
func mcpOpen(t *testing.T, bal *balancer) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, bal.url+"/mcp", strings.NewReader(mcpInitBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", mcpAcceptBoth)
	resp, err := replicaClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// mcpToolsList asks the session id for its tools through the balancer.
func mcpToolsList(t *testing.T, bal *balancer, id string) (int, string) {
	t.Helper()
	status, body, _ := postTimed(t, bal.url+"/mcp", mcpListBody, "Accept", mcpAcceptBoth, "Mcp-Session-Id", id, "MCP-Protocol-Version", mcpVersion)
	return status, body
}

// mcpDelete ends the session id through the balancer.
func mcpDelete(t *testing.T, bal *balancer, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, bal.url+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("MCP-Protocol-Version", mcpVersion)
	resp, err := replicaClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// a2aSend is an A2A 0.3 message/send of text.
func a2aSend(text string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"` + text + `"}]}}}`
}

// a2aGet is an A2A 0.3 tasks/get of id.
func a2aGet(id string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"` + id + `"}}`
}

// redisDown stops Redis mid-run: /healthz stays 200 saying so, the
// stateless doors answer, and A2A's send and get, MCP's initialize and a
// session's request are each answered 503 in their protocol's shape with
// state.Message within storeBound, on every replica; with Redis back,
// A2A's send and MCP's initialize work again.
func redisDown(t *testing.T, srv *redistest.Server, bal *balancer, reps []*replica) {
	// A session opened before: its next request lands on another replica.
	status, session, body := mcpOpen(t, bal)
	if status != http.StatusOK || session == "" {
		t.Errorf("initialize = %d %s (session %q), want a session", status, body, session)
	}
	srv.Stop()
	for _, r := range reps {
		waitBody(t, r.base+"/healthz", http.StatusOK, `"store":"unreachable"`)
	}
	for range replicaCount {
		statelessCalls(t, bal)
	}
	wantUnavailable := func(what string, status int, body string, took time.Duration) {
		t.Helper()
		if status != http.StatusServiceUnavailable || !containsAll(body, `"jsonrpc":"2.0"`, `"error":{`, state.Message) {
			t.Errorf("%s with Redis down = %d %s, want 503 with a JSON-RPC error saying %q", what, status, body, state.Message)
		}
		if took > storeBound {
			t.Errorf("%s with Redis down took %v, want at most %v", what, took, storeBound)
		}
	}
	for range replicaCount {
		status, body, took := postTimed(t, bal.url+"/a2a", a2aSend("hi"))
		wantUnavailable("A2A message/send", status, body, took)
		status, body, took = postTimed(t, bal.url+"/a2a", a2aGet("no-such-task"))
		wantUnavailable("A2A tasks/get", status, body, took)
		status, body, took = postTimed(t, bal.url+"/mcp", mcpInitBody, "Accept", mcpAcceptBoth)
		wantUnavailable("MCP initialize", status, body, took)
		status, body, took = postTimed(t, bal.url+"/mcp", mcpListBody, "Accept", mcpAcceptBoth, "Mcp-Session-Id", session, "MCP-Protocol-Version", mcpVersion)
		wantUnavailable("MCP tools/list of a session", status, body, took)
	}

	srv.Restart()
	for _, r := range reps {
		waitBody(t, r.base+"/healthz", http.StatusOK, `"store":"ok"`)
	}
	for range replicaCount {
		if status, body, _ := postTimed(t, bal.url+"/a2a", a2aSend("hi")); status != http.StatusOK || !strings.Contains(body, `"state":"completed"`) {
			t.Errorf("A2A message/send with Redis back = %d %s, want the completed task", status, body)
		}
		mcpInitialize(t, bal, http.StatusOK)
	}
}

// killMidTask streams a held A2A message through the balancer, SIGKILLs
// the replica running its task (the one whose agent holds it) and takes
// it out of the balancer: within failedBound the task shows failed
// through the balancer on the others, and the agent saw its request end.
func killMidTask(t *testing.T, bal *balancer, reps []*replica) {
	const key = "kill"
	body := `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hold-` + key + `"}]}}}`
	req, _ := http.NewRequest(http.MethodPost, bal.url+"/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := replicaClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("message/stream = %d %s", resp.StatusCode, b)
	}
	id := ""
	br := bufio.NewReader(resp.Body)
	for kind := ""; kind != "artifact-update"; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream to its first part: %v (task %q)", err, id)
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
		if !ok {
			continue
		}
		var ev struct {
			Result struct{ Kind, ID string }
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("the stream's event %q: %v", data, err)
		}
		kind = ev.Result.Kind
		if kind == "task" {
			id = ev.Result.ID
		}
	}
	at := runner(t, reps, key)
	reps[at].kill()
	bal.takeDown(at)
	killed := time.Now()
	io.Copy(io.Discard, br) // the stream ends with its replica

	got := ""
	for time.Since(killed) < failedBound {
		status, body, _ := postTimed(t, bal.url+"/a2a", a2aGet(id))
		var r struct {
			Result struct{ Status struct{ State string } }
		}
		json.Unmarshal([]byte(body), &r)
		if got = body; status == http.StatusOK && r.Result.Status.State == "failed" {
			t.Logf("the killed replica's task showed failed %v after the kill", time.Since(killed))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(got, `"state":"failed"`) {
		t.Errorf("tasks/get of the killed replica's task within %v = %s, want it failed", failedBound, got)
	}
	if !agentCanceled(t, reps[at], key) {
		t.Errorf("the agent of the killed replica %d did not see its request end", at)
	}
}

// wantFollowed fails the test unless a subscription (its "subscribed"
// and "subscription" lines) followed its running task to its end: the
// task as the store had it (submitted or working, with the part the
// running replica had written by then, or none yet: that write races the
// subscribe), then every update after it, so that the text the
// subscriber holds is the story, each part once, in order, and the last
// event is the completed status.
func wantFollowed(t *testing.T, subscribed, subscription, story string) {
	t.Helper()
	var first struct{ First string }
	var rest struct{ Events []string }
	if json.Unmarshal([]byte(subscribed), &first) != nil || json.Unmarshal([]byte(subscription), &rest) != nil {
		t.Fatalf("the subscription printed %s and %s", subscribed, subscription)
	}
	text, ok := strings.CutPrefix(first.First, "task TASK_STATE_WORKING ")
	if !ok {
		text, ok = strings.CutPrefix(first.First, "task TASK_STATE_SUBMITTED ")
	}
	last := ""
	for _, ev := range rest.Events {
		if part, isPart := strings.CutPrefix(ev, "artifactUpdate "); isPart {
			text += part
		} else if ev != "statusUpdate TASK_STATE_WORKING" {
			last = ev
		}
	}
	if !ok || text != story || len(rest.Events) == 0 || rest.Events[len(rest.Events)-1] != "statusUpdate TASK_STATE_COMPLETED" || last != rest.Events[len(rest.Events)-1] {
		t.Errorf("the subscription saw %s then %s: want the task running, then the rest of %q once, in order, and its completed status last", subscribed, subscription, story)
	}
}

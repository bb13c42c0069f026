package a2a

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// rpcAs posts a JSON-RPC request as the caller with credential auth (""
// sends no Authorization header).
func rpcAs(t *testing.T, url, auth, version, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// callAs is call as the caller with credential auth.
func callAs(t *testing.T, url, auth, version, body string) rpcResult {
	t.Helper()
	resp := rpcAs(t, url, auth, version, body)
	defer resp.Body.Close()
	var r rpcResult
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &r); err != nil || r.JSONRPC != "2.0" {
		t.Fatalf("%s: response %d %q is no JSON-RPC response (%v)", body, resp.StatusCode, b, err)
	}
	return r
}

// idParams is a request of method whose params are {"id": id}.
func idParams(method, id string) string {
	return `{"jsonrpc":"2.0","id":9,"method":"` + method + `","params":{"id":"` + id + `"}}`
}

// listResp is a ListTasksResponse, its tasks decoded.
type listResp struct {
	Tasks         []taskJSON `json:"tasks"`
	NextPageToken *string    `json:"nextPageToken"`
	PageSize      int        `json:"pageSize"`
	TotalSize     int        `json:"totalSize"`
}

// list is ListTasks of params as auth.
func list(t *testing.T, url, auth, params string) listResp {
	t.Helper()
	r := callAs(t, url, auth, "1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":`+params+`}`)
	if r.Error != nil {
		t.Fatalf("ListTasks %s: %+v", params, r.Error)
	}
	l := decode[listResp](t, r.Result)
	if l.NextPageToken == nil {
		t.Fatalf("ListTasks %s: %s has no nextPageToken (it must always be present)", params, r.Result)
	}
	return l
}

// TestOwnerBinding: a task is its caller's, the one whose Authorization
// header sent its message: another caller (another credential, or none)
// who names its id gets TaskNotFound from tasks/get, tasks/cancel,
// tasks/resubscribe, their 1.0 names and a message naming the task, the
// same answer as for an id that does not exist (no oracle), and does not
// see it in ListTasks; the owner's stream goes on untouched, and the
// owner gets, lists and cancels it.
func TestOwnerBinding(t *testing.T) {
	url := serve(t, "slow")
	const alice, bob = "Bearer alice", "Bearer bob"
	resp := rpcAs(t, url, alice, "", send0("1", "message/stream", "hi"))
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	first := nextEvent(t, sc)
	for nextEvent(t, sc).Kind != "artifact-update" {
	}
	id := first.ID
	for _, other := range []string{bob, ""} {
		for _, tt := range []struct{ version, body string }{
			{"", idParams("tasks/get", id)},
			{"", idParams("tasks/cancel", id)},
			{"", idParams("tasks/resubscribe", id)},
			{"1.0", idParams("GetTask", id)},
			{"1.0", idParams("CancelTask", id)},
			{"1.0", idParams("SubscribeToTask", id)},
			{"", sendIDs("2", "message/send", "mine now", id, "")},
			{"", sendIDs("3", "message/stream", "mine now", id, first.ContextID)},
		} {
			r := callAs(t, url, other, tt.version, tt.body)
			want := fmt.Sprintf("task %q not found", id)
			if r.Error == nil || r.Error.Code != codeTaskNotFound || r.Error.Message != want || r.Result != nil {
				t.Errorf("as %q: %s: %s %+v, want %d %q, as for no such task", other, tt.body, r.Result, r.Error, codeTaskNotFound, want)
			}
		}
		if l := list(t, url, other, `{}`); len(l.Tasks) != 0 || l.TotalSize != 0 {
			t.Errorf("ListTasks as %q: %+v, want none of another caller's tasks", other, l)
		}
	}
	if tk := decode[taskJSON](t, callAs(t, url, alice, "", idParams("tasks/get", id)).Result); tk.ID != id || tk.Status.State != "working" {
		t.Errorf("the owner's tasks/get: %+v", tk)
	}
	if l := list(t, url, alice, `{}`); len(l.Tasks) != 1 || l.Tasks[0].ID != id || l.TotalSize != 1 {
		t.Errorf("the owner's ListTasks: %+v, want its one task", l)
	}
	if tk := decode[taskJSON](t, callAs(t, url, alice, "", idParams("tasks/cancel", id)).Result); tk.Status.State != "canceled" {
		t.Errorf("the owner's tasks/cancel: %+v", tk)
	}
	if last := nextEvent(t, sc); last.Kind != "status-update" || last.Status.State != "canceled" {
		t.Errorf("the owner's stream after its cancel: %+v", last)
	}
}

// TestListTasks: ListTasks pages through the caller's tasks most recently
// updated first, far more of them than its largest page (100): every
// task once, each page at most pageSize, nextPageToken "" on the last,
// totalSize every match; it filters by context, state and update time;
// artifacts only when asked, and then a page holds at most
// limits.reply_bytes of them, however large pageSize.
func TestListTasks(t *testing.T) {
	m := strings.Replace(testMap, "request_bytes: 4096", "request_bytes: 4096, reply_bytes: 8KiB", 1)
	url, _, _ := serveMap(t, "query", m, startAgent(t))
	const n = 230
	text := strings.Repeat("x", 1000)
	var ids []string // oldest first
	var mid time.Time
	for i := range n {
		msg := send1(fmt.Sprint(i), "SendMessage", text)
		if i%10 == 0 {
			msg = strings.Replace(msg, `"messageId":"m1"`, `"messageId":"m1","contextId":"tens"`, 1)
		}
		if i == n/2 {
			mid = time.Now()
		}
		r := call(t, url, "1.0", msg)
		var res struct{ Task taskJSON }
		if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
			t.Fatalf("message %d: %s %+v", i, r.Result, r.Error)
		}
		ids = append(ids, res.Task.ID)
	}
	var got []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("ListTasks does not end")
		}
		l := list(t, url, "", `{"pageSize":7,"pageToken":"`+token+`"}`)
		if len(l.Tasks) > 7 || l.PageSize != 7 || l.TotalSize != n {
			t.Fatalf("page %d: %d tasks, pageSize %d, totalSize %d; want at most 7, 7, %d", pages, len(l.Tasks), l.PageSize, l.TotalSize, n)
		}
		for _, tk := range l.Tasks {
			if tk.Status.State != "TASK_STATE_COMPLETED" || tk.Artifacts != nil {
				t.Fatalf("a listed task: %+v, want completed, without artifacts (includeArtifacts false)", tk)
			}
			got = append(got, tk.ID)
		}
		if token = *l.NextPageToken; token == "" {
			break
		}
	}
	if len(got) != n {
		t.Fatalf("the pages listed %d tasks, want %d", len(got), n)
	}
	for i, id := range got {
		if id != ids[n-1-i] {
			t.Fatalf("task %d listed is %s, want %s: most recently updated first", i, id, ids[n-1-i])
		}
	}
	if l := list(t, url, "", `{"pageSize":100}`); len(l.Tasks) != 100 || *l.NextPageToken == "" {
		t.Errorf("pageSize 100 of %d tasks: %d tasks, next %q; want 100 and a next page", n, len(l.Tasks), *l.NextPageToken)
	}
	if l := list(t, url, "", `{}`); len(l.Tasks) != defaultPageSize {
		t.Errorf("no pageSize: %d tasks, want %d", len(l.Tasks), defaultPageSize)
	}
	if l := list(t, url, "", `{"contextId":"tens","pageSize":100}`); len(l.Tasks) != n/10 || l.TotalSize != n/10 || l.Tasks[0].ContextID != "tens" {
		t.Errorf("contextId tens: %d tasks (total %d), want %d", len(l.Tasks), l.TotalSize, n/10)
	}
	if l := list(t, url, "", `{"status":"TASK_STATE_WORKING"}`); len(l.Tasks) != 0 || l.TotalSize != 0 {
		t.Errorf("status working: %+v, want none", l)
	}
	after := mid.UTC().Format(time.RFC3339Nano)
	if l := list(t, url, "", `{"statusTimestampAfter":"`+after+`","pageSize":100}`); l.TotalSize != n-n/2 || l.Tasks[0].ID != ids[n-1] {
		t.Errorf("statusTimestampAfter the middle: total %d, want %d", l.TotalSize, n-n/2)
	}
	// 8 KiB of artifacts a page, each task's 1 KB: about 8 tasks, not 100.
	l := list(t, url, "", `{"includeArtifacts":true,"pageSize":100}`)
	if len(l.Tasks) < 2 || len(l.Tasks) > 9 || *l.NextPageToken == "" || l.Tasks[0].text() != "echo: "+text {
		t.Errorf("includeArtifacts, pageSize 100, reply_bytes 8 KiB: %d tasks (first's text %d bytes), next %q; want at most 8 KiB of artifacts",
			len(l.Tasks), len(l.Tasks[0].text()), *l.NextPageToken)
	}
}

// gatedAgent streams "one" at once, then "two" once release is closed,
// then ends.
func gatedAgent(t *testing.T, release <-chan struct{}) string {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"text\":\"one \"}\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: {\"text\":\"two\"}\n\n")
	}))
	t.Cleanup(agent.Close)
	return agent.URL
}

const gatedMap = `
upstream: {url: AGENT}
methods:
  gated: {mode: stream, call: POST /, reply: sse}
limits: {request_bytes: 4096}
`

// subscription reads a subscription's SSE stream: each data: line's
// JSON-RPC response, as they come.
type subscription struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func subscribe(t *testing.T, url, auth, version, body string) subscription {
	t.Helper()
	resp := rpcAs(t, url, auth, version, body)
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %d %s %q, want 200 text/event-stream", body, resp.StatusCode, ct, b)
	}
	return subscription{resp, bufio.NewScanner(resp.Body)}
}

// next is the stream's next response; ok false at its end, which must
// be the stream's own: not testClient's timeout (hangGuard).
func (s subscription) next(t *testing.T) (r rpcResult, ok bool) {
	t.Helper()
	for s.sc.Scan() {
		if data, found := strings.CutPrefix(s.sc.Text(), "data: "); found {
			return decode[rpcResult](t, []byte(data)), true
		}
	}
	if err := s.sc.Err(); err != nil {
		t.Errorf("the subscription did not end, it broke off: %v", err)
	}
	return rpcResult{}, false
}

// TestSubscribe: while a task runs, its caller subscribes to it from
// another connection, in both versions: the first event is the task as
// it is (working, its artifact so far), then each update as the stream
// sends it (the next part, appended; the final status), then the stream
// ends. A task that ended: 0.3's tasks/resubscribe answers it alone and
// ends; 1.0's SubscribeToTask is UnsupportedOperation (§3.1.6).
func TestSubscribe(t *testing.T) {
	for _, v := range []string{"0.3", "1.0"} {
		t.Run(v, func(t *testing.T) {
			release := make(chan struct{})
			url, _, d := serveMap(t, "gated", gatedMap, gatedAgent(t, release))
			method, working, completed := "tasks/resubscribe", "working", "completed"
			if v == "1.0" {
				method, working, completed = "SubscribeToTask", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"
			}
			resp := rpcAs(t, url, "Bearer a", "", send0("1", "message/stream", "hi"))
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			id := nextEvent(t, sc).ID
			for nextEvent(t, sc).Kind != "artifact-update" {
			}
			sub := subscribe(t, url, "Bearer a", v, idParams(method, id))
			r, ok := sub.next(t)
			var tk taskJSON
			if ok {
				tk = decode[taskJSON](t, r.Result)
				if v == "1.0" {
					tk = decode[struct{ Task taskJSON }](t, r.Result).Task
				}
			}
			if !ok || string(r.ID) != "9" || tk.ID != id || tk.Status.State != working || tk.text() != "one " {
				t.Fatalf("the subscription's first event: %s, want the task working with its artifact so far", r.Result)
			}
			close(release)
			var events []eventJSON
			for {
				r, ok := sub.next(t)
				if !ok {
					break
				}
				if r.Error != nil {
					t.Fatalf("subscription event: %+v", r.Error)
				}
				ev := decode[eventJSON](t, r.Result)
				if v == "1.0" {
					var w struct{ StatusUpdate, ArtifactUpdate *eventJSON }
					json.Unmarshal(r.Result, &w)
					ev = eventJSON{}
					if w.StatusUpdate != nil {
						ev, ev.Kind = *w.StatusUpdate, "status-update"
					} else if w.ArtifactUpdate != nil {
						ev, ev.Kind = *w.ArtifactUpdate, "artifact-update"
					}
				}
				events = append(events, ev)
			}
			if len(events) != 2 || events[0].Kind != "artifact-update" || !events[0].Append || !strings.Contains(string(events[0].Artifact), `"two"`) ||
				events[1].Kind != "status-update" || events[1].Status.State != completed || events[1].TaskID != id {
				t.Errorf("the subscription's events after the first: %+v, want the part two appended, then completed, then its end", events)
			}
			for sc.Scan() { // the caller's own stream, to its end
			}
			eventually(t, "the store lets the subscriber go", func() bool {
				d.tasks.mu.Lock()
				defer d.tasks.mu.Unlock()
				return d.tasks.subs == 0
			})
			if v == "1.0" {
				if r := callAs(t, url, "Bearer a", v, idParams(method, id)); r.Error == nil || r.Error.Code != codeUnsupported {
					t.Errorf("SubscribeToTask of the completed task: %s %+v, want %d", r.Result, r.Error, codeUnsupported)
				}
				return
			}
			ended := subscribe(t, url, "Bearer a", v, idParams(method, id))
			if r, ok := ended.next(t); !ok || decode[taskJSON](t, r.Result).Status.State != completed {
				t.Errorf("tasks/resubscribe of the completed task: %s, want the task, completed", r.Result)
			}
			if r, ok := ended.next(t); ok {
				t.Errorf("tasks/resubscribe of the completed task, after the task: %s, want the end", r.Result)
			}
		})
	}
}

// TestSubscribersBounded: a task takes at most maxTaskSubscribers
// subscribers, the door limits.subscriptions in all: far more callers than
// either are refused with an error saying so, and a subscriber whose
// caller leaves frees its place. A subscription on a unary method's
// agent (its card declares no streaming) is UnsupportedOperation.
func TestSubscribersBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url, _, d := serveMap(t, "gated", gatedMap, gatedAgent(t, release))
	hold := func() string {
		resp := rpc(t, url, "", send0("1", "message/stream", "hi"))
		t.Cleanup(func() { resp.Body.Close() })
		return nextEvent(t, bufio.NewScanner(resp.Body)).ID
	}
	id := hold()
	var held []subscription
	for i := range 10 * maxTaskSubscribers {
		resp := rpc(t, url, "", idParams("tasks/resubscribe", id))
		if i < maxTaskSubscribers {
			if resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("subscriber %d of %d: %s", i+1, maxTaskSubscribers, resp.Header.Get("Content-Type"))
			}
			s := subscription{resp, bufio.NewScanner(resp.Body)}
			s.next(t)
			held = append(held, s)
			t.Cleanup(func() { resp.Body.Close() })
			continue
		}
		var r rpcResult
		json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if r.Error == nil || r.Error.Code != codeInternal || !strings.Contains(r.Error.Message, fmt.Sprint(maxTaskSubscribers, " subscribers")) {
			t.Fatalf("subscriber %d to one task: %+v, want %d saying the most is %d", i+1, r.Error, codeInternal, maxTaskSubscribers)
		}
	}
	held[0].resp.Body.Close()
	eventually(t, "a subscriber that left frees its place", func() bool {
		resp := rpc(t, url, "", idParams("tasks/resubscribe", id))
		t.Cleanup(func() { resp.Body.Close() })
		return resp.Header.Get("Content-Type") == "text/event-stream"
	})

	d.tasks.mu.Lock()
	d.tasks.maxSubs = d.tasks.subs + 1
	d.tasks.mu.Unlock()
	other := hold()
	subscribe(t, url, "", "", idParams("tasks/resubscribe", other))
	for range 20 {
		if r := call(t, url, "", idParams("tasks/resubscribe", other)); r.Error == nil || r.Error.Code != codeInternal || !strings.Contains(r.Error.Message, "subscriptions") {
			t.Fatalf("a subscriber past maxSubs: %+v, want %d", r.Error, codeInternal)
		}
	}

	// The total as the map sets it.
	capped, _, _ := serveMap(t, "gated", strings.Replace(gatedMap, "limits: {", "limits: {subscriptions: 1, ", 1), gatedAgent(t, release))
	var ids []string
	for range 2 {
		resp := rpc(t, capped, "", send0("1", "message/stream", "hi"))
		t.Cleanup(func() { resp.Body.Close() })
		ids = append(ids, nextEvent(t, bufio.NewScanner(resp.Body)).ID)
	}
	subscribe(t, capped, "", "", idParams("tasks/resubscribe", ids[0]))
	if r := call(t, capped, "", idParams("tasks/resubscribe", ids[1])); r.Error == nil || r.Error.Code != codeInternal || !strings.Contains(r.Error.Message, "serves 1 subscriptions") {
		t.Errorf("a second subscriber under limits.subscriptions 1: %+v, want %d saying the most is 1", r.Error, codeInternal)
	}

	unary := serve(t, "query")
	if r := call(t, unary, "1.0", idParams("SubscribeToTask", "x")); r.Error == nil || r.Error.Code != codeUnsupported {
		t.Errorf("SubscribeToTask on a unary method: %+v, want %d", r.Error, codeUnsupported)
	}
}

// TestSlowSubscriberDropped: a subscriber that stops reading while the
// agent streams on, far more than it may fall behind (lagBytes), is
// dropped: the store lets it go and its queue with it, its stream ends
// (not held open by a write the caller never reads), and the task's own
// stream goes on.
func TestSlowSubscriberDropped(t *testing.T) {
	ended := make(chan struct{})
	url, s, d := serveMap(t, "big", strings.Replace(bigMap, "REPLY", "1MiB", 1), bigAgent(t, true, ended))
	resp := rpc(t, url, "", send0("1", "message/stream", "hi"))
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	id := decode[eventJSON](t, decode[rpcResult](t, []byte(strings.TrimPrefix(line, "data: "))).Result).ID
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the task's own caller reads on
		defer wg.Done()
		io.Copy(io.Discard, br)
	}()
	slow := rpc(t, url, "", idParams("tasks/resubscribe", id)) // and never reads
	defer slow.Body.Close()
	// How soon the agent outruns the subscriber's connection's buffers
	// and lagBytes is the machine's speed: the wait is for the drop, its
	// bound only a hang guard.
	waitFor(t, "the slow subscriber is dropped", 3*hangGuard, func() bool {
		d.tasks.mu.Lock()
		defer d.tasks.mu.Unlock()
		return d.tasks.subs == 0
	})
	// Its writer, blocked behind a caller that does not read, fails
	// writeGrace after: the subscription is no longer in flight.
	// (Sooner than testClient's own timeout, which would end it too.)
	for end := time.Now().Add(hangGuard / 2); s.InFlight() > 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the dropped subscription is still in flight after %s, its caller not reading", hangGuard/2)
		}
	}
	done := make(chan error, 1)
	var tail tailWriter
	go func() {
		_, err := io.Copy(&tail, slow.Body)
		done <- err
	}()
	select {
	case err := <-done:
		// Ended cleanly, it ends with the error saying why; a caller
		// that did not read within writeGrace has its connection cut.
		if t.Logf("the dropped subscription ended: %v, its last bytes %q", err, tail.last); err == nil && !strings.Contains(string(tail.last), `"error":{"code":-32603,"message":"the subscriber fell more than`) {
			t.Errorf("the dropped subscription ended cleanly without its error: %q", tail.last)
		}
	case <-time.After(hangGuard):
		t.Fatal("the dropped subscription is still open")
	}
	if tk := decode[taskJSON](t, call(t, url, "", idParams("tasks/get", id)).Result); tk.Status.State != "working" {
		t.Errorf("the task after its subscriber was dropped: %s, want working", tk.Status.State)
	}
	call(t, url, "", idParams("tasks/cancel", id))
	<-ended
	resp.Body.Close()
	wg.Wait()
}

// TestSubscriptionDrained: EndCalls (the drain's end) ends a
// subscription with an error saying the sidecar is shutting down. The
// subscription is served by a second Server sharing the door (as two
// listeners would), so its drain ends the subscription alone, not the
// task's call, whose end would end it too.
func TestSubscriptionDrained(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url, s, d := serveMap(t, "gated", gatedMap, gatedAgent(t, release))
	other := &proxy.Server{Config: s.Config, Agent: s.Agent}
	srv := httptest.NewServer(other.HandlerFor(d))
	defer srv.Close()
	resp := rpc(t, url, "", send0("1", "message/stream", "hi"))
	defer resp.Body.Close()
	id := nextEvent(t, bufio.NewScanner(resp.Body)).ID
	sub := subscribe(t, srv.URL, "", "", idParams("tasks/resubscribe", id))
	sub.next(t)
	other.EndCalls()
	r, ok := sub.next(t)
	if !ok || r.Error == nil || r.Error.Code != codeInternal || r.Error.Message != core.ErrShuttingDown.Error() {
		t.Errorf("the drained subscription's last event: %s %+v, want %d %q", r.Result, r.Error, codeInternal, core.ErrShuttingDown)
	}
	if r, ok := sub.next(t); ok {
		t.Errorf("after the drain's error: %s %+v, want the end", r.Result, r.Error)
	}
	if tk := decode[taskJSON](t, call(t, url, "", idParams("tasks/get", id)).Result); tk.Status.State != "working" {
		t.Errorf("the task after the other listener's drain: %s, want working", tk.Status.State)
	}
	call(t, url, "", idParams("tasks/cancel", id))
}

// tailWriter keeps the last bytes written to it.
type tailWriter struct{ last []byte }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.last = append(w.last, p...)
	if len(w.last) > 300 {
		w.last = w.last[len(w.last)-300:]
	}
	return len(p), nil
}

// TestCallerLeftEndsTask: a task whose caller leaves before it ends (its
// message/stream or message/send closed) fails, saying so: its
// subscribers get that final status and their end, tasks/get and
// ListTasks show it failed, never working for ever.
func TestCallerLeftEndsTask(t *testing.T) {
	for _, method := range []string{"message/stream", "message/send"} {
		t.Run(method, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			url, _, d := serveMap(t, "gated", gatedMap, gatedAgent(t, release))
			ctx, leave := context.WithCancel(context.Background())
			defer leave()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/", strings.NewReader(send0("1", method, "hi")))
			req.Header.Set("Content-Type", "application/json")
			answered := make(chan *http.Response, 1)
			go func() { // message/send answers only at the task's end
				resp, _ := testClient.Do(req)
				answered <- resp
			}()
			var id string
			if method == "message/stream" {
				resp := <-answered
				defer resp.Body.Close()
				id = nextEvent(t, bufio.NewScanner(resp.Body)).ID
			} else {
				eventually(t, "the task is in the store", func() bool {
					d.tasks.mu.Lock()
					defer d.tasks.mu.Unlock()
					for _, tk := range d.tasks.tasks {
						id = tk.id
					}
					return id != ""
				})
			}
			sub := subscribe(t, url, "", "", idParams("tasks/resubscribe", id))
			sub.next(t)
			leave()
			r, ok := sub.next(t)
			if ev := decode[eventJSON](t, r.Result); !ok || ev.Kind != "status-update" || ev.Status.State != "failed" || !*ev.Final || !strings.Contains(string(r.Result), callerLeft) {
				t.Errorf("the subscription once the task's caller left: %s, want its final status failed saying why", r.Result)
			}
			if r, ok := sub.next(t); ok {
				t.Errorf("the subscription after the final status: %s, want the end", r.Result)
			}
			if tk := decode[taskJSON](t, call(t, url, "", idParams("tasks/get", id)).Result); tk.Status.State != "failed" {
				t.Errorf("tasks/get once its caller left: %s, want failed", tk.Status.State)
			}
			if method == "message/send" {
				if resp := <-answered; resp != nil {
					resp.Body.Close()
				}
			}
		})
	}
}

// TestListFilter: ListTasks' parameters read the same from JSON-RPC's
// params and from the HTTP+JSON binding's query (readListQuery), and each
// bad one is refused with its name.
func TestListFilter(t *testing.T) {
	token := cursor{time.Unix(0, 42), "t1"}.token()
	tests := []struct {
		params, query string
		want          listFilter
		bad           string
	}{
		{params: `{}`, want: listFilter{pageSize: 50}},
		{params: `{"contextId":"c","status":"TASK_STATE_WORKING","pageSize":7,"includeArtifacts":true,"historyLength":3,"tenant":"x"}`,
			query: "contextId=c&status=TASK_STATE_WORKING&pageSize=7&includeArtifacts=true&historyLength=3&tenant=x",
			want:  listFilter{contextID: "c", state: stateWorking, pageSize: 7, artifacts: true}},
		{params: `{"pageSize":"9","status":"TASK_STATE_UNSPECIFIED"}`, query: "pageSize=9&status=TASK_STATE_UNSPECIFIED", want: listFilter{pageSize: 9}},
		{params: `{"pageToken":"` + token + `"}`, query: "pageToken=" + token, want: listFilter{pageSize: 50, cursor: &cursor{time.Unix(0, 42), "t1"}}},
		{params: `{"pageSize":101}`, query: "pageSize=101", bad: "pageSize"},
		{params: `{"pageSize":1.5}`, query: "pageSize=1.5", bad: "pageSize"},
		{params: `{"status":"working"}`, query: "status=working", bad: "status"},
		{params: `{"pageToken":"bm9wZQ"}`, query: "pageToken=bm9wZQ", bad: "pageToken"},
		{params: `{"includeArtifacts":"yes"}`, query: "includeArtifacts=1", bad: "includeArtifacts"},
		{params: `{"historyLength":-1}`, query: "historyLength=-1", bad: "historyLength"},
		{params: `{"contextId":"` + strings.Repeat("c", maxID+1) + `"}`, query: "contextId=" + strings.Repeat("c", maxID+1), bad: "longer than"},
		{params: `[1]`, query: "pageSize=1&pageSize=2", bad: ""},
	}
	for _, tt := range tests {
		check := func(how string, f listFilter, err error) {
			switch {
			case tt.bad == "" && tt.want.pageSize == 0:
				if err == nil {
					t.Errorf("%s: %+v, want an error", how, f)
				}
			case tt.bad != "":
				if err == nil || !strings.Contains(err.Error(), tt.bad) {
					t.Errorf("%s: %v, want an error naming %s", how, err, tt.bad)
				}
			case err != nil || f.contextID != tt.want.contextID || f.state != tt.want.state || f.pageSize != tt.want.pageSize ||
				f.artifacts != tt.want.artifacts || (f.cursor == nil) != (tt.want.cursor == nil) || f.cursor != nil && *f.cursor != *tt.want.cursor:
				t.Errorf("%s = %+v, %v; want %+v", how, f, err, tt.want)
			}
		}
		f, err := readListFilter(json.RawMessage(tt.params))
		check("readListFilter("+tt.params+")", f, err)
		if tt.query != "" {
			q, _ := url.ParseQuery(tt.query)
			f, err := readListQuery(q)
			check("readListQuery("+tt.query+")", f, err)
		}
	}
}

// TestSubscriptionHoldsNoSlot: a subscription whose request came with a
// body of unknown length (chunked), read once it had a concurrency slot,
// gives the slot back as its stream begins: with two slots, one held by
// the task's stream, another call is still served while it streams.
func TestSubscriptionHoldsNoSlot(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	m := strings.Replace(gatedMap, "request_bytes: 4096", "request_bytes: 4096, concurrency: 2, queue: 0", 1)
	url, _, _ := serveMap(t, "gated", m, gatedAgent(t, release))
	resp := rpc(t, url, "", send0("1", "message/stream", "hi"))
	defer resp.Body.Close()
	id := nextEvent(t, bufio.NewScanner(resp.Body)).ID
	chunked := func(body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url+"/", io.MultiReader(strings.NewReader(body)))
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = -1
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	sub := chunked(idParams("tasks/resubscribe", id))
	if ct := sub.Header.Get("Content-Type"); sub.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("the chunked subscription: %d %s", sub.StatusCode, ct)
	}
	bufio.NewReader(sub.Body).ReadString('\n')
	get := chunked(idParams("tasks/get", id))
	b, _ := io.ReadAll(get.Body)
	if get.StatusCode != 200 || !strings.Contains(string(b), `"state":"working"`) {
		t.Errorf("tasks/get beside the subscription, one slot free: %d %s, want the task", get.StatusCode, b)
	}
}

// TestSubscriptionOutlivesServerTimeouts: the public server's read and
// write deadlines cover reading a request (cmd/sidecar's httpserver.go);
// a subscription, answered by the door without a slot, is freed of the
// write deadline as a call is once it has its slot (boundWrites; net/http
// clears the read deadline once the body is read): still open well past
// them, it gets its task's updates and its end.
func TestSubscriptionOutlivesServerTimeouts(t *testing.T) {
	release := make(chan struct{})
	url0, s, d := serveMap(t, "gated", gatedMap, gatedAgent(t, release))
	srv := httptest.NewUnstartedServer(s.HandlerFor(d))
	const deadline = 500 * time.Millisecond
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = deadline, deadline
	srv.Start()
	defer srv.Close()
	resp := rpc(t, url0, "", send0("1", "message/stream", "hi"))
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	id := nextEvent(t, sc).ID
	// The task holds its first part before the subscription begins, so
	// the subscription's first event has it, whatever the machine's speed.
	for nextEvent(t, sc).Kind != "artifact-update" {
	}
	sub := subscribe(t, srv.URL, "", "", idParams("tasks/resubscribe", id))
	if r, _ := sub.next(t); !strings.Contains(string(r.Result), `"one `) {
		t.Fatalf("the subscription's first event: %s, want the task with its first part", r.Result)
	}
	time.Sleep(4 * deadline) // the bound is the behaviour: well past both deadlines
	close(release)
	var states []string
	for {
		r, ok := sub.next(t)
		if !ok {
			break
		}
		states = append(states, decode[eventJSON](t, r.Result).Kind+" "+decode[eventJSON](t, r.Result).Status.State)
	}
	if len(states) != 2 || states[1] != "status-update completed" {
		t.Errorf("a subscription open past the server's deadlines: %q, want the part and completed", states)
	}
}

// FuzzListFilter: whatever ListTasks' params, readListFilter answers a
// filter or an error, never a panic, and a filter's page is 1 to 100.
func FuzzListFilter(f *testing.F) {
	for _, seed := range []string{`{}`, `{"pageSize":7,"status":"TASK_STATE_WORKING","includeArtifacts":true}`, `{"pageToken":"NDIudDE"}`,
		`{"pageSize":"9"}`, `{"statusTimestampAfter":"2026-01-02T03:04:05Z"}`, `{"historyLength":-1}`, `[]`, `null`, `{"pageSize":1e309}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		lf, err := readListFilter(params)
		if err == nil && (lf.pageSize < 1 || lf.pageSize > maxPageSize) {
			t.Errorf("readListFilter(%q): pageSize %d", params, lf.pageSize)
		}
	})
}

// TestListTimestampBoundary: statusTimestampAfter keeps the tasks whose
// status timestamp is greater than or equal to it (a2a.proto's
// ListTasksRequest): a task's own timestamp lists it, one nanosecond
// later does not.
func TestListTimestampBoundary(t *testing.T) {
	url := serve(t, "query")
	r := call(t, url, "1.0", send1("1", "SendMessage", "hi"))
	var res struct {
		Task struct {
			ID     string
			Status struct{ Timestamp string }
		}
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
		t.Fatalf("SendMessage: %s %+v", r.Result, r.Error)
	}
	at, err := time.Parse(time.RFC3339Nano, res.Task.Status.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		after time.Time
		want  int
	}{{at, 1}, {at.Add(time.Nanosecond), 0}, {at.Add(-time.Nanosecond), 1}} {
		after := tt.after.UTC().Format(time.RFC3339Nano)
		if l := list(t, url, "", `{"statusTimestampAfter":"`+after+`"}`); len(l.Tasks) != tt.want || l.TotalSize != tt.want {
			t.Errorf("statusTimestampAfter %s, the task's at %s: %d tasks, want %d", after, res.Task.Status.Timestamp, len(l.Tasks), tt.want)
		}
	}
}

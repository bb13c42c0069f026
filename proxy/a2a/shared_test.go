package a2a

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// replica is one sidecar of several sharing one Redis: its URL, door and
// store client.
type replica struct {
	url   string
	door  *Door
	store *state.Redis
	srv   *proxy.Server
}

// sharedAgent is the agent of the replicas' tests: /echo answers
// {"text": "echo: <message>"}; /steps streams "a", "b", "c", each after
// the test sends on step (the first at once); /slow streams "thinking"
// and waits for the call's end, which it reports on ended; /big streams
// 64 records of 1 KiB. calls counts the requests.
type sharedAgent struct {
	url   string
	step  chan struct{}
	ended chan struct{}
	calls atomic.Int64
}

func startSharedAgent(t *testing.T) *sharedAgent {
	t.Helper()
	a := &sharedAgent{step: make(chan struct{}, 3), ended: make(chan struct{}, 16)}
	sse := func(w http.ResponseWriter, data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		http.NewResponseController(w).Flush()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		var in struct{ Message string }
		json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal("echo: " + in.Message)
		fmt.Fprintf(w, `{"text":%s}`, b)
	})
	mux.HandleFunc("POST /steps", func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for i, s := range []string{"a", "b", "c"} {
			if i > 0 {
				select {
				case <-a.step:
				case <-r.Context().Done():
					return
				}
			}
			sse(w, `{"text":"`+s+`"}`)
		}
	})
	mux.HandleFunc("POST /slow", func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, `{"text":"thinking"}`)
		<-r.Context().Done()
		a.ended <- struct{}{}
	})
	mux.HandleFunc("POST /big", func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for range 64 {
			sse(w, `{"text":"`+strings.Repeat("x", 1024)+`"}`)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

// sharedMap is the replicas' method map; LIMITS their limits.
const sharedMap = `
upstream: {url: AGENT}
methods:
  query: {call: POST /echo}
  steps: {mode: stream, call: POST /steps, reply: sse}
  slow: {mode: stream, call: POST /slow, reply: sse}
  big: {mode: stream, call: POST /big, reply: sse}
limits: {request_bytes: 4096LIMITS}
`

// startReplica runs a sidecar whose A2A door calls method, its tasks in
// the Redis srv runs (its own client: another process), leases of lease.
func startReplica(t *testing.T, srv *redistest.Server, agent *sharedAgent, method, limits string, lease time.Duration) *replica {
	t.Helper()
	store, err := state.Open(config.State{Store: config.StoreRedis, Redis: config.RedisState{
		URL: srv.URL(), KeyPrefix: "sc", TaskTTL: time.Hour, Lease: lease}}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	m := strings.ReplaceAll(strings.ReplaceAll(sharedMap, "AGENT", agent.url), "LIMITS", limits)
	cfg, err := config.Parse("test.yaml", []byte(m))
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

// rpcBy posts a JSON-RPC request of A2A 1.0 with the Authorization auth
// ("" none).
func rpcBy(t *testing.T, url, auth, body string) *http.Response {
	t.Helper()
	return rpcHeaders(t, url, body, "A2A-Version", "1.0", "Authorization", auth)
}

// callBy is call of A2A 1.0 with the Authorization auth.
func callBy(t *testing.T, url, auth, body string) rpcResult {
	t.Helper()
	resp := rpcBy(t, url, auth, body)
	defer resp.Body.Close()
	var r rpcResult
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: response %d %q is no JSON-RPC response (%v)", body, resp.StatusCode, b, err)
	}
	return r
}

func taskReq(method, id string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"id":%q}}`, method, id)
}

// sharedTask is the parts of a Task the tests read.
type sharedTask struct {
	ID     string `json:"id"`
	Status struct {
		State   string `json:"state"`
		Message *struct {
			Parts []struct{ Text string } `json:"parts"`
		} `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		Parts []struct{ Text string } `json:"parts"`
	} `json:"artifacts"`
}

func (s sharedTask) text() string {
	var b strings.Builder
	for _, a := range s.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func (s sharedTask) message() string {
	if s.Status.Message == nil || len(s.Status.Message.Parts) == 0 {
		return ""
	}
	return s.Status.Message.Parts[0].Text
}

// getOn is GetTask of id on url, as auth.
func getOn(t *testing.T, url, auth, id string) (sharedTask, *rpcError) {
	t.Helper()
	r := callBy(t, url, auth, taskReq("GetTask", id))
	var task sharedTask
	if r.Error == nil {
		json.Unmarshal(r.Result, &task)
	}
	return task, r.Error
}

// sendOn sends text to url's door by SendMessage and returns the task.
func sendOn(t *testing.T, url, text string) sharedTask {
	t.Helper()
	r := callBy(t, url, "", send1("1", "SendMessage", text))
	if r.Error != nil {
		t.Fatalf("SendMessage: %+v", r.Error)
	}
	var res struct{ Task sharedTask }
	json.Unmarshal(r.Result, &res)
	return res.Task
}

// sseReader reads a stream's events one at a time.
type sseReader struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func newSSE(t *testing.T, resp *http.Response) *sseReader {
	t.Helper()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream: %d %q", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	return &sseReader{resp: resp, sc: sc}
}

// next is the next event's result, ok false at the stream's end.
func (s *sseReader) next(t *testing.T) (json.RawMessage, bool) {
	t.Helper()
	for s.sc.Scan() {
		data, ok := strings.CutPrefix(s.sc.Text(), "data: ")
		if !ok {
			continue
		}
		var r rpcResult
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		if r.Error != nil {
			t.Fatalf("event %q is an error", data)
		}
		return r.Result, true
	}
	return nil, false
}

// kind is an event's kind (task, artifactUpdate, statusUpdate) and what
// it says: the artifact's text, or the state.
func kind(raw json.RawMessage) (string, string) {
	var e struct {
		Task           *sharedTask
		ArtifactUpdate *struct {
			Artifact struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"artifact"`
		}
		StatusUpdate *struct {
			Status struct{ State string } `json:"status"`
		}
	}
	json.Unmarshal(raw, &e)
	switch {
	case e.Task != nil:
		return "task", e.Task.ID
	case e.ArtifactUpdate != nil && len(e.ArtifactUpdate.Artifact.Parts) > 0:
		return "artifact", e.ArtifactUpdate.Artifact.Parts[0].Text
	case e.StatusUpdate != nil:
		return "status", e.StatusUpdate.Status.State
	}
	return "", string(raw)
}

// TestReplicasGetList: a message sent on A is answered by GetTask and
// ListTasks on B and C, with its artifact; another caller (another
// Authorization) gets TaskNotFound everywhere and an empty list.
func TestReplicasGetList(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "query", "", 15*time.Second)
	b := startReplica(t, srv, agent, "query", "", 15*time.Second)
	c := startReplica(t, srv, agent, "query", "", 15*time.Second)
	sent := sendOn(t, a.url, "hello")
	if sent.Status.State != "TASK_STATE_COMPLETED" || sent.text() != "echo: hello" {
		t.Fatalf("SendMessage on A = %+v", sent)
	}
	for name, r := range map[string]*replica{"A": a, "B": b, "C": c} {
		got, rerr := getOn(t, r.url, "", sent.ID)
		if rerr != nil || got.Status.State != "TASK_STATE_COMPLETED" || got.text() != "echo: hello" {
			t.Errorf("GetTask on %s = %+v, %+v; want the completed task with its artifact", name, got, rerr)
		}
		if _, rerr := getOn(t, r.url, "Bearer other", sent.ID); rerr == nil || rerr.Code != codeTaskNotFound {
			t.Errorf("GetTask on %s by another caller = %+v, want TaskNotFound", name, rerr)
		}
		var list struct{ Tasks []sharedTask }
		res := callBy(t, r.url, "", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"includeArtifacts":true}}`)
		json.Unmarshal(res.Result, &list)
		if len(list.Tasks) != 1 || list.Tasks[0].ID != sent.ID || list.Tasks[0].text() != "echo: hello" {
			t.Errorf("ListTasks on %s = %s, want the one task", name, res.Result)
		}
		res = callBy(t, r.url, "Bearer other", `{"jsonrpc":"2.0","id":1,"method":"ListTasks"}`)
		json.Unmarshal(res.Result, &list)
		if len(list.Tasks) != 0 {
			t.Errorf("ListTasks on %s by another caller = %s, want none", name, res.Result)
		}
	}
	// Over HTTP+JSON too.
	req, _ := http.NewRequest("GET", c.url+"/tasks/"+sent.ID, nil)
	req.Header.Set("A2A-Version", "1.0")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rest sharedTask
	json.NewDecoder(resp.Body).Decode(&rest)
	resp.Body.Close()
	if resp.StatusCode != 200 || rest.ID != sent.ID || rest.text() != "echo: hello" {
		t.Errorf("GET /tasks/{id} on C = %d %+v", resp.StatusCode, rest)
	}
	// A follow-up message naming the task, on another replica, is
	// refused as on the one that ran it.
	body := strings.Replace(send1("1", "SendMessage", "again"), `"role"`, `"taskId":"`+sent.ID+`","role"`, 1)
	if r := callBy(t, c.url, "", body); r.Error == nil || r.Error.Code != codeUnsupported {
		t.Errorf("a message naming the ended task on C = %+v, want UnsupportedOperation", r.Error)
	}
}

// TestReplicasSubscribe: a task streamed on A, subscribed on B: B's
// first event is the task as it is (its first part), then every event
// after it once and in order, to the final status.
func TestReplicasSubscribe(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "steps", "", 15*time.Second)
	b := startReplica(t, srv, agent, "steps", "", 15*time.Second)
	stream := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	defer stream.resp.Body.Close()
	var id string
	for {
		raw, ok := stream.next(t)
		if !ok {
			t.Fatal("A's stream ended before its first part")
		}
		k, v := kind(raw)
		if k == "task" {
			id = v
		}
		if k == "artifact" {
			break
		}
	}
	// The part "a" is in Redis once the flusher wrote it.
	eventually(t, "the first part in Redis", func() bool {
		got, _ := getOn(t, b.url, "", id)
		return got.text() == "a"
	})
	sub := newSSE(t, rpcBy(t, b.url, "", taskReq("SubscribeToTask", id)))
	defer sub.resp.Body.Close()
	raw, _ := sub.next(t)
	var first struct{ Task sharedTask }
	json.Unmarshal(raw, &first)
	if first.Task.ID != id || first.Task.text() != "a" {
		t.Fatalf("B's first event = %s, want the task with its part a", raw)
	}
	agent.step <- struct{}{}
	agent.step <- struct{}{}
	var got []string
	for {
		raw, ok := sub.next(t)
		if !ok {
			break
		}
		k, v := kind(raw)
		got = append(got, k+":"+v)
	}
	want := "artifact:b artifact:c status:TASK_STATE_COMPLETED"
	if strings.Join(got, " ") != want {
		t.Errorf("B's events after the task = %q, want %q", got, want)
	}
}

// TestReplicasCancel: a task running on A, canceled on C: A's agent sees
// its request end, A's caller and B's subscriber are told canceled, and
// every replica shows it canceled; a second cancel is TaskNotCancelable.
func TestReplicasCancel(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "slow", "", 15*time.Second)
	b := startReplica(t, srv, agent, "slow", "", 15*time.Second)
	c := startReplica(t, srv, agent, "slow", "", 15*time.Second)
	stream := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	defer stream.resp.Body.Close()
	raw, _ := stream.next(t)
	_, id := kind(raw)
	sub := newSSE(t, rpcBy(t, b.url, "", taskReq("SubscribeToTask", id)))
	defer sub.resp.Body.Close()
	sub.next(t) // the task
	r := callBy(t, c.url, "", taskReq("CancelTask", id))
	var canceled sharedTask
	json.Unmarshal(r.Result, &canceled)
	if r.Error != nil || canceled.Status.State != "TASK_STATE_CANCELED" {
		t.Fatalf("CancelTask on C = %s %+v, want the canceled task", r.Result, r.Error)
	}
	select {
	case <-agent.ended:
	case <-time.After(hangGuard):
		t.Fatal("A's agent never saw its request end")
	}
	last := func(s *sseReader) string {
		var k, v string
		for {
			raw, ok := s.next(t)
			if !ok {
				return k + ":" + v
			}
			if k2, v2 := kind(raw); k2 == "status" {
				k, v = k2, v2
			}
		}
	}
	if got := last(stream); got != "status:TASK_STATE_CANCELED" {
		t.Errorf("A's stream ended with %q, want canceled", got)
	}
	if got := last(sub); got != "status:TASK_STATE_CANCELED" {
		t.Errorf("B's subscription ended with %q, want canceled", got)
	}
	for name, rep := range map[string]*replica{"A": a, "B": b, "C": c} {
		eventually(t, "canceled on "+name, func() bool {
			got, _ := getOn(t, rep.url, "", id)
			return got.Status.State == "TASK_STATE_CANCELED"
		})
	}
	if r := callBy(t, b.url, "", taskReq("CancelTask", id)); r.Error == nil || r.Error.Code != codeTaskNotCancel {
		t.Errorf("a second CancelTask on B = %+v, want TaskNotCancelable", r.Error)
	}
	if r := callBy(t, b.url, "Bearer other", taskReq("CancelTask", id)); r.Error == nil || r.Error.Code != codeTaskNotFound {
		t.Errorf("CancelTask by another caller = %+v, want TaskNotFound", r.Error)
	}
}

// TestReplicasLease (leases of 2 s): a replica that stops renewing its tasks' leases
// (its door closed, its task still running): another replica shows the
// task failed, saying why, once the lease lapsed; a task that had ended
// is as it was.
func TestReplicasLease(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "slow", "", 2*time.Second)
	b := startReplica(t, srv, agent, "slow", "", 2*time.Second)
	stream := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	defer stream.resp.Body.Close()
	raw, _ := stream.next(t)
	_, running := kind(raw)
	ended := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	raw, _ = ended.next(t)
	_, done := kind(raw)
	callBy(t, b.url, "", taskReq("CancelTask", done))
	for _, ok := ended.next(t); ok; _, ok = ended.next(t) {
	}
	ended.resp.Body.Close()
	// Renewed: past two leases, still working.
	time.Sleep(5 * time.Second)
	if got, _ := getOn(t, b.url, "", running); got.Status.State != "TASK_STATE_WORKING" {
		t.Fatalf("a task whose lease is renewed = %s, want working", got.Status.State)
	}
	sub := newSSE(t, rpcBy(t, b.url, "", taskReq("SubscribeToTask", running)))
	defer sub.resp.Body.Close()
	sub.next(t)
	a.door.Close()
	stopped := time.Now()
	// B's subscriber is told first, by its own reads every lease while
	// no event comes (no other call reads the task meanwhile).
	var last string
	for raw, ok := sub.next(t); ok; raw, ok = sub.next(t) {
		if k, v := kind(raw); k == "status" {
			last = v
		}
	}
	if last != "TASK_STATE_FAILED" {
		t.Errorf("B's subscriber ended with %q, want failed", last)
	}
	// The lease, a renewal's wait, the subscriber's next read: 5 s; the
	// rest is room for a loaded machine.
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("failed %s after the renewals stopped; want within the lease (2s), a renewal and a read", took)
	}
	got, _ := getOn(t, b.url, "", running)
	if got.Status.State != "TASK_STATE_FAILED" {
		t.Errorf("GetTask on B = %s, want failed", got.Status.State)
	}
	if want := "its lease (state.redis.lease, 2s) was not renewed"; !strings.Contains(got.message(), want) {
		t.Errorf("the failed task's message = %q, want it to say %q", got.message(), want)
	}
	if got, _ := getOn(t, b.url, "", done); got.Status.State != "TASK_STATE_CANCELED" {
		t.Errorf("the task that had ended = %s, want canceled still", got.Status.State)
	}
}

// TestReplicasSubscribeOverlap: an event published after B subscribed to
// the task's channel and before it read the task is in both: B sends it
// once, in the task, not again as an update.
func TestReplicasSubscribeOverlap(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "steps", "", 15*time.Second)
	b := startReplica(t, srv, agent, "steps", "", 15*time.Second)
	stream := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	defer stream.resp.Body.Close()
	raw, _ := stream.next(t)
	_, id := kind(raw)
	eventually(t, "the first part in Redis", func() bool {
		got, _ := getOn(t, b.url, "", id)
		return got.text() == "a"
	})
	// Run on B's handler goroutine: it may not end the test (Fatal).
	betweenSubscribeAndRead = func() {
		agent.step <- struct{}{}
		rc := b.store.Client()
		for end := time.Now().Add(5 * time.Second); rc.LLen(context.Background(), "sc:a2a:parts:"+id).Val() != 2; {
			if time.Now().After(end) {
				t.Error("the second part was not in Redis within 5s")
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer func() { betweenSubscribeAndRead = nil }()
	sub := newSSE(t, rpcBy(t, b.url, "", taskReq("SubscribeToTask", id)))
	defer sub.resp.Body.Close()
	raw, _ = sub.next(t)
	var first struct{ Task sharedTask }
	json.Unmarshal(raw, &first)
	if first.Task.text() != "ab" {
		t.Fatalf("B's first event = %s, want the task with a and b", raw)
	}
	agent.step <- struct{}{}
	var got []string
	for raw, ok := sub.next(t); ok; raw, ok = sub.next(t) {
		k, v := kind(raw)
		got = append(got, k+":"+v)
	}
	if want := "artifact:c status:TASK_STATE_COMPLETED"; strings.Join(got, " ") != want {
		t.Errorf("B's events after the task = %q, want %q", got, want)
	}
}

// TestReplicasSubscribeBounds: subscribers on another replica than the
// task's count as that replica's own: 8 a task, limits.subscriptions in
// all; one that leaves frees its place.
func TestReplicasSubscribeBounds(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "slow", "", 15*time.Second)
	b := startReplica(t, srv, agent, "slow", ", subscriptions: 9", 15*time.Second)
	var ids []string
	for range 2 {
		s := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
		defer s.resp.Body.Close()
		raw, _ := s.next(t)
		_, id := kind(raw)
		ids = append(ids, id)
	}
	var subs []*sseReader
	for range 8 {
		s := newSSE(t, rpcBy(t, b.url, "", taskReq("SubscribeToTask", ids[0])))
		defer s.resp.Body.Close()
		s.next(t)
		subs = append(subs, s)
	}
	refused := func(id, want string) {
		t.Helper()
		r := callBy(t, b.url, "", taskReq("SubscribeToTask", id))
		if r.Error == nil || r.Error.Code != codeInternal || !strings.Contains(r.Error.Message, want) {
			t.Errorf("a subscriber past the bounds = %+v, want -32603 saying %q", r.Error, want)
		}
	}
	refused(ids[0], "has 8 subscribers")
	last := newSSE(t, rpcBy(t, b.url, "", taskReq("SubscribeToTask", ids[1])))
	defer last.resp.Body.Close()
	last.next(t)
	refused(ids[1], "serves 9 subscriptions")
	subs[0].resp.Body.Close()
	eventually(t, "a place freed", func() bool {
		resp := rpcBy(t, b.url, "", taskReq("SubscribeToTask", ids[1]))
		defer resp.Body.Close()
		return resp.Header.Get("Content-Type") == "text/event-stream"
	})
}

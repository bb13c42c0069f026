package a2a

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-dev/sidecar/internal/redistest"
	"github.com/sidecar-dev/sidecar/state"
)

// storeDownWait bounds a call the store fails: two attempts of the
// client's 2 s bounds, and room for a loaded machine.
const storeDownWait = 10 * time.Second

// TestReplicasStoreDown: with Redis stopped, every task operation is
// answered 503 in its binding's shape, quickly, and a message never
// reaches the agent; restarted, they work again; the task that was
// running when Redis stopped ends (completed or failed), never working.
func TestReplicasStoreDown(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "steps", "", time.Second)
	b := startReplica(t, srv, agent, "steps", "", time.Second)
	stream := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	defer stream.resp.Body.Close()
	raw, _ := stream.next(t)
	_, id := kind(raw)

	srv.Stop()
	calls := agent.calls.Load()
	rpcDown := func(what, body string) {
		t.Helper()
		start := time.Now()
		resp := rpcBy(t, b.url, "", body)
		defer resp.Body.Close()
		var r rpcResult
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &r)
		if resp.StatusCode != http.StatusServiceUnavailable || r.Error == nil || r.Error.Code != codeInternal || r.Error.Message != state.Message {
			t.Errorf("%s with Redis stopped = %d %s, want 503 and -32603 %q", what, resp.StatusCode, b, state.Message)
		}
		if took := time.Since(start); took > storeDownWait {
			t.Errorf("%s with Redis stopped took %s", what, took)
		}
	}
	rpcDown("SendMessage", send1("1", "SendMessage", "hi"))
	rpcDown("GetTask", taskReq("GetTask", id))
	rpcDown("ListTasks", `{"jsonrpc":"2.0","id":1,"method":"ListTasks"}`)
	rpcDown("CancelTask", taskReq("CancelTask", id))
	rpcDown("SubscribeToTask", taskReq("SubscribeToTask", id))
	if n := agent.calls.Load(); n != calls {
		t.Errorf("the agent was called %d times with Redis stopped, want none", n-calls)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/tasks/" + id}, {"POST", "/tasks/" + id + ":cancel"}, {"GET", "/tasks"},
		{"POST", "/message:send"}, {"POST", "/tasks/" + id + ":subscribe"},
	} {
		body := io.Reader(nil)
		if c.method == "POST" {
			body = strings.NewReader(`{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"hi"}]}}`)
		}
		req, _ := http.NewRequest(c.method, b.url+c.path, body)
		req.Header.Set("A2A-Version", "1.0")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Error struct {
				Code    int
				Status  string
				Message string
			}
		}
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if resp.StatusCode != 503 || st.Error.Status != "UNAVAILABLE" || st.Error.Message != state.Message {
			t.Errorf("%s %s with Redis stopped = %d %+v, want 503 UNAVAILABLE", c.method, c.path, resp.StatusCode, st)
		}
	}
	// The running task goes on: its caller gets its end though the
	// store cannot record it.
	agent.step <- struct{}{}
	agent.step <- struct{}{}
	var final string
	for raw, ok := stream.next(t); ok; raw, ok = stream.next(t) {
		if k, v := kind(raw); k == "status" {
			final = v
		}
	}
	if final != "TASK_STATE_COMPLETED" {
		t.Errorf("A's caller got %q at the end, want completed", final)
	}

	srv.Restart() // empty: no persistence
	agent.step <- struct{}{}
	agent.step <- struct{}{}
	sent := sendOn(t, b.url, "again")
	if sent.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("SendMessage after the restart = %+v", sent)
	}
	if got, rerr := getOn(t, a.url, "", sent.ID); rerr != nil || got.text() != "abc" {
		t.Errorf("GetTask on A after the restart = %+v %+v", got, rerr)
	}
}

// TestReplicasTaskEndsAfterOutage: a task whose end could not be written
// (Redis down for a moment) shows failed on every replica once its lease
// lapsed, never working for ever.
func TestReplicasTaskEndsAfterOutage(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "steps", "", time.Second)
	b := startReplica(t, srv, agent, "steps", "", time.Second)
	stream := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	defer stream.resp.Body.Close()
	raw, _ := stream.next(t)
	_, id := kind(raw)
	// Stop Redis with its data kept: the task is working there.
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	eventually(t, "the task working in Redis", func() bool {
		return rc.HGet(ctx, "sc:a2a:task:"+id, "state").Val() == stateWorking
	})
	dump := rc.HGetAll(ctx, "sc:a2a:task:"+id).Val()
	srv.Stop()
	agent.step <- struct{}{}
	agent.step <- struct{}{}
	for _, ok := stream.next(t); ok; _, ok = stream.next(t) {
	}
	srv.Restart()
	for k, v := range dump { // as a server that kept its data would have it
		rc.HSet(ctx, "sc:a2a:task:"+id, k, v)
	}
	eventually(t, "the task failed on B", func() bool {
		got, _ := getOn(t, b.url, "", id)
		return got.Status.State == "TASK_STATE_FAILED"
	})
}

// TestReplicasBounded: far more tasks than limits.task_store_bytes, and
// artifacts far past limits.reply_bytes: what Redis holds stays within
// the cap, the oldest ended tasks deleted; ended tasks carry the TTL.
func TestReplicasBounded(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	const limits = ", task_store_bytes: 64KiB, reply_bytes: 16KiB"
	a := startReplica(t, srv, agent, "query", limits, 15*time.Second)
	big := startReplica(t, srv, agent, "big", limits, 15*time.Second)
	text := strings.Repeat("y", 2000)
	var ids []string
	for range 200 { // ~2.6 KB each: 8 times the cap
		ids = append(ids, sendOn(t, a.url, text).ID)
	}
	// 64 KiB of records on a 16 KiB reply_bytes: the artifact dropped.
	streamed := newSSE(t, rpcBy(t, big.url, "", send1("1", "SendStreamingMessage", "go")))
	raw, _ := streamed.next(t)
	_, bigID := kind(raw)
	for _, ok := streamed.next(t); ok; _, ok = streamed.next(t) {
	}
	streamed.resp.Body.Close()
	sent := sendOn(t, big.url, "go")
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	held, _ := rc.Get(ctx, "sc:a2a:bytes").Int64()
	if held > 64<<10 || held == 0 {
		t.Errorf("the byte counter = %d, want at most the cap (65536)", held)
	}
	var mem int64
	keys := rc.Keys(ctx, "sc:a2a:*").Val()
	for _, k := range keys {
		if strings.HasPrefix(k, "sc:a2a:task:") || strings.HasPrefix(k, "sc:a2a:parts:") {
			n, _ := rc.MemoryUsage(ctx, k).Result()
			mem += n
		}
	}
	t.Logf("after 200 tasks of 2 KB and 2 of 64 KiB: counter %d bytes, %d keys, MEMORY USAGE of the tasks' keys %d bytes", held, len(keys), mem)
	if mem > 2*64<<10 {
		t.Errorf("the tasks' keys use %d bytes in Redis, want about the cap (65536)", mem)
	}
	if n := rc.Exists(ctx, "sc:a2a:task:"+ids[0]).Val(); n != 0 {
		t.Errorf("the oldest task is still held")
	}
	last := "sc:a2a:task:" + ids[len(ids)-1]
	if ttl := rc.TTL(ctx, last).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("an ended task's TTL = %s, want at most state.redis.task_ttl (1h)", ttl)
	}
	for _, id := range []string{bigID, sent.ID} {
		h := rc.HGetAll(ctx, "sc:a2a:task:"+id).Val()
		if h["dropped"] != "1" || rc.Exists(ctx, "sc:a2a:parts:"+id).Val() != 0 {
			t.Errorf("task %s of 64 KiB: dropped %q, parts held %d; want it dropped whole", id, h["dropped"], rc.Exists(ctx, "sc:a2a:parts:"+id).Val())
		}
	}
}

// counter counts the round trips of a client: a command or a pipeline
// is one.
type counter struct{ n atomic.Int64 }

func (*counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// TestReplicasRoundTrips: what a message costs in round trips to Redis,
// once the replica is warm (its cancel channel subscribed, the script
// loaded): open, the working status (the flusher), the end.
func TestReplicasRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	q := startReplica(t, srv, agent, "query", "", 15*time.Second)
	s := startReplica(t, srv, agent, "steps", "", 15*time.Second)
	c := new(counter)
	q.store.Client().AddHook(c)
	s.store.Client().AddHook(c)
	sendOn(t, q.url, "warm")
	before := c.n.Load()
	sendOn(t, q.url, "hi")
	send := c.n.Load() - before

	agent.step <- struct{}{}
	agent.step <- struct{}{}
	readEvents(t, rpcBy(t, s.url, "", send1("1", "SendStreamingMessage", "warm")))
	agent.step <- struct{}{}
	agent.step <- struct{}{}
	before = c.n.Load()
	readEvents(t, rpcBy(t, s.url, "", send1("1", "SendStreamingMessage", "go")))
	stream := c.n.Load() - before
	t.Logf("round trips: message/send %d, message/stream of 3 records %d", send, stream)
	// open 1, at most one flush per event (2 for send, 5 for the
	// stream), the end 1.
	if send < 2 || send > 4 || stream < 2 || stream > 7 {
		t.Errorf("round trips: send %d, stream %d; want 2–4 and 2–7", send, stream)
	}
}

// TestReplicasSpans: with a tracer, a message's SERVER span has the
// round trips to Redis of its open and end as CLIENT children.
func TestReplicasSpans(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	a := startReplica(t, srv, agent, "query", "", 15*time.Second)
	a.srv.Tracer = tp.Tracer("test")
	sendOn(t, a.url, "hi")
	var server trace.SpanContext
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindServer {
			server = s.SpanContext()
		}
	}
	var children []string
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindClient && strings.HasPrefix(s.Name(), "redis ") && s.Parent().SpanID() == server.SpanID() {
			children = append(children, s.Name())
		}
	}
	if !server.IsValid() || len(children) < 2 {
		t.Errorf("the SERVER span's redis children = %v, want the open and the end at least", children)
	}
}

// gate holds every script run (the flusher's writes, the end) until it
// is opened.
type gate struct {
	open chan struct{}
	once sync.Once
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (*gate) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			<-g.open
		}
		return next(ctx, cmd)
	}
}
func (*gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestReplicasStreamNeverWaits: a message/stream's events reach its
// caller while every write of them to Redis is held: the stream never
// waits for the store (but for the open, before the agent is called, and
// the end).
func TestReplicasStreamNeverWaits(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "steps", "", 15*time.Second)
	g := &gate{open: make(chan struct{})}
	a.store.Client().AddHook(g)
	t.Cleanup(g.release) // before the servers close: nothing left held
	stream := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	defer stream.resp.Body.Close()
	var got []string
	for len(got) < 4 {
		raw, ok := stream.next(t)
		if !ok {
			t.Fatal("the stream ended early")
		}
		k, v := kind(raw)
		got = append(got, k+":"+v)
		if k == "artifact" {
			agent.step <- struct{}{}
		}
	}
	if got[1] != "status:TASK_STATE_WORKING" || got[2] != "artifact:a" || got[3] != "artifact:b" {
		t.Errorf("the events while Redis' writes are held = %v, want the task, working, a, b", got)
	}
	g.release()
	agent.step <- struct{}{}
	var final string
	for raw, ok := stream.next(t); ok; raw, ok = stream.next(t) {
		if k, v := kind(raw); k == "status" {
			final = v
		}
	}
	if final != "TASK_STATE_COMPLETED" {
		t.Errorf("the stream ended %q, want completed", final)
	}
}

// TestReplicasPendingBounded: while Redis takes no write, what waits to be
// written of a task is bounded as its artifact is (limits.reply_bytes):
// past it, the parts waiting are dropped, and the artifact with them.
func TestReplicasPendingBounded(t *testing.T) {
	srv := redistest.Start(t)
	agent := startSharedAgent(t)
	a := startReplica(t, srv, agent, "big", ", reply_bytes: 16KiB", 15*time.Second)
	g := &gate{open: make(chan struct{})}
	a.store.Client().AddHook(g)
	t.Cleanup(g.release)
	stream := newSSE(t, rpcBy(t, a.url, "", send1("1", "SendStreamingMessage", "go")))
	defer stream.resp.Body.Close()
	raw, _ := stream.next(t)
	_, id := kind(raw)
	// All but the last records (the stream's writer may keep those for
	// its last flush, with the final status, which waits for Redis).
	for parts := 0; parts < 48; {
		raw, ok := stream.next(t)
		if !ok {
			t.Fatalf("the stream ended early, after %d parts", parts)
		}
		if k, _ := kind(raw); k == "artifact" {
			parts++
		}
	}
	// 48 KiB streamed, none written: at most 16 KiB waits.
	d := a.door.tasks
	d.mu.Lock()
	run := d.tasks[id].run
	d.mu.Unlock()
	run.mu.Lock()
	waiting, dropped := run.bytes, run.dropped
	run.mu.Unlock()
	if waiting > 16<<10 || !dropped {
		t.Errorf("waiting to be written: %d bytes, dropped %v; want at most 16 KiB, the artifact dropped", waiting, dropped)
	}
	g.release()
	for _, ok := stream.next(t); ok; _, ok = stream.next(t) {
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	if h := rc.HGetAll(context.Background(), "sc:a2a:task:"+id).Val(); h["dropped"] != "1" || h["state"] != stateCompleted {
		t.Errorf("the task in Redis = %v, want completed with its artifact dropped", h)
	}
}

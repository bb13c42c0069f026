package mcp

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/redistest"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/state"
)

// openStore is a client of srv under the prefix "p", as cmd/sidecar opens
// one per replica; the test's end closes it.
func openStore(t *testing.T, srv *redistest.Server) *state.Redis {
	t.Helper()
	st, err := state.Open(config.State{Store: config.StoreRedis, Redis: config.RedisState{URL: srv.URL(), KeyPrefix: "p"}},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// replicas are n sidecars serving the MCP door, head prepended to testMap,
// each in front of its own agent.py and with its own client of srv: the
// replicas of one deployment sharing one Redis.
func replicas(t *testing.T, srv *redistest.Server, head string, n int) []*served {
	t.Helper()
	var rs []*served
	for range n {
		rs = append(rs, serve(t, head, Options{Store: openStore(t, srv)}))
	}
	return rs
}

// legacyCall posts a 2025 request of method (params JSON, "" for none) in
// session id as auth.
func legacyCall(t *testing.T, url, id, auth, method, params string) (*http.Response, rpcReply) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `"}`
	if params != "" {
		body = `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`
	}
	resp, b := post(t, url, body, "Mcp-Session-Id", id, "Authorization", auth)
	return resp, decode(t, b)
}

// served2025 reports whether session id of auth answers a ping on url.
func served2025(t *testing.T, url, id, auth string) bool {
	t.Helper()
	resp, r := legacyCall(t, url, id, auth, "ping", "")
	if resp.StatusCode != 200 && (resp.StatusCode != 404 || r.Error == nil || r.Error.Code != codeSessionNotFound ||
		r.Error.Message != "Session not found: initialize again (the session ended, or was forgotten past limits.mcp_sessions)") {
		t.Fatalf("ping of session %.40s = %d %+v, want 200 or 404 -32001 (no other replica's to blame)", id, resp.StatusCode, r.Error)
	}
	return resp.StatusCode == 200
}

// endSession sends DELETE of session id as auth to url: its status.
func endSessionOn(t *testing.T, url, id, auth string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	resp, _ := do(t, req, "Mcp-Session-Id", id, "Authorization", auth)
	return resp.StatusCode
}

// openAs initializes a 2025-11-25 session on url as auth: its id.
func openAs(t *testing.T, url, auth string) string {
	t.Helper()
	return openBy(t, testClient, url, auth)
}

// openBy is openAs by client c.
func openBy(t *testing.T, c *http.Client, url, auth string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, b := doWith(t, c, req, "Authorization", auth)
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize (%q) = %d %s", auth, resp.StatusCode, b)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

// holderKey is the key of the sessions opened from address ip (on a door
// checking no tokens) under the prefix "p".
func holderKey(ip string) string {
	h := core.HolderOf(&http.Request{RemoteAddr: ip + ":1"})
	return "p:mcp:holder:" + hex.EncodeToString(h[:])
}

// sessionKeys counts the session hashes srv holds.
func sessionKeys(t *testing.T, st *state.Redis) int {
	t.Helper()
	keys, err := st.Client().Keys(t.Context(), "p:mcp:session:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// TestSharedSessionsEveryReplica: with the Redis store, a session opened
// on one replica is served on every other (tools/list, tools/call), is
// another owner's on none, and DELETE on one ends it on all.
func TestSharedSessionsEveryReplica(t *testing.T) {
	srv := redistest.Start(t)
	rs := replicas(t, srv, "", 3)
	a, b, c := rs[0], rs[1], rs[2]
	id := openAs(t, a.url, "Bearer alice")

	resp, r := legacyCall(t, b.url, id, "Bearer alice", "tools/list", "")
	if resp.StatusCode != 200 || !strings.Contains(string(r.Result), `"name":"ask"`) {
		t.Fatalf("tools/list on another replica = %d %s %+v, want the tools", resp.StatusCode, r.Result, r.Error)
	}
	resp, r = legacyCall(t, c.url, id, "Bearer alice", "tools/call", `{"name":"ask","arguments":{"message":"hi"}}`)
	if resp.StatusCode != 200 || !strings.Contains(string(r.Result), `you asked: hi`) {
		t.Fatalf("tools/call on a third replica = %d %s %+v, want the agent's answer", resp.StatusCode, r.Result, r.Error)
	}
	for i, s := range rs {
		if served2025(t, s.url, id, "Bearer mallory") {
			t.Errorf("replica %d served alice's session to another Authorization, want 404", i)
		}
		if endSessionOn(t, s.url, id, "Bearer mallory") != 404 {
			t.Errorf("replica %d: DELETE of alice's session by another Authorization not 404", i)
		}
	}
	if st := endSessionOn(t, b.url, id, "Bearer alice"); st != 200 {
		t.Fatalf("DELETE on replica b = %d, want 200", st)
	}
	for i, s := range []*served{a, c} {
		if served2025(t, s.url, id, "Bearer alice") {
			t.Errorf("replica %d still serves the session DELETE ended on another, want 404", i)
		}
	}
	if st := endSessionOn(t, a.url, id, "Bearer alice"); st != 404 {
		t.Errorf("a second DELETE on replica a = %d, want 404", st)
	}
	st := openStore(t, srv)
	if n, _ := st.Client().DBSize(t.Context()).Result(); n != 2 || sessionKeys(t, st) != 0 {
		t.Errorf("Redis holds %d keys after the only session ended, want 2 (the clock and the count of 0)", n)
	}
}

// TestSharedSessionCap: limits.mcp_sessions is one pool for every
// replica, fair between owners: X opening ten sessions across three
// replicas, with a cap of 4, forgets its own oldest, and Y's two survive;
// Redis holds the cap's sessions and no more.
func TestSharedSessionCap(t *testing.T) {
	srv := redistest.Start(t)
	rs := replicas(t, srv, "limits: {mcp_sessions: 4}\n", 3)
	yHost := clientFrom(t, "127.0.0.2")
	y := []string{openBy(t, yHost, rs[0].url, "Bearer y"), openBy(t, yHost, rs[1].url, "Bearer y")}
	var x []string
	for i := range 10 {
		x = append(x, openAs(t, rs[i%3].url, "Bearer x"))
	}
	for i, id := range y {
		if !served2025(t, rs[(i+2)%3].url, id, "Bearer y") {
			t.Errorf("Y's session %d after X's ten: forgotten, want kept", i)
		}
	}
	for i, id := range x {
		if kept := served2025(t, rs[(i+1)%3].url, id, "Bearer x"); kept != (i >= 8) {
			t.Errorf("X's session %d kept = %v, want only X's two newest kept", i, kept)
		}
	}
	st := openStore(t, srv)
	count, _ := st.Client().Get(t.Context(), "p:mcp:count").Int()
	xs, _ := st.Client().ZCard(t.Context(), holderKey("127.0.0.1")).Result()
	ys, _ := st.Client().ZCard(t.Context(), holderKey("127.0.0.2")).Result()
	if n := sessionKeys(t, st); n != 4 || count != 4 || xs != 2 || ys != 2 {
		t.Errorf("Redis holds %d sessions (count %d; X %d, Y %d), want the cap, 4 (2 and 2)", n, count, xs, ys)
	}
}

// TestSharedFairShare runs TestSessionFairShare's steps on the Redis
// store's scripts: the same victims, the same ties broken the same way.
func TestSharedFairShare(t *testing.T) {
	srv := redistest.Start(t)
	st := openStore(t, srv)
	ctx := t.Context()
	s := newShared(st, 6)
	open := func(o core.Owner) session {
		ss, err := s.open(ctx, version20251125, o, core.Holder(o), 0)
		if err != nil {
			t.Fatal(err)
		}
		return ss
	}
	kept := func(id string, o core.Owner) bool {
		_, ok, err := s.find(ctx, id, o)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	a, b, c, d := core.Owner{'a'}, core.Owner{'b'}, core.Owner{'c'}, core.Owner{'d'}
	a1, a2 := open(a), open(a)
	b1, b2 := open(b), open(b)
	c1, c2 := open(c), open(c)
	kept(a1.id, a) // b1 is now the oldest of the largest
	kept(a2.id, a)
	d1 := open(d)
	if kept(b1.id, b) || !kept(b2.id, b) || !kept(a1.id, a) || !kept(c1.id, c) || !kept(d1.id, d) {
		t.Errorf("a new owner at the limit: want b's least recently used forgotten, every other kept")
	}
	open(c) // c holds 2 of 6, over its share: c2 goes
	if kept(c2.id, c) || !kept(c1.id, c) || !kept(b2.id, b) || !kept(d1.id, d) {
		t.Errorf("an owner at its share: want its own least recently used forgotten")
	}

	st.Client().FlushDB(ctx)
	s = newShared(st, 4)
	small := open(d)
	for range 3 {
		open(a)
	}
	open(b)
	if !kept(small.id, d) || sessionKeys(t, st) != 4 {
		t.Errorf("a new owner at the limit forgot the oldest session of all, a small owner's: want the largest owner's")
	}
	// A replica with a lower limit finds more than it: it forgets down to it.
	s = newShared(st, 2)
	open(b)
	if n := sessionKeys(t, st); n != 2 {
		t.Errorf("%d sessions after an open under a lower limit, want 2", n)
	}
}

// TestSharedSessionFlood: one host's flood of initialize, then a flood
// of hosts (each its own address and Authorization), far past the cap
// across two replicas: what Redis holds stays bounded by it, and the
// first flood forgets only the flooder's sessions.
func TestSharedSessionFlood(t *testing.T) {
	srv := redistest.Start(t)
	rs := replicas(t, srv, "limits: {mcp_sessions: 20}\n", 2)
	victimHost := clientFrom(t, "127.0.0.2")
	victim := []string{openBy(t, victimHost, rs[0].url, "Bearer victim"), openBy(t, victimHost, rs[1].url, "Bearer victim")}
	for i := range 200 {
		openAs(t, rs[i%2].url, "")
	}
	for i, id := range victim {
		if !served2025(t, rs[i].url, id, "Bearer victim") {
			t.Errorf("the victim's session %d after another host's flood: forgotten, want kept", i)
		}
	}
	for i := range 200 {
		host := clientFrom(t, fmt.Sprintf("127.0.1.%d", i+1))
		openBy(t, host, rs[i%2].url, "Bearer flood-"+string(rune('a'+i%26))+strings.Repeat("x", i))
		host.CloseIdleConnections()
	}
	st := openStore(t, srv)
	ctx := t.Context()
	keys, _ := st.Client().DBSize(ctx).Result()
	count, _ := st.Client().Get(ctx, "p:mcp:count").Int()
	holders, _ := st.Client().ZCard(ctx, "p:mcp:holders").Result()
	sizes, _ := st.Client().Keys(ctx, "p:mcp:size:*").Result()
	// 20 sessions, at most 20 holders' zsets, a size zset per distinct
	// number of sessions a holder holds (1+2+…+5 is under 20, 1+…+6
	// over), the holders, the count and the clock.
	if n := sessionKeys(t, st); n != 20 || count != 20 || holders > 20 || len(sizes) > 5 || keys > 20+20+5+3 {
		t.Errorf("after 400 initialize: %d sessions (count %d), %d holders, %d sizes, %d keys; want 20, at most 20, 5, 48", n, count, holders, len(sizes), keys)
	}
}

// TestSharedIdentityFlood runs TestSessionIdentityFlood across two
// replicas sharing Redis: ten initialize from one host, each with an
// Authorization of its own, forget only that host's sessions.
func TestSharedIdentityFlood(t *testing.T) {
	srv := redistest.Start(t)
	rs := replicas(t, srv, "limits: {mcp_sessions: 5}\n", 2)
	victimHost := clientFrom(t, "127.0.0.2")
	victim := []string{openBy(t, victimHost, rs[0].url, "Bearer victim"), openBy(t, victimHost, rs[1].url, "Bearer victim")}
	var flood []string
	for i := range 10 {
		flood = append(flood, openAs(t, rs[i%2].url, fmt.Sprintf("Bearer flood-%d", i)))
	}
	for i, id := range victim {
		if !served2025(t, rs[1-i].url, id, "Bearer victim") {
			t.Errorf("the victim's session %d after ten identities from another host: forgotten, want kept", i)
		}
	}
	if !served2025(t, rs[0].url, flood[9], "Bearer flood-9") || served2025(t, rs[1].url, flood[9], "Bearer flood-8") {
		t.Error("the flood's last session: want served to its own Authorization only")
	}
	st := openStore(t, srv)
	hs, _ := st.Client().ZCard(t.Context(), holderKey("127.0.0.1")).Result()
	if n := sessionKeys(t, st); n != 5 || hs != 3 {
		t.Errorf("Redis holds %d sessions, %d of the flooding host; want the cap, 5, and 3", n, hs)
	}
}

// balancer is a round-robin HTTP balancer over the replicas' servers:
// every request goes to the next, so a client's consecutive requests
// land on different replicas. hits counts each one's.
type balancer struct {
	proxies []*httputil.ReverseProxy
	next    atomic.Uint64
	hits    []atomic.Int64
}

// balance serves a balancer in front of rs; the test's end closes it.
func balance(t *testing.T, rs []*served) (*balancer, string) {
	t.Helper()
	transport := &http.Transport{}
	b := &balancer{hits: make([]atomic.Int64, len(rs))}
	for _, s := range rs {
		u, _ := url.Parse(s.base)
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport, p.FlushInterval = transport, -1
		p.ErrorLog = zap.NewStdLog(zap.NewNop())
		b.proxies = append(b.proxies, p)
	}
	srv := httptest.NewServer(b)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		transport.CloseIdleConnections()
	})
	return b, srv.URL + DefaultPath
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int((b.next.Add(1) - 1) % uint64(len(b.proxies)))
	b.hits[i].Add(1)
	b.proxies[i].ServeHTTP(w, r)
}

// spread fails the test unless every replica behind b served a request.
func (b *balancer) spread(t *testing.T) {
	t.Helper()
	for i := range b.hits {
		if b.hits[i].Load() == 0 {
			t.Errorf("replica %d served no request, want every one", i)
		}
	}
}

// TestSharedStoreDown: with Redis stopped, every request that needs a
// 2025 session (initialize, a request in one, DELETE) gets 503 and a
// JSON-RPC error to its id saying state.Message, within the store's
// bounds, logged with reason state.Reason; 2026-07-28 requests are
// served as ever. Restarted, a session opened before (saved, as a
// persistent Redis keeps it) is served again, and a new one opens.
func TestSharedStoreDown(t *testing.T) {
	srv := redistest.Start(t)
	rs := replicas(t, srv, "", 2)
	a, b := rs[0], rs[1]
	before := openAs(t, a.url, "Bearer alice")
	if err := openStore(t, srv).Client().Save(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Stop()

	start := time.Now()
	resp, body := post(t, a.url, `{"jsonrpc":"2.0","id":"i1","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	r := decode(t, body)
	if resp.StatusCode != 503 || string(r.ID) != `"i1"` || r.Error == nil || r.Error.Code != codeInternal || r.Error.Message != state.Message {
		t.Errorf("initialize with Redis down = %d %s, want 503, -32603 to its id, state.Message", resp.StatusCode, body)
	}
	resp, r = legacyCall(t, b.url, before, "Bearer alice", "tools/call", `{"name":"ask","arguments":{"message":"hi"}}`)
	if resp.StatusCode != 503 || string(r.ID) != "7" || r.Error == nil || r.Error.Code != codeInternal || r.Error.Message != state.Message {
		t.Errorf("tools/call in a session with Redis down = %d %+v, want 503, -32603 to its id, state.Message", resp.StatusCode, r.Error)
	}
	if st := endSessionOn(t, b.url, before, "Bearer alice"); st != 503 {
		t.Errorf("DELETE with Redis down = %d, want 503", st)
	}
	// Three round trips, each within two attempts of the 2 s bounds.
	if d := time.Since(start); d > 3*2*(state.DialTimeout+state.ReadTimeout) {
		t.Errorf("the three refusals took %v, want each within the store's bounds", d)
	}
	resp, body = modern(t, a.url, "tools/call", `"name":"ask","arguments":{"message":"still"}`, "ask")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "you asked: still") {
		t.Errorf("a 2026-07-28 tools/call with Redis down = %d %s, want served", resp.StatusCode, body)
	}
	if n := a.logs.FilterField(zap.String("reason", state.Reason)).FilterField(zap.Int("status", 503)).Len(); n != 1 {
		t.Errorf("%d log lines of replica a with reason %s and status 503, want 1 (the initialize)", n, state.Reason)
	}
	if n := b.logs.FilterField(zap.String("reason", state.Reason)).Len(); n != 2 {
		t.Errorf("%d log lines of replica b with reason %s, want 2 (the call, the DELETE)", n, state.Reason)
	}
	// The log line says what failed, where: the answer does not.
	for _, e := range b.logs.FilterField(zap.String("reason", state.Reason)).All() {
		if msg, _ := e.ContextMap()["error"].(string); !strings.Contains(msg, "redis at "+srv.Addr()) {
			t.Errorf("the log line of a store failure: error %q, want it naming redis at %s", msg, srv.Addr())
		}
	}

	srv.Restart()
	if !served2025(t, b.url, before, "Bearer alice") {
		t.Error("the session opened before the outage, kept by Redis: not served after it, want served")
	}
	after := openAs(t, b.url, "Bearer alice")
	resp, r = legacyCall(t, a.url, after, "Bearer alice", "tools/call", `{"name":"ask","arguments":{"message":"back"}}`)
	if resp.StatusCode != 200 || !strings.Contains(string(r.Result), "you asked: back") {
		t.Errorf("tools/call in a session opened after the restart = %d %s %+v", resp.StatusCode, r.Result, r.Error)
	}
}

// TestSharedGoSDK: the Go SDK's client pinned to 2025-11-25 runs a whole
// session through a round-robin balancer over two replicas, so each of
// its requests lands on the other replica than the last: initialize,
// tools/list, a unary and a streaming tools/call, and Close, whose DELETE
// ends the session in Redis.
func TestSharedGoSDK(t *testing.T) {
	srv := redistest.Start(t)
	rs := replicas(t, srv, "", 2)
	b, url := balance(t, rs)
	progressed := make(chan float64, 100)
	client := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-test", Version: "1.0.0"}, &gomcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *gomcp.ProgressNotificationClientRequest) {
			progressed <- r.Params.Progress
		}})
	ctx := t.Context()
	cs := goConnect(t, client, url, version20251125)
	if cs.ID() == "" || cs.InitializeResult().ProtocolVersion != version20251125 {
		t.Fatalf("connected with session %q, %+v; want a 2025-11-25 session", cs.ID(), cs.InitializeResult())
	}
	for range 3 { // each request on the other replica
		tools, err := cs.ListTools(ctx, nil)
		if err != nil || len(tools.Tools) != 5 {
			t.Fatalf("tools/list = %v, %v; want the five tools", tools, err)
		}
		ask, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "what is up"}})
		if err != nil || ask.IsError || ask.Content[0].(*gomcp.TextContent).Text != `{"answer":"you asked: what is up","words":3}` {
			t.Fatalf("ask = %+v, %v", ask, err)
		}
	}
	params := &gomcp.CallToolParams{Name: "story", Arguments: map[string]any{"message": "the end"}}
	params.SetProgressToken("story-1")
	story, err := cs.CallTool(ctx, params)
	if err != nil || story.IsError || story.Content[0].(*gomcp.TextContent).Text != "once upon a time the end " {
		t.Fatalf("story = %+v, %v", story, err)
	}
	for range 6 {
		select {
		case <-progressed:
		case <-time.After(hangGuard):
			t.Fatalf("no 6 progress notifications after %v", hangGuard)
		}
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	b.spread(t)
	if n := sessionKeys(t, openStore(t, srv)); n != 0 {
		t.Errorf("%d sessions in Redis after the client closed its own, want 0", n)
	}
}

// TestSharedSDK1Client: the TypeScript SDK 1.x client's whole session
// (testdata/mcp/client.mjs, TestSDK1Client's) through a round-robin
// balancer over three replicas: every step as on one replica, and its
// DELETE ends the session in Redis.
func TestSharedSDK1Client(t *testing.T) {
	srv := redistest.Start(t)
	rs := replicas(t, srv, "", 3)
	b, url := balance(t, rs)
	got := deps.Node(t, "mcp", "client.mjs", url)
	deps.MatchLines(t, got, []string{
		`{"step":"connect","version":"2025-11-25","session":true,"server":"sidecar","tools":true}`,
		wantTools, wantAsk, wantStory,
		wantFail + `the model is overloaded"}`,
		`{"step":"fail_late","isError":true,"text":"the model is overloaded"}`,
		`{"step":"unknown tool","code":-32602,"message":"MCP error -32602: Unknown tool \"nope\"`,
		`{"step":"terminate","session":null}`,
	})
	b.spread(t)
	if n := sessionKeys(t, openStore(t, srv)); n != 0 {
		t.Errorf("%d sessions in Redis after the client ended its own, want 0", n)
	}
}

// trips counts the round trips of a client: each command, or pipeline,
// it sends, but those that set up a new connection (HELLO, CLIENT), once
// per connection of the pool.
type trips struct{ n atomic.Int64 }

func (c *trips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n != "hello" && n != "client" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestSharedRoundTrips: with the Redis store, a request in a 2025
// session (a tools/call, a ping), an initialize and a DELETE each cost
// one round trip, once the scripts are loaded (the first use of each
// after Redis starts costs two: NOSCRIPT, then the script); a 2026-07-28
// request costs none, and so does a session id the door cannot have
// issued, however large.
func TestSharedRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	st := openStore(t, srv)
	counted := &trips{}
	st.Client().AddHook(counted)
	s := serve(t, "", Options{Store: st})
	cost := func(what string, want int64, f func()) {
		t.Helper()
		before := counted.n.Load()
		f()
		if n := counted.n.Load() - before; n != want {
			t.Errorf("%s cost %d round trips to Redis, want %d", what, n, want)
		}
	}
	cost("the first initialize", 2, func() { openAs(t, s.url, "Bearer a") })
	var id string
	cost("an initialize", 1, func() { id = openAs(t, s.url, "Bearer a") })
	legacyCall(t, s.url, id, "Bearer a", "ping", "") // loads the find script
	cost("a tools/call", 1, func() {
		resp, r := legacyCall(t, s.url, id, "Bearer a", "tools/call", `{"name":"ask","arguments":{"message":"hi"}}`)
		if resp.StatusCode != 200 || r.Error != nil {
			t.Errorf("tools/call = %d %+v", resp.StatusCode, r.Error)
		}
	})
	cost("a 2026-07-28 tools/call", 0, func() { modern(t, s.url, "tools/call", `"name":"ask","arguments":{"message":"hi"}`, "ask") })
	cost("the first DELETE", 2, func() { endSessionOn(t, s.url, id, "Bearer a") })
	// An id the door cannot have issued costs none: a large header is
	// never a key sent to Redis.
	huge := strings.Repeat("x", 512<<10)
	cost("a request in a made-up session", 0, func() {
		if served2025(t, s.url, huge, "Bearer a") {
			t.Error("a made-up session id served, want 404")
		}
	})
	cost("a DELETE of a made-up session", 0, func() {
		if st := endSessionOn(t, s.url, huge, "Bearer a"); st != 404 {
			t.Errorf("DELETE of a made-up session = %d, want 404", st)
		}
	})
}

// TestSharedStoreSilent: a Redis that takes connections but answers
// nothing (CLIENT PAUSE) holds a 2025 request no longer than the store's
// bounds: 503, then served again once it answers.
func TestSharedStoreSilent(t *testing.T) {
	srv := redistest.Start(t)
	s := serve(t, "", Options{Store: openStore(t, srv)})
	id := openAs(t, s.url, "Bearer a")
	admin := openStore(t, srv).Client()
	ctx := t.Context()
	// Paused for longer than the bound below: a request that waited for
	// the pause to end would be served, and fail the test.
	pause := 4 * (state.DialTimeout + state.ReadTimeout)
	if err := admin.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, r := legacyCall(t, s.url, id, "Bearer a", "tools/call", `{"name":"ask","arguments":{"message":"hi"}}`)
	took := time.Since(start)
	t.Logf("the refusal took %v", took)
	// The pause ends by itself (CLIENT UNPAUSE would wait for it too).
	for admin.Ping(ctx).Err() != nil {
		if time.Since(start) > pause+hangGuard {
			t.Fatalf("Redis still paused %v after it was paused for %v", time.Since(start), pause)
		}
	}
	if resp.StatusCode != 503 || r.Error == nil || r.Error.Message != state.Message {
		t.Errorf("tools/call with Redis silent = %d %+v, want 503 and state.Message", resp.StatusCode, r.Error)
	}
	// Two attempts of the 2 s read bound, and the retry's backoff: well
	// under the pause, and the hang guard.
	if took > 3*(state.DialTimeout+state.ReadTimeout) {
		t.Errorf("tools/call with Redis silent took %v, want the store's bounds", took)
	}
	if !served2025(t, s.url, id, "Bearer a") {
		t.Error("the session after Redis answered again: not served, want served")
	}
}

// TestSharedConcurrentOpens: replicas opening sessions at once, for one
// owner and for many, never take Redis past the cap nor leave its count
// off what it holds: each open is one script, none interleaves.
func TestSharedConcurrentOpens(t *testing.T) {
	srv := redistest.Start(t)
	rs := replicas(t, srv, "limits: {mcp_sessions: 10}\n", 3)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 20 {
				auth := "Bearer shared"
				if g%2 == 1 {
					auth = fmt.Sprintf("Bearer own-%d-%d", g, i)
				}
				req, _ := http.NewRequest(http.MethodPost, rs[(g+i)%3].url, strings.NewReader(
					`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", auth)
				resp, err := testClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("initialize = %d, want 200", resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	st := openStore(t, srv)
	ctx := t.Context()
	count, _ := st.Client().Get(ctx, "p:mcp:count").Int()
	owners, _ := st.Client().ZRangeWithScores(ctx, "p:mcp:holders", 0, -1).Result()
	held := 0
	for _, o := range owners {
		n, _ := st.Client().ZCard(ctx, "p:mcp:holder:"+o.Member.(string)).Result()
		if float64(n) != o.Score {
			t.Errorf("owner %s holds %d sessions, its count says %v", o.Member, n, o.Score)
		}
		held += int(n)
	}
	if n := sessionKeys(t, st); n != 10 || count != 10 || held != 10 {
		t.Errorf("after 120 concurrent initialize: %d sessions, count %d, owners' zsets %d; want the cap, 10, in each", n, count, held)
	}
}

// TestSharedEvictionCost: at a cap held by many owners of one session
// each, a new owner's initialize forgets the one idle longest of them in a
// few commands inside Redis, not one per owner: one replica's open never
// stalls the Redis every replica waits on.
func TestSharedEvictionCost(t *testing.T) {
	srv := redistest.Start(t)
	st := openStore(t, srv)
	ctx := t.Context()
	s := newShared(st, 1000)
	var first session
	for i := range 1000 {
		o := core.Owner{byte(i), byte(i >> 8)}
		ss, err := s.open(ctx, version20251125, o, core.Holder(o), 0)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = ss
		}
	}
	if _, ok, _ := s.find(ctx, first.id, first.owner); !ok { // now the most recently used
		t.Fatal("the first session not found")
	}
	if err := st.Client().ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.open(ctx, version20251125, core.Owner{'n', 'e', 'w'}, core.Holder{'n', 'e', 'w'}, 0); err != nil {
		t.Fatal(err)
	}
	stats, err := st.Client().Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, line := range strings.Split(stats, "\n") {
		if _, rest, ok := strings.Cut(line, ":calls="); ok && !strings.HasPrefix(line, "cmdstat_info:") {
			n, _, _ := strings.Cut(rest, ",")
			var c int
			fmt.Sscan(n, &c)
			calls += c
		}
	}
	if calls > 40 {
		t.Errorf("an open at a cap of 1000 owners ran %d commands in Redis, want a few (not one per owner):\n%s", calls, stats)
	}
	if _, ok, _ := s.find(ctx, first.id, first.owner); !ok || sessionKeys(t, st) != 1000 {
		t.Error("the new owner's open forgot the session used last, or the cap moved; want the one idle longest forgotten")
	}
}

// TestSharedSpans: each round trip to Redis a request costs is a CLIENT
// span, the child of its call's SERVER span.
func TestSharedSpans(t *testing.T) {
	srv := redistest.Start(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	s := serveMap(t, testMap, startAgent(t), Options{Store: openStore(t, srv)},
		func(p *proxy.Server) { p.Tracer = tp.Tracer("test") })
	id := openAs(t, s.url, "Bearer a")
	legacyCall(t, s.url, id, "Bearer a", "tools/call", `{"name":"ask","arguments":{"message":"hi"}}`)
	calls := map[trace.SpanID]string{}
	var redisSpans []sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		switch {
		case sp.SpanKind() == trace.SpanKindServer:
			calls[sp.SpanContext().SpanID()] = sp.Name()
		case sp.Name() == "redis hello" || sp.Name() == "redis client":
			// a new connection's handshake, under the round trip that dialed it
		case strings.HasPrefix(sp.Name(), "redis "):
			redisSpans = append(redisSpans, sp)
		}
	}
	if len(calls) != 2 || len(redisSpans) < 2 {
		t.Fatalf("%d call spans, %d redis spans; want 2 calls, each with its round trips", len(calls), len(redisSpans))
	}
	under := map[trace.SpanID]int{}
	for _, sp := range redisSpans {
		if _, ok := calls[sp.Parent().SpanID()]; !ok || sp.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %s: parent %s, kind %s; want a CLIENT child of a call's span", sp.Name(), sp.Parent().SpanID(), sp.SpanKind())
		}
		under[sp.Parent().SpanID()]++
	}
	if len(under) != 2 {
		t.Errorf("redis spans under %d calls, want under both (initialize, tools/call)", len(under))
	}
}

// TestSharedCancel: with the Redis store, notifications/cancelled for a
// tools/call reaches the replica serving it whichever replica it lands
// on: the agent's request ends and the call writes no response; from
// another session it ends nothing there, and under another Authorization
// it is 404. A call waiting for its slot (concurrency 1) is cancelled
// too; cancels reach a replica in the order they were sent, so once that
// one ended, the cancel from another session sent before it was heard.
func TestSharedCancel(t *testing.T) {
	srv := redistest.Start(t)
	agent, started, ended := cancelAgent(t)
	a := serveMap(t, cancelMap, agent, Options{Store: openStore(t, srv)})
	b := serveMap(t, cancelMap, agent, Options{Store: openStore(t, srv)})
	mine, other := initialize(t, a.url, version20251125), initialize(t, b.url, version20251125)
	type answer struct {
		status int
		body   []byte
	}
	callOnA := func(id string) chan answer {
		done := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, a.url, strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"p"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", mine)
			resp, err := testClient.Do(req)
			if err != nil {
				done <- answer{0, []byte(err.Error())}
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			done <- answer{resp.StatusCode, body}
		}()
		return done
	}
	held := func(id string) *exchange {
		a.door.inflight.mu.Lock()
		defer a.door.inflight.mu.Unlock()
		return a.door.inflight.calls[callKey{mine, id}]
	}
	wait := func(what string, done chan answer) answer {
		t.Helper()
		select {
		case ans := <-done:
			return ans
		case <-time.After(hangGuard):
			t.Fatalf("%s: the HTTP response never ended", what)
		}
		return answer{}
	}
	running := callOnA("7")
	select {
	case <-started:
	case <-time.After(hangGuard):
		t.Fatal("the agent never got the call")
	}
	queued := callOnA("8")
	for deadline := time.Now().Add(hangGuard); held("8") == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second call was never held")
		}
	}
	cancel := func(session, auth, id string) int {
		resp, _ := post(t, b.url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":"enough"}}`,
			"Mcp-Session-Id", session, "Authorization", auth)
		return resp.StatusCode
	}
	if got := cancel(other, "", "7"); got != 202 {
		t.Fatalf("cancel of 7 from another session on replica b = %d, want 202", got)
	}
	if got := cancel(mine, "Bearer other", "7"); got != 404 {
		t.Fatalf("cancel of 7 under another Authorization on replica b = %d, want 404", got)
	}
	if got := cancel(mine, "", "8"); got != 202 {
		t.Fatalf("cancel of the waiting call on replica b = %d, want 202", got)
	}
	if ans := wait("the cancelled waiting call", queued); ans.status != 202 || len(ans.body) != 0 {
		t.Errorf("the cancelled waiting call = %d %q, want 202 and no body", ans.status, ans.body)
	}
	if held("7") == nil || held("7").cancelled.Load() {
		t.Fatal("the running call was ended by a cancel from another session, or is no longer held")
	}
	if got := cancel(mine, "", "7"); got != 202 {
		t.Fatalf("cancel of 7 in the session on replica b = %d, want 202", got)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's request did not end within 10s of the cancel sent to the other replica")
	}
	if ans := wait("the cancelled call", running); ans.status != 200 || len(events(t, ans.body)) != 1 || events(t, ans.body)[0].Method != "notifications/progress" {
		t.Errorf("the cancelled call = %d %q, want its progress and no response", ans.status, ans.body)
	}
}

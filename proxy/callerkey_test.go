package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/redistest"
	"github.com/sidecar-dev/sidecar/proxy/openai"
	"github.com/sidecar-dev/sidecar/quota"
	"github.com/sidecar-dev/sidecar/state"
)

// serveDoor serves door on h's Server, on a listener of its own.
func serveDoor(t *testing.T, h *harness, door Door) string {
	t.Helper()
	srv := httptest.NewServer(h.server.HandlerFor(door))
	t.Cleanup(srv.Close)
	return srv.URL
}

// openaiDoor is the OpenAI door of h's map calling query, with api_key
// key ("": none).
func openaiDoor(t *testing.T, h *harness, key string) *openai.Door {
	t.Helper()
	d, err := openai.New(h.server.Config, openai.Options{Method: "query", APIKey: key, KeySet: key != ""})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sendFrom sends method url with Authorization authorization (none when
// ""), from the loopback address from ("": the default), and returns its
// status (0, the test failed, when it could not be sent: it may run on
// a goroutine of the test's).
func sendFrom(t *testing.T, from, method, url, body, authorization string) int {
	t.Helper()
	client := http.DefaultClient
	if from != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		tr := &http.Transport{DialContext: d.DialContext}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Error(err)
		return 0
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestPerCallerKeyIsVerified: on doors that verify no token, the caller
// does not choose its bucket: distinct junk Authorization values from
// one address share the address's (the 4th call of 3 a minute is 429),
// and the spellings of the OpenAI door's key share the key's.
func TestPerCallerKeyIsVerified(t *testing.T) {
	var agent headersAgent
	h := newHarness(t, agent.start(t).URL, "upstream: {url: AGENT}\nmethods: {query: {}}\nlimits: {per_caller: {requests: 3, per: 1m}}\n",
		withServer(func(s *Server) { s.Quota = quota.New(s.Config.Limits.PerCaller, nil) }))
	for i := range 4 {
		want := 200
		if i == 3 {
			want = 429
		}
		if got := sendFrom(t, "", http.MethodPost, h.url+"/api/reasoning_engine", queryCall, "x"+strconv.Itoa(i)); got != want {
			t.Errorf("call %d from one address with Authorization x%d: %d, want %d", i+1, i, got, want)
		}
	}

	url := serveDoor(t, h, openaiDoor(t, h, "sk-test"))
	for i, a := range []string{"Bearer sk-test", "bearer sk-test", "BEARER sk-test", "Bearer  sk-test"} {
		want := 200
		if i == 3 {
			want = 429
		}
		if got := sendFrom(t, "127.0.0.2", http.MethodGet, url+openai.RouteModels, "", a); got != want {
			t.Errorf("GET /v1/models with %q: %d, want %d", a, got, want)
		}
	}
}

// TestRefusedWriteNothing: requests the door refuses (a junk api_key,
// 401) create no per-caller key in Redis; on a door that checks nothing,
// one address with many distinct Authorization values creates one.
func TestRefusedWriteNothing(t *testing.T) {
	srv := redistest.Start(t)
	st := config.State{Store: config.StoreRedis, Redis: config.RedisState{URL: srv.URL(), KeyPrefix: "p", TaskTTL: config.DefaultTaskTTL, Lease: config.DefaultLease}}
	store, err := state.Open(st, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var agent headersAgent
	h := newHarness(t, agent.start(t).URL, "upstream: {url: AGENT}\nmethods: {query: {}}\nlimits: {per_caller: {requests: 1000, per: 1m}}\n",
		withServer(func(s *Server) { s.Quota = quota.New(s.Config.Limits.PerCaller, quota.Redis{Store: store}) }))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys := func() int64 {
		n, err := store.Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	url := serveDoor(t, h, openaiDoor(t, h, "sk-test"))
	before := keys()
	for i := range 50 {
		if got := sendFrom(t, "", http.MethodGet, url+openai.RouteModels, "", "Bearer junk"+strconv.Itoa(i)); got != 401 {
			t.Fatalf("a junk key: %d, want 401", got)
		}
	}
	if after := keys(); after != before {
		t.Errorf("50 requests refused 401: Redis went from %d keys to %d, want none created", before, after)
	}

	before = keys()
	for i := range 20 {
		if got := sendFrom(t, "", http.MethodPost, h.url+"/api/reasoning_engine", queryCall, "x"+strconv.Itoa(i)); got != 200 {
			t.Fatalf("call %d: %d, want 200", i+1, got)
		}
	}
	if after := keys(); after != before+1 {
		t.Errorf("20 calls from one address, each its own Authorization: Redis went from %d keys to %d, want one created", before, after)
	}
}

package agentcore

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

var _ proxy.Door = (*Door)(nil)

// serve serves an AgentCore door for method on a listener of its own, in
// front of the test agent.
func serve(t *testing.T, s *doortest.Sidecar, method string) string {
	t.Helper()
	m := s.Config.Lookup(method, false)
	if m == nil || m.Name != method {
		m = s.Config.Lookup(method, true)
	}
	return s.Serve(t, newDoor(t, Options{Method: method, Stream: m.Mode.Streaming(), InFlight: s.InFlight}))
}

func post(t *testing.T, url, body string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+RouteInvocations, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUnary: any JSON payload is the method's input; the output comes
// back as JSON, no {"output"} wrapper.
func TestUnary(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	url := serve(t, s, "query")
	for _, payload := range []string{`{"prompt": "hi"}`, `"just text"`, `[1, 2]`, `42`} {
		resp := post(t, url, payload, "Accept", "application/json")
		body := readAll(t, resp)
		want := `{"got":` + compactJSON(t, payload) + `}`
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || body != want {
			t.Errorf("POST %s = %d %s %q, want 200 application/json %q", payload, resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
		}
	}
}

func compactJSON(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestStream: a streaming method answers text/event-stream, one data
// event per record, each flushed as it comes, and no end marker; a
// failure after the first byte is a final error event.
func TestStream(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	resp := post(t, serve(t, s, "stream_query"), `{"prompt":"hi"}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream = %d %s, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := doortest.NewSSE(t, resp.Body).All()
	resp.Body.Close()
	if want := []string{`{"i":1}`, `{"i":2,"s":"a\nb"}`, `{"i":3}`}; strings.Join(events, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", events, want)
	}

	// Flushed per record: the first event arrives while the agent holds the rest.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, serve(t, s, "hold_stream")+RouteInvocations, strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sse := doortest.NewSSE(t, resp.Body)
	if e := doortest.Promptly(t, cancel, sse.Next); e != `{"n":1}` {
		t.Errorf("held stream's first event = %q", e)
	}
	waitHeld(t, agent, 1)
	close(agent.Release)
	if e := doortest.Promptly(t, cancel, sse.Next); e != `{"held":true}` {
		t.Errorf("held stream's event = %q", e)
	}
	if e := sse.Next(); e != "" {
		t.Errorf("after the last record, %q; want the end", e)
	}
	resp.Body.Close()

	resp = post(t, serve(t, s, "cut"), `{}`)
	events = doortest.NewSSE(t, resp.Body).All()
	resp.Body.Close()
	if len(events) != 2 || events[0] != `{"i":1}` {
		t.Fatalf("cut stream events %q, want the record and an error event", events)
	}
	var e map[string]string
	if err := json.Unmarshal([]byte(events[1]), &e); err != nil || len(e) != 3 || e["error"] == "" ||
		e["error_type"] != "AGENT_DISCONNECTED" || e["message"] != "An error occurred during streaming" {
		t.Errorf("final event %s, want error, error_type AGENT_DISCONNECTED and the SDK's message", events[1])
	}
}

func waitHeld(t *testing.T, a *doortest.Agent, n int32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); a.Held.Load() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls held by the agent, want %d", a.Held.Load(), n)
		}
	}
}

// TestErrors: failures before the first byte are their status with
// {"error": …}; a payload that is no JSON is the SDK's 400.
func TestErrors(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "limits: {request_bytes: 100}\n")
	url := serve(t, s, "query")
	tests := []struct {
		body   string
		status int
		check  func(map[string]any) bool
	}{
		{`{"prompt":`, 400, func(m map[string]any) bool { return m["error"] == "Invalid JSON" && m["details"] != "" && len(m) == 2 }},
		{``, 400, func(m map[string]any) bool { return m["error"] == "Invalid JSON" }},
		{"\"\xff\"", 400, func(m map[string]any) bool { return m["error"] == "Invalid encoding" }},
		{`"` + strings.Repeat("x", 200) + `"`, 413, func(m map[string]any) bool { s, _ := m["error"].(string); return s != "" && len(m) == 1 }},
	}
	for _, tt := range tests {
		resp := post(t, url, tt.body)
		body := readAll(t, resp)
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil || resp.StatusCode != tt.status || !tt.check(m) {
			t.Errorf("POST %q = %d %s, want %d", tt.body, resp.StatusCode, body, tt.status)
		}
	}
	for _, tt := range []struct {
		method, path string
		status       int
	}{{http.MethodGet, RouteInvocations, 405}, {http.MethodPost, "/nope", 404}, {http.MethodPost, RoutePing, 405}} {
		req, _ := http.NewRequest(tt.method, url+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != tt.status || !strings.HasPrefix(body, `{"error":`) {
			t.Errorf("%s %s = %d %s, want %d {\"error\": …}", tt.method, tt.path, resp.StatusCode, body, tt.status)
		}
	}
	// Drain: a 503 with Retry-After, in the door's shape.
	s.Drain()
	resp := post(t, url, `{}`)
	if body := readAll(t, resp); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.HasPrefix(body, `{"error":`) {
		t.Errorf("a call while draining = %d %s", resp.StatusCode, body)
	}
}

// TestHeaders: the runtime's session, request, user and trace headers and
// its custom ones reach the agent; others do not.
func TestHeaders(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	url := serve(t, s, "query")
	sent := map[string]string{
		"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id":  strings.Repeat("s", 33),
		"X-Amzn-Bedrock-AgentCore-Runtime-Request-Id":  "req-1",
		"X-Amzn-Bedrock-AgentCore-Runtime-User-Id":     "user-1",
		"X-Amzn-Bedrock-AgentCore-Runtime-Custom-Team": "pricing",
		"X-Amzn-Trace-Id": "Root=1-5759e988-bd862e3fe1be46a994272793",
		"Traceparent":     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"Tracestate":      "a=b",
		"Baggage":         "k=v",
	}
	var header []string
	for k, v := range sent {
		header = append(header, k, v)
	}
	header = append(header, "X-Amz-Date", "20260101T000000Z", "Authorization", "Bearer secret")
	readAll(t, post(t, url, `{}`, header...))
	got := agent.Header()
	for k, v := range sent {
		if got.Get(k) != v {
			t.Errorf("the agent got %s = %q, want %q", k, got.Get(k), v)
		}
	}
	for _, k := range []string{"X-Amz-Date", "Authorization"} {
		if got.Get(k) != "" {
			t.Errorf("the agent got %s", k)
		}
	}
}

type ping struct {
	Status string `json:"status"`
	Stamp  *int64 `json:"time_of_last_update"`
}

func getPing(t *testing.T, url string) ping {
	t.Helper()
	resp, err := http.Get(url + RoutePing)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	var p ping
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || resp.StatusCode != 200 || p.Stamp == nil || (p.Status != "Healthy" && p.Status != "HealthyBusy") {
		t.Fatalf("GET /ping = %d %s (%v), want 200 {status, time_of_last_update}", resp.StatusCode, body, err)
	}
	return p
}

// TestPing: Healthy while idle, HealthyBusy while any call is in flight on
// any door, and time_of_last_update moves only when the status changes:
// polled over and over in one state, it stays.
func TestPing(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	d := newDoor(t, Options{Method: "query", InFlight: s.InFlight})
	var mu sync.Mutex
	clock := time.Unix(1_700_000_000, 0)
	d.ping.now = func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Second); return clock }
	url := s.Serve(t, d)
	other := serve(t, s, "hold") // a second door of the same sidecar

	idle := getPing(t, url)
	for range 5 {
		if p := getPing(t, url); p.Status != "Healthy" || *p.Stamp != *idle.Stamp {
			t.Fatalf("idle ping %s %d, want Healthy %d (unchanged)", p.Status, *p.Stamp, *idle.Stamp)
		}
	}

	const calls = 4
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() { readAll(t, post(t, other, `{}`)) })
	}
	waitHeld(t, agent, calls)
	busy := getPing(t, url)
	if busy.Status != "HealthyBusy" || *busy.Stamp <= *idle.Stamp {
		t.Fatalf("ping with %d calls in flight = %s %d, want HealthyBusy stamped after %d", calls, busy.Status, *busy.Stamp, *idle.Stamp)
	}
	var polls sync.WaitGroup
	for range 4 {
		polls.Go(func() {
			for range 5 {
				if p := getPing(t, url); p.Status != "HealthyBusy" || *p.Stamp != *busy.Stamp {
					t.Errorf("busy ping %s %d, want HealthyBusy %d (unchanged)", p.Status, *p.Stamp, *busy.Stamp)
				}
			}
		})
	}
	polls.Wait()
	close(agent.Release)
	wg.Wait()
	for deadline := time.Now().Add(5 * time.Second); s.InFlight() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("calls still in flight")
		}
	}
	back := getPing(t, url)
	if back.Status != "Healthy" || *back.Stamp <= *busy.Stamp {
		t.Errorf("ping after the calls = %s %d, want Healthy stamped after %d", back.Status, *back.Stamp, *busy.Stamp)
	}
	if p := getPing(t, url); *p.Stamp != *back.Stamp {
		t.Errorf("idle again: stamp moved %d -> %d", *back.Stamp, *p.Stamp)
	}
}

// newDoor is New's door of opts.
func newDoor(t testing.TB, opts Options) *Door {
	t.Helper()
	d, err := New(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

package foundry

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

var _ proxy.Door = (*Door)(nil)

var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func do(t *testing.T, method, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestInvocations: the body is the method's input (a JSON body as it is,
// text as a JSON string), the output comes back as JSON; a streaming
// method's records as strict SSE; failures as {"error": {code, message}}.
func TestInvocations(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	url := s.Serve(t, newDoor(t, Options{Method: "query"}))
	for body, want := range map[string]string{
		`{"message": "hi"}`: `{"got":{"message":"hi"}}`,
		`hello "you"`:       `{"got":"hello \"you\""}`,
		``:                  `{"got":""}`,
	} {
		resp, got := do(t, http.MethodPost, url+RouteInvocations, body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || got != want {
			t.Errorf("POST %q = %d %s %q, want 200 %q", body, resp.StatusCode, resp.Header.Get("Content-Type"), got, want)
		}
	}
	resp, got := do(t, http.MethodPost, url+RouteInvocations, "\xff\xfe")
	var e struct {
		Error struct{ Code, Message string }
	}
	if json.Unmarshal([]byte(got), &e); resp.StatusCode != 400 || e.Error.Code != "BAD_REQUEST" || e.Error.Message == "" {
		t.Errorf("a body neither JSON nor text = %d %s, want 400 BAD_REQUEST", resp.StatusCode, got)
	}

	stream := s.Serve(t, newDoor(t, Options{Method: "stream_query", Stream: true}))
	req, _ := http.NewRequest(http.MethodPost, stream+RouteInvocations, strings.NewReader(`{}`))
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events := doortest.NewSSE(t, sresp.Body).All()
	sresp.Body.Close()
	if sresp.Header.Get("Content-Type") != "text/event-stream" || strings.Join(events, "|") != `{"i":1}|{"i":2,"s":"a\nb"}|{"i":3}` {
		t.Errorf("stream = %s %q", sresp.Header.Get("Content-Type"), events)
	}
	cut := s.Serve(t, newDoor(t, Options{Method: "cut", Stream: true}))
	req, _ = http.NewRequest(http.MethodPost, cut+RouteInvocations, strings.NewReader(`{}`))
	if sresp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	events = doortest.NewSSE(t, sresp.Body).All()
	sresp.Body.Close()
	if len(events) != 2 || json.Unmarshal([]byte(events[1]), &e) != nil || e.Error.Code != "AGENT_DISCONNECTED" {
		t.Errorf("cut stream = %q, want a record and an error event", events)
	}

	for _, tt := range []struct {
		method, path string
		status       int
	}{{http.MethodGet, RouteInvocations, 405}, {http.MethodGet, "/responses", 404}} {
		resp, got := do(t, tt.method, url+tt.path, "")
		if resp.StatusCode != tt.status || !strings.HasPrefix(got, `{"error":{"code":`) {
			t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, resp.StatusCode, got, tt.status)
		}
	}
}

// TestIDs: x-agent-invocation-id is echoed or a new UUID; the session id
// comes from agent_session_id, else $FOUNDRY_AGENT_SESSION_ID, else is a
// new UUID; both are on the reply, failures' too, and reach the agent.
func TestIDs(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	url := s.Serve(t, newDoor(t, Options{Method: "query"}))
	withEnv := s.Serve(t, newDoor(t, Options{Method: "query", Session: "env-session"}))

	resp, _ := do(t, http.MethodPost, url+RouteInvocations+"?agent_session_id=q-session", `{}`,
		HeaderInvocationID, "inv-1", "X-Agent-User-Id", "user-1", "X-Agent-Foundry-Call-Id", "call-1", "Authorization", "Bearer x")
	if resp.Header.Get(HeaderInvocationID) != "inv-1" || resp.Header.Get(HeaderSessionID) != "q-session" {
		t.Errorf("reply ids %q %q, want inv-1 q-session", resp.Header.Get(HeaderInvocationID), resp.Header.Get(HeaderSessionID))
	}
	h := agent.Header()
	for name, want := range map[string]string{HeaderInvocationID: "inv-1", HeaderSessionID: "q-session", "X-Agent-User-Id": "user-1",
		"X-Agent-Foundry-Call-Id": "call-1", "Authorization": ""} {
		if h.Get(name) != want {
			t.Errorf("the agent got %s = %q, want %q", name, h.Get(name), want)
		}
	}

	resp, _ = do(t, http.MethodPost, withEnv+RouteInvocations+"?agent_session_id=q2", `{}`)
	if resp.Header.Get(HeaderSessionID) != "q2" {
		t.Errorf("the query parameter loses to the environment: %q", resp.Header.Get(HeaderSessionID))
	}
	resp, _ = do(t, http.MethodPost, withEnv+RouteInvocations, `{}`)
	if resp.Header.Get(HeaderSessionID) != "env-session" || !uuid.MatchString(resp.Header.Get(HeaderInvocationID)) {
		t.Errorf("ids %q %q, want a UUID and env-session", resp.Header.Get(HeaderInvocationID), resp.Header.Get(HeaderSessionID))
	}
	r1, _ := do(t, http.MethodPost, url+RouteInvocations, `{}`)
	r2, _ := do(t, http.MethodPost, url+RouteInvocations, "\xff")
	for _, r := range []*http.Response{r1, r2} {
		if !uuid.MatchString(r.Header.Get(HeaderSessionID)) || !uuid.MatchString(r.Header.Get(HeaderInvocationID)) {
			t.Errorf("%d reply's ids %q %q, want new UUIDs", r.StatusCode, r.Header.Get(HeaderInvocationID), r.Header.Get(HeaderSessionID))
		}
	}
	if r1.Header.Get(HeaderSessionID) == r2.Header.Get(HeaderSessionID) {
		t.Error("two calls got the same new session id")
	}
}

// TestReadiness: /readiness is 200 while the agent is ready, 503 while it
// is not and while the sidecar drains (new calls then get 503 too).
func TestReadiness(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	prober := &doortest.Prober{}
	s.Prober = prober
	url := s.Serve(t, newDoor(t, Options{Method: "query"}))
	if resp, body := do(t, http.MethodGet, url+RouteReadiness, ""); resp.StatusCode != 503 {
		t.Errorf("not ready: %d %s, want 503", resp.StatusCode, body)
	}
	prober.Ok.Store(true)
	if resp, body := do(t, http.MethodGet, url+RouteReadiness, ""); resp.StatusCode != 200 {
		t.Errorf("ready: %d %s, want 200", resp.StatusCode, body)
	}
	s.Drain()
	if resp, body := do(t, http.MethodGet, url+RouteReadiness, ""); resp.StatusCode != 503 {
		t.Errorf("draining: %d %s, want 503", resp.StatusCode, body)
	}
	if resp, body := do(t, http.MethodPost, url+RouteInvocations, `{}`); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, `"SHUTTING_DOWN"`) {
		t.Errorf("a call while draining: %d %s, want 503 SHUTTING_DOWN", resp.StatusCode, body)
	}
}

// TestBadSessionID: an agent_session_id that is no header value (CR, LF,
// NUL, DEL, other control characters) is not used: the session id is
// $FOUNDRY_AGENT_SESSION_ID, else a new UUID, on the reply and to the
// agent, and the call goes on.
func TestBadSessionID(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	url := s.Serve(t, newDoor(t, Options{Method: "query"}))
	withEnv := s.Serve(t, newDoor(t, Options{Method: "query", Session: "env-session"}))
	for _, bad := range []string{"a%0D%0AX-Injected:%201", "a%0Ab", "a%0Db", "a%00b", "a%7Fb", "a%1Bb", "%0D%0A"} {
		for _, base := range []string{url, withEnv} {
			resp, body := do(t, http.MethodPost, base+RouteInvocations+"?agent_session_id="+bad, `{}`)
			got, sent := resp.Header.Get(HeaderSessionID), agent.Header().Get(HeaderSessionID)
			want := got
			if base == withEnv {
				want = "env-session"
			}
			if resp.StatusCode != 200 || got != want || sent != got || (base == url && !uuid.MatchString(got)) ||
				resp.Header.Get("X-Injected") != "" || agent.Header().Get("X-Injected") != "" {
				t.Errorf("agent_session_id=%s: %d %s, session %q on the reply and %q to the agent, want %q and a 200",
					bad, resp.StatusCode, body, got, sent, map[bool]string{true: "a new UUID", false: "env-session"}[base == url])
			}
		}
	}
}

// newDoor is New's door of opts.
func newDoor(t *testing.T, opts Options) *Door {
	t.Helper()
	d, err := New(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

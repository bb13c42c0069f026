package devapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// through is the passthrough URL path of the container path p ("/…").
func through(p string) string {
	return "/reasoningEngines/v1/projects/my-project/locations/us-central1/reasoningEngines/123/api" + p
}

// TestPassthroughStreams: a POST through the passthrough reaches the
// contract's /api/stream_reasoning_engine, and each ndjson line reaches
// the caller while the agent still holds the next one.
func TestPassthroughStreams(t *testing.T) {
	st := newStack(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := post(t, ctx, st.dev+through("/api/stream_reasoning_engine"),
		`{"class_method": "stream", "input": {"lines": 2, "hold": true}}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.Contains(first, `"n":0`) {
		t.Fatalf("first line %q, %v", first, err)
	}
	// Only now does the agent write the second.
	if code, _, b := postRead(t, st.agent+"/release", `{}`); code != 200 {
		t.Fatalf("release: %d %s", code, b)
	}
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), `"n":1`) {
		t.Errorf("after the release %q, %v", rest, err)
	}
}

// TestPassthroughGet: a GET of a door-like path (the contract's
// /healthz) and a unary POST through the passthrough answer as the
// contract listener does, the query kept; "…/api" alone is the
// container's "/".
func TestPassthroughGet(t *testing.T) {
	st := newStack(t, Options{})
	for _, p := range []string{"/healthz", "/healthz?x=1", "", "/"} {
		code, _, body := send(t, http.MethodGet, st.dev, through(p), "", nil, "")
		_, _, direct := send(t, http.MethodGet, st.contract, "/healthz", "", nil, "")
		if code != 200 || body != direct {
			t.Errorf("GET %s: %d %q, want 200 %q", p, code, body, direct)
		}
	}
	code, _, body := postRead(t, st.dev+through("/api/reasoning_engine"), `{"class_method": "echo", "input": {"n": 12345678901234567890}}`)
	// The body goes on as it is: no Struct's doubles, no REST envelope.
	if code != 200 || !strings.Contains(body, `"n":12345678901234567890`) || !strings.HasPrefix(body, `{"output":`) {
		t.Errorf("POST /api/reasoning_engine: %d %s", code, body)
	}
	// The dev listener's own page may POST: the contract's door, whose
	// own page is another origin, never sees the page's Origin.
	code, _, body = send(t, http.MethodPost, st.dev, through("/api/reasoning_engine"), "",
		map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:" + devPort(st.dev)},
		`{"class_method": "echo", "input": {}}`)
	if code != 200 || !strings.HasPrefix(body, `{"output":`) {
		t.Errorf("POST from the dev page: %d %s", code, body)
	}
}

// recorder is a stand-in contract listener that answers every request
// with what it got (method, path, raw path, query, headers) and counts.
type recorder struct {
	mu   sync.Mutex
	seen []*http.Request
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.seen = append(rc.seen, r)
	rc.mu.Unlock()
	w.Header().Set("Set-Cookie", "sid=agent")
	w.Header().Set("X-Frame-Options", "SAMEORIGIN")
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "path": r.URL.Path, "raw": r.URL.RawPath,
		"query": r.URL.RawQuery, "host": r.Host, "header": r.Header})
}

func (rc *recorder) calls() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

// recordedDev is a dev listener in front of a recorder.
func recordedDev(t *testing.T) (string, *recorder) {
	t.Helper()
	rc := &recorder{}
	contract := httptest.NewServer(rc)
	dev := httptest.NewServer(New(newStackConfig(t), contract.URL, Options{}))
	t.Cleanup(func() { dev.Close(); contract.Close() })
	return dev.URL, rc
}

// TestPassthroughRequest: any verb and any body type go on to "/{path}"
// with the query and the end-to-end headers; Cookie, the hop-by-hop
// headers and the dev listener's own page's Origin do not; the
// contract's Set-Cookie does not come back, and the dev listener's
// security headers win over the contract's.
func TestPassthroughRequest(t *testing.T) {
	dev, _ := recordedDev(t)
	code, h, body := send(t, http.MethodPut, dev, through("/a2a/app/x%2Fy?q=1&r=%2F"), "", map[string]string{
		"Content-Type": "text/plain", "Cookie": "session=browser", "X-Custom": "kept", "Authorization": "Bearer t",
		"Connection": "X-Hop", "X-Hop": "dropped", "Origin": "http://127.0.0.1:" + devPort(dev),
	}, "plain body")
	var got struct {
		Method, Path, Raw, Query, Host string
		Header                         http.Header
	}
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if got.Method != "PUT" || got.Path != "/a2a/app/x/y" || got.Raw != "/a2a/app/x%2Fy" || got.Query != "q=1&r=%2F" ||
		!strings.HasPrefix(got.Host, "127.0.0.1:") {
		t.Errorf("reached %s %s (raw %s) ?%s Host %s", got.Method, got.Path, got.Raw, got.Query, got.Host)
	}
	for k, want := range map[string]string{"X-Custom": "kept", "Authorization": "Bearer t", "Content-Type": "text/plain",
		"Cookie": "", "X-Hop": "", "Origin": ""} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("the contract got %s %q, want %q", k, v, want)
		}
	}
	if h.Get("Set-Cookie") != "" || len(h.Values("X-Frame-Options")) != 1 || h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("answer's Set-Cookie %q, X-Frame-Options %q", h.Values("Set-Cookie"), h.Values("X-Frame-Options"))
	}
}

// TestPassthroughShapes: a passthrough URL of another shape is the dev
// listener's own 404 in the REST error shape, never the contract's.
func TestPassthroughShapes(t *testing.T) {
	dev, rc := recordedDev(t)
	for _, p := range []string{
		"/reasoningEngines/v2/projects/p/locations/l/reasoningEngines/1/api/healthz",
		"/reasoningEngines/v1/projects//locations/l/reasoningEngines/1/api/healthz",
		"/reasoningEngines/v1/projects/p/locations//reasoningEngines/1/api/healthz",
		"/reasoningEngines/v1/projects/p/regions/l/reasoningEngines/1/api/healthz",
		"/reasoningEngines/v1/projects/p/locations/l/reasoningEngines//api/healthz",
		"/reasoningEngines/v1/projects/p/locations/l/reasoningEngines/1/apis/healthz",
		"/reasoningEngines/v1/projects/p/locations/l/reasoningEngines/1",
		"/reasoningEngines/v1/projects/p/locations/l/api/healthz",
	} {
		code, _, body := send(t, http.MethodGet, dev, p, "", nil, "")
		if code != 404 || !strings.Contains(body, `"status":"NOT_FOUND"`) || !strings.Contains(body, `"code":404`) {
			t.Errorf("GET %s: %d %s, want 404 NOT_FOUND", p, code, body)
		}
	}
	if n := rc.calls(); n != 0 {
		t.Errorf("the contract listener got %d calls", n)
	}
}

// TestPassthroughGuard: the dev listener's Host and Origin rules hold on
// the passthrough before the contract is called; a body of any type is
// served (the door behind holds its own type rules).
func TestPassthroughGuard(t *testing.T) {
	dev, rc := recordedDev(t)
	port := devPort(dev)
	for _, tt := range []struct {
		name, method, host string
		header             map[string]string
		want               int
	}{
		{"rebinding Host", http.MethodGet, "evil.example:" + port, nil, 403},
		{"rebinding Host, POST", http.MethodPost, "evil.example:" + port, jsonType, 403},
		{"foreign Origin", http.MethodPost, "", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403},
		{"foreign loopback Origin", http.MethodDelete, "", map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
		{"own Origin, text/plain", http.MethodPost, "", map[string]string{"Origin": "http://127.0.0.1:" + port, "Content-Type": "text/plain"}, 200},
		{"no Origin, a form", http.MethodPost, "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 200},
	} {
		before := rc.calls()
		code, _, body := send(t, tt.method, dev, through("/mcp"), tt.host, tt.header, "x=1")
		if code != tt.want {
			t.Errorf("%s: %d %s, want %d", tt.name, code, body, tt.want)
		}
		if called := rc.calls() > before; called != (tt.want == 200) {
			t.Errorf("%s: the contract listener called: %v", tt.name, called)
		}
		if tt.want == 403 && !strings.Contains(body, `"status":"PERMISSION_DENIED"`) {
			t.Errorf("%s: %s", tt.name, body)
		}
	}
}

// TestPassthroughDotSegments: a {path} with a . or .. segment, plain or
// escaped, is refused before the contract is called.
func TestPassthroughDotSegments(t *testing.T) {
	dev, rc := recordedDev(t)
	for _, p := range []string{"/..", "/../admin", "/a/../../x", "/./healthz", "/%2e%2e/x", "/a/%2E/b", "/a%2F..%2Fb", "/a\\..\\b"} {
		code, _, body := send(t, http.MethodGet, dev, through(p), "", nil, "")
		if code != 400 || !strings.Contains(body, `"status":"INVALID_ARGUMENT"`) {
			t.Errorf("GET %s: %d %s, want 400 INVALID_ARGUMENT", p, code, body)
		}
	}
	if n := rc.calls(); n != 0 {
		t.Errorf("the contract listener got %d calls", n)
	}
	// Dots inside a segment are a name, not a dot segment.
	if code, _, body := send(t, http.MethodGet, dev, through("/a2a/app/.well-known/agent-card.json"), "", nil, ""); code != 200 ||
		!strings.Contains(body, `"path":"/a2a/app/.well-known/agent-card.json"`) {
		t.Errorf(".well-known: %d %s", code, body)
	}
}

// TestPassthroughClientLeaves: a caller that leaves mid-stream ends the
// call on the contract listener (its request's context ends).
func TestPassthroughClientLeaves(t *testing.T) {
	ended := make(chan struct{})
	var once sync.Once
	st := newStackWrapped(t, startAgent(t), Options{}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/stream_reasoning_engine" {
				go func() { <-r.Context().Done(); once.Do(func() { close(ended) }) }()
			}
			h.ServeHTTP(w, r)
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := post(t, ctx, st.dev+through("/api/stream_reasoning_engine"),
		`{"class_method": "stream", "input": {"lines": 2, "hold": true}}`)
	defer resp.Body.Close()
	if first, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(first, `"n":0`) {
		t.Fatalf("first line %q, %v", first, err)
	}
	cancel() // the agent still holds the second line
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the contract listener's call still running 20s after the caller left")
	}
}

// TestPassthroughMountListed: doors.json gives a mounted door its
// passthrough path on the dev listener, and that path reaches the
// mount on the contract listener; a door on a listener of its own has
// none.
func TestPassthroughMountListed(t *testing.T) {
	st := newStack(t, Options{Doors: []Door{
		{Protocol: "agent_platform", URL: "http://127.0.0.1:8080", Mount: "/"},
		{Protocol: "agentcore", URL: "http://127.0.0.1:8090"},
	}})
	_, _, body := get(t, st.dev+"/playground/doors.json")
	var list struct {
		Doors []struct{ Protocol, Passthrough string }
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Doors) != 2 {
		t.Fatalf("doors.json %s: %v", body, err)
	}
	mounted, own := list.Doors[0].Passthrough, list.Doors[1].Passthrough
	if !strings.HasPrefix(mounted, "/reasoningEngines/v1/projects/local/locations/us-central1/reasoningEngines/local/api/") || own != "" {
		t.Fatalf("passthrough paths %q (mounted at /), %q (own listener)", mounted, own)
	}
	code, _, got := send(t, http.MethodGet, st.dev, mounted+"healthz", "", nil, "")
	_, _, direct := send(t, http.MethodGet, st.contract, "/healthz", "", nil, "")
	if code != 200 || got != direct {
		t.Errorf("GET %shealthz: %d %q, want 200 %q", mounted, code, got, direct)
	}
	if p := PassthroughPath("/a2a"); p != "/reasoningEngines/v1/projects/local/locations/us-central1/reasoningEngines/local/api/a2a" {
		t.Errorf("PassthroughPath(/a2a) = %q", p)
	}
}

// TestPassthroughUnavailable: an unreachable contract listener is 503
// UNAVAILABLE in the REST shape.
func TestPassthroughUnavailable(t *testing.T) {
	dev := httptest.NewServer(New(newStackConfig(t), "http://127.0.0.1:9", Options{}))
	defer dev.Close()
	code, _, body := send(t, http.MethodGet, dev.URL, through("/healthz"), "", nil, "")
	if code != 503 || !strings.Contains(body, `"status":"UNAVAILABLE"`) {
		t.Errorf("%d %s, want 503 UNAVAILABLE", code, body)
	}
}

// TestPassthroughSSE: a door's SSE (text/event-stream, as A2A's and
// MCP's streams) reaches the caller event by event: the first event
// arrives while the contract listener still holds the second.
func TestPassthroughSSE(t *testing.T) {
	next := make(chan struct{})
	contract := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
			io.WriteString(w, "data: two\n\n")
		case <-r.Context().Done():
		}
	}))
	defer contract.Close()
	dev := httptest.NewServer(New(newStackConfig(t), contract.URL, Options{}))
	defer dev.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := post(t, ctx, dev.URL+through("/a2a"), `{}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if first, err := br.ReadString('\n'); err != nil || first != "data: one\n" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("first event %q, %v (%s)", first, err, resp.Header.Get("Content-Type"))
	}
	close(next) // only now does the contract write the second
	if rest, err := io.ReadAll(br); err != nil || string(rest) != "\ndata: two\n\n" {
		t.Errorf("after the first %q, %v", rest, err)
	}
}

// TestPassthroughBackToBack: calls sent back to back on one keep-alive
// connection, each answered by the contract listener as soon as it has
// read the body, all arrive whole. The transport reads a body past its
// Content-Length after the answer may be over, when net/http has closed
// the caller's body: the failed read closed the connection to the
// contract listener under the next call, whose answer was cut (about
// one call in a thousand, exactBody).
func TestPassthroughBackToBack(t *testing.T) {
	contract := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintf(w, "{\"got\":%d}\n", len(b))
		http.NewResponseController(w).Flush()
		io.WriteString(w, "{\"end\":true}\n")
	}))
	defer contract.Close()
	dev := httptest.NewServer(New(newStackConfig(t), contract.URL, Options{}))
	defer dev.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(dev.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(conn)
	const calls, body = 5000, `{"class_method":"q","input":{}}`
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		through("/api/stream_reasoning_engine"), strings.TrimPrefix(dev.URL, "http://"), len(body), body)
	want := fmt.Sprintf("{\"got\":%d}\n{\"end\":true}\n", len(body))
	for i := range calls {
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(got) != want {
			t.Fatalf("call %d of %d: %d %q, %v; want 200 %q", i+1, calls, resp.StatusCode, got, err, want)
		}
	}
}

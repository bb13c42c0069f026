package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/testports"
)

// adkSidecar starts a sidecar with the ADK preset in front of url.
func adkSidecar(t *testing.T, url string) string {
	t.Helper()
	return startSidecar(t, "upstream: {url: "+url+", ready: {path: /list-apps}}\npreset: adk\nadk: {app: weather}\n")
}

// testUnknownApp: a sidecar for an app the server at url does not have is
// not ready, /healthz names the app and the server's apps, and calls get
// 503 instead of 200 and an error line.
func testUnknownApp(t *testing.T, url string) {
	base := startSidecar(t, "upstream: {url: "+url+", ready: {path: /list-apps, wait: 300ms}}\npreset: adk\nadk: {app: nosuch}\n")
	deadline := time.Now().Add(10 * time.Second)
	var code int
	var body string
	for {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code, body = resp.StatusCode, string(b)
		if strings.Contains(body, "nosuch") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 503 || !strings.Contains(body, `ADK app \"nosuch\" not found`) || !strings.Contains(body, `\"weather\"`) {
		t.Errorf("/healthz = %d %s, want 503 naming the app nosuch and the server's weather", code, body)
	}
	if r := unaryCall(t, base, "create_session", `{"user_id":"u"}`); r.status != 503 {
		t.Errorf("create_session = %d %s %q, want 503", r.status, r.output, r.detail)
	}
	if r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"stream_query","input":{"user_id":"u","message":"x"}}`); r.status != 503 {
		t.Errorf("stream_query = %d %s, want 503, not a stream", r.status, r.body)
	}
}

// TestADKPython runs every AdkApp method through the sidecar against the
// stand-in for the Python ADK api server (bare-array sessions, 200 null on
// delete, float-second timestamps, {"detail"} errors, the string-
// interpolated /run_sse error event).
func TestADKPython(t *testing.T) {
	url := startPythonADK(t, "ADK_SSE_DELAY_MS=20")
	base := adkSidecar(t, url)
	testADK(t, base, adkServer{seedEvents: true})
	t.Run("an app the server lacks", func(t *testing.T) { testUnknownApp(t, url) })

	t.Run("interpolated error event", func(t *testing.T) {
		lines := streamCall(t, base, "stream_query", `{"user_id":"u9","message":"explode"}`)
		last := lines[len(lines)-1]
		if len(lines) < 2 || !strings.HasPrefix(last, `{"error":{"code":500,"message":`) || !strings.Contains(last, `"reason":"AGENT_ERROR"`) || !strings.Contains(last, `Model said`) {
			t.Errorf("lines = %q, want events then one agent_error line", lines)
		}
	})
	t.Run("memory without a memory service", func(t *testing.T) {
		r := sessionToMemory(t, base, "create_session")
		if r.status != 400 || !strings.Contains(r.detail, "memory service") {
			t.Errorf("add_session_to_memory = %d %q, want 400 naming the memory service", r.status, r.detail)
		}
	})
}

// TestADKTypeScript runs every AdkApp method through the sidecar against
// the real TypeScript ADK api server (@google/adk-devtools 2.0.0) and an
// offline model whose agent calls a tool. `make deps` installs the npm
// packages into .cache/adk (testdata/adk/install.sh).
func TestADKTypeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the TypeScript ADK api server")
	}
	deps.NPM(t, "adk")
	url := startADKTypeScript(t)
	base := adkSidecar(t, url)
	testADK(t, base, adkServer{seedEvents: false})
	t.Run("an app the server lacks", func(t *testing.T) { testUnknownApp(t, url) })
	t.Run("its stream mapped to text", func(t *testing.T) { testADKDialect(t, url) })
	t.Run("questions answered through the contract", func(t *testing.T) { testADKQuestions(t, url) })
	t.Run("questions answered through A2A", func(t *testing.T) { testADKQuestionsA2A(t, url) })
	t.Run("parts both ways", func(t *testing.T) { testADKParts(t, url) })

	t.Run("memory on a server without memory routes", func(t *testing.T) {
		r := sessionToMemory(t, base, "create_session")
		if r.status != 400 || !strings.Contains(r.detail, "does not serve PATCH /apps/{app}/users/{user}/memory") || strings.Contains(r.detail, "<") {
			t.Errorf("add_session_to_memory = %d %q, want 400 naming the missing route, no HTML", r.status, r.detail)
		}
	})
}

// startADKTypeScript starts the TypeScript ADK api server and waits
// until it lists the weather app; a port taken before it bound it is
// retried on another.
func startADKTypeScript(t *testing.T) string {
	t.Helper()
	for try := 1; ; try++ {
		port := agentPort(t)
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		// SIGINT: the server cleans its temp dirs on it.
		p := startProcess(t, syscall.SIGINT, nil, nil, "bash", "../../testdata/adk/start.sh", fmt.Sprint(port))
		deadline := time.Now().Add(time.Minute) // it lists the app after ~2.3 s, idle
		for {
			resp, err := http.Get(url + "/list-apps")
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if strings.Contains(string(b), `"weather"`) {
					return url
				}
			}
			select {
			case <-p.done:
				if out := p.output.String(); try == 5 || !testports.InUse(out) {
					t.Fatalf("the ADK api server exited: %s", out)
				}
			default:
				if time.Now().After(deadline) {
					t.Fatalf("the ADK api server did not list the weather app: %s", p.output.String())
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			break
		}
	}
}

// testADKDialect: the ADK api server's own /run_sse stream, called as a
// plain method with dialect auto and emit text, is placed as the adk
// dialect and mapped to text lines: the tool call, its result, the
// streamed answer once (its partial events, not the complete event that
// repeats them), the end.
func testADKDialect(t *testing.T, url string) {
	base := startSidecar(t, "upstream: {url: "+url+", ready: {path: /list-apps}}\nmethods:\n"+
		"  new_session: {call: POST /apps/weather/users/u1/sessions, body: {}}\n"+
		"  ask: {mode: stream, call: POST /run_sse, dialect: auto, emit: text, body: {appName: weather, userId: u1, "+
		"sessionId: \"{input.session_id}\", streaming: true, newMessage: {role: user, parts: [{text: \"{input.message}\"}]}}}\n")
	s := unaryCall(t, base, "new_session", `{}`)
	var sess struct{ ID string }
	if json.Unmarshal(s.output, &sess); s.status != 200 || sess.ID == "" {
		t.Fatalf("new_session = %d %s %q", s.status, s.output, s.detail)
	}
	got := streamCall(t, base, "ask", `{"session_id":"`+sess.ID+`","message":"Paris"}`)
	var text strings.Builder
	var rest []string
	for _, l := range got {
		var line struct{ Text *string }
		if json.Unmarshal([]byte(l), &line); line.Text != nil && strings.HasPrefix(l, `{"text":`) {
			text.WriteString(*line.Text)
			continue
		}
		rest = append(rest, l)
	}
	wantRest := []string{`{"tool_call":{"id":`, `{"tool_result":{"id":`, `{"end":`}
	ok := len(rest) == len(wantRest)
	for i := 0; ok && i < len(rest); i++ {
		ok = strings.HasPrefix(rest[i], wantRest[i]) && strings.Contains(rest[i], "get_weather") == (i < 2)
	}
	if text.String() != "The weather in Paris is sunny." || !ok {
		t.Errorf("ask = %q,\nwant a get_weather call and result, the text once, the end", got)
	}
}

// TestADKPythonMemory: with a memory service, a session goes to memory.
func TestADKPythonMemory(t *testing.T) {
	url := startPythonADK(t, "ADK_MEMORY=1")
	base := adkSidecar(t, url)
	if r := sessionToMemory(t, base, "async_create_session"); r.status != 200 || string(r.output) != "null" {
		t.Errorf("add_session_to_memory = %d %s %q, want 200 null", r.status, r.output, r.detail)
	}
}

// startPythonADK starts the stand-in for the Python ADK api server on a
// free port, with env added to its environment, and returns its URL.
func startPythonADK(t *testing.T, env ...string) string {
	t.Helper()
	return startServerOnPort(t, env, "python3", "../../testdata/adkpy/server.py").url
}

// adkServer says what an ADK api server can do.
type adkServer struct {
	seedEvents bool // POST …/sessions takes events
}

type unaryResult struct {
	status int
	output json.RawMessage
	detail string
}

func unaryCall(t *testing.T, base, method, input string) unaryResult {
	t.Helper()
	r := post(t, base+"/api/reasoning_engine", `{"class_method":"`+method+`","input":`+input+`}`)
	var body struct {
		Output json.RawMessage `json:"output"`
		Detail string          `json:"detail"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("%s reply %q: %v", method, r.body, err)
	}
	return unaryResult{r.status, body.Output, body.Detail}
}

// sessionToMemory creates a session for user m1 with create (the sync or
// async method) and adds it to memory: async_add_session_to_memory's reply.
func sessionToMemory(t *testing.T, base, create string) unaryResult {
	t.Helper()
	s := unaryCall(t, base, create, `{"user_id":"m1"}`)
	var sess map[string]any
	json.Unmarshal(s.output, &sess)
	in, _ := json.Marshal(map[string]any{"session": sess})
	return unaryCall(t, base, "async_add_session_to_memory", string(in))
}

func streamCall(t *testing.T, base, method, input string) []string {
	t.Helper()
	r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"`+method+`","input":`+input+`}`)
	if r.status != 200 {
		t.Fatalf("%s = %d %s", method, r.status, r.body)
	}
	if !strings.HasSuffix(r.body, "\n") {
		t.Fatalf("%s: torn last line in %q", method, r.body)
	}
	lines := strings.Split(strings.TrimSuffix(r.body, "\n"), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("%s: invalid line %q", method, l)
		}
	}
	return lines
}

type event struct {
	ID      string `json:"id"`
	Author  string `json:"author"`
	Partial bool   `json:"partial"`
	Content struct {
		Parts []map[string]json.RawMessage `json:"parts"`
	} `json:"content"`
}

// kinds lists what each event carries: call, response, text, partial.
func kinds(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		var e event
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.ID == "" {
			t.Fatalf("line %q is not an ADK event", l)
		}
		k := "?"
		for _, p := range e.Content.Parts {
			switch {
			case p["functionCall"] != nil || p["function_call"] != nil:
				k = "call"
			case p["functionResponse"] != nil || p["function_response"] != nil:
				k = "response"
			case p["text"] != nil:
				k = "text"
			}
		}
		if e.Partial {
			k = "partial"
		}
		out = append(out, k)
	}
	return out
}

func sessionIDs(t *testing.T, base, user string) []string {
	t.Helper()
	r := unaryCall(t, base, "list_sessions", `{"user_id":"`+user+`"}`)
	var out struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	if r.status != 200 || json.Unmarshal(r.output, &out) != nil || out.Sessions == nil {
		t.Fatalf("list_sessions = %d %s %q, want {\"sessions\": [...]}", r.status, r.output, r.detail)
	}
	var ids []string
	for _, s := range out.Sessions {
		ids = append(ids, s.ID)
	}
	return ids
}

// testADK exercises the 13 methods against whatever ADK api server is
// behind base.
func testADK(t *testing.T, base string, srv adkServer) {
	t.Run("sessions", func(t *testing.T) {
		for _, prefix := range []string{"", "async_"} {
			user := "u-" + prefix + "sessions"
			r := unaryCall(t, base, prefix+"create_session", `{"user_id":"`+user+`","state":{"city":"Paris","n":42}}`)
			var s struct {
				ID    string         `json:"id"`
				State map[string]any `json:"state"`
			}
			if r.status != 200 || json.Unmarshal(r.output, &s) != nil || s.ID == "" {
				t.Fatalf("%screate_session = %d %s %q", prefix, r.status, r.output, r.detail)
			}
			if s.State["city"] != "Paris" || s.State["n"] != float64(42) {
				t.Errorf("%screate_session state lost: %s", prefix, r.output)
			}
			chosen := unaryCall(t, base, prefix+"create_session", `{"user_id":"`+user+`","session_id":"chosen-1"}`)
			if !strings.Contains(string(chosen.output), `"chosen-1"`) {
				t.Errorf("%screate_session with session_id = %d %s %q", prefix, chosen.status, chosen.output, chosen.detail)
			}
			if dup := unaryCall(t, base, prefix+"create_session", `{"user_id":"`+user+`","session_id":"chosen-1"}`); dup.status < 400 || dup.status > 499 {
				t.Errorf("duplicate session id = %d %q, want a 4xx", dup.status, dup.detail)
			}
			got := unaryCall(t, base, prefix+"get_session", `{"user_id":"`+user+`","session_id":"`+s.ID+`"}`)
			if got.status != 200 || !strings.Contains(string(got.output), s.ID) {
				t.Errorf("%sget_session = %d %s", prefix, got.status, got.output)
			}
			missing := unaryCall(t, base, prefix+"get_session", `{"user_id":"`+user+`","session_id":"nope"}`)
			if missing.status != 404 || missing.detail != "Session not found. Please create it using .create_session()" {
				t.Errorf("%sget_session of a missing session = %d %q", prefix, missing.status, missing.detail)
			}
			if ids := sessionIDs(t, base, user); len(ids) != 2 {
				t.Errorf("list_sessions = %v, want 2 sessions", ids)
			}
			if r := unaryCall(t, base, prefix+"list_sessions", `{"user_id":"nobody-`+prefix+`"}`); string(r.output) != `{"sessions":[]}` {
				t.Errorf("%slist_sessions of a new user = %s, want {\"sessions\":[]}", prefix, r.output)
			}
			del := unaryCall(t, base, prefix+"delete_session", `{"user_id":"`+user+`","session_id":"chosen-1"}`)
			if del.status != 200 || string(del.output) != "null" {
				t.Errorf("%sdelete_session = %d %s %q, want 200 null", prefix, del.status, del.output, del.detail)
			}
			if ids := sessionIDs(t, base, user); len(ids) != 1 {
				t.Errorf("list_sessions after delete = %v, want 1 session", ids)
			}
			if r := unaryCall(t, base, prefix+"get_session", `{"user_id":"`+user+`"}`); r.status != 400 || !strings.Contains(r.detail, "session_id") {
				t.Errorf("get_session without session_id = %d %q, want 400 naming it", r.status, r.detail)
			}
		}
	})
	t.Run("a caller's session id changes nothing for others", func(t *testing.T) {
		// Python's server trims the id to "x": that must not change how the
		// next caller's chosen id is sent.
		unaryCall(t, base, "create_session", `{"user_id":"u-space","session_id":" x","state":{"a":1}}`)
		r := unaryCall(t, base, "create_session", `{"user_id":"u-flat","session_id":"flat-1","state":{"city":"Paris"}}`)
		got := unaryCall(t, base, "get_session", `{"user_id":"u-flat","session_id":"flat-1"}`)
		for _, s := range []unaryResult{r, got} {
			var sess struct {
				ID    string          `json:"id"`
				State json.RawMessage `json:"state"`
			}
			if s.status != 200 || json.Unmarshal(s.output, &sess) != nil || sess.ID != "flat-1" || string(sess.State) != `{"city":"Paris"}` {
				t.Errorf("session flat-1 = %d %s %q, want id flat-1 and state {\"city\":\"Paris\"}", s.status, s.output, s.detail)
			}
		}
		if ids := sessionIDs(t, base, "sidecar-readiness-probe"); len(ids) != 0 {
			t.Errorf("the readiness probe's session was left behind: %v", ids)
		}
	})
	t.Run("stream_query", func(t *testing.T) {
		user := "u-stream"
		before := len(sessionIDs(t, base, user))
		lines := streamCall(t, base, "stream_query", `{"user_id":"`+user+`","message":"Paris"}`)
		if got := strings.Join(kinds(t, lines), " "); got != "call response text" {
			t.Errorf("stream_query events = %s, want call response text", got)
		}
		if !strings.Contains(lines[len(lines)-1], "The weather in Paris is sunny.") {
			t.Errorf("last event = %s", lines[len(lines)-1])
		}
		if after := len(sessionIDs(t, base, user)); after != before+1 {
			t.Errorf("stream_query without session_id made %d sessions, want 1", after-before)
		}
		s := unaryCall(t, base, "create_session", `{"user_id":"`+user+`","session_id":"s-content"}`)
		if s.status != 200 {
			t.Fatalf("create_session = %d %q", s.status, s.detail)
		}
		content := `{"user_id":"` + user + `","session_id":"s-content","message":{"role":"user","parts":[{"text":"Oslo"}]},"run_config":{"streaming_mode":"SSE"}}`
		lines = streamCall(t, base, "async_stream_query", content)
		got := strings.Join(kinds(t, lines), " ")
		if !strings.HasPrefix(got, "call response partial") || !strings.HasSuffix(got, "partial text") {
			t.Errorf("streaming async_stream_query events = %s, want partial events before the final text", got)
		}
		sess := unaryCall(t, base, "get_session", `{"user_id":"`+user+`","session_id":"s-content"}`)
		if !strings.Contains(string(sess.output), "Oslo") {
			t.Errorf("the run did not land in the named session: %s", sess.output)
		}
		if r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"stream_query","input":{"user_id":"`+user+`","session_id":"nope","message":"x"}}`); r.status != 404 || !strings.Contains(r.body, "Session not found") {
			t.Errorf("stream_query with a missing session = %d %s, want 404 before the stream", r.status, r.body)
		}
		if r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"stream_query","input":{"user_id":"`+user+`"}}`); r.status != 400 || !strings.Contains(r.body, "input.message") {
			t.Errorf("stream_query without message = %d %s, want 400", r.status, r.body)
		}
	})
	t.Run("session_events", func(t *testing.T) {
		user := "u-seed"
		seed := `[{"id":"seed-1","invocationId":"e-seed","author":"user","content":{"role":"user","parts":[{"text":"remember me"}]},"actions":{},"timestamp":1}]`
		if !srv.seedEvents {
			r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"async_stream_query","input":{"user_id":"`+user+`","message":"Rome","session_events":`+seed+`}}`)
			if r.status != 400 || !strings.Contains(r.body, "session_events cannot seed") {
				t.Errorf("session_events on a server that drops them = %d %s, want 400 naming it", r.status, r.body)
			}
			req, _ := json.Marshal(map[string]any{"message": "Rome", "user_id": user, "events": json.RawMessage(seed)})
			in, _ := json.Marshal(map[string]any{"request_json": string(req)})
			r = post(t, base+"/api/stream_reasoning_engine", `{"class_method":"streaming_agent_run_with_events","input":`+string(in)+`}`)
			if r.status != 400 || !strings.Contains(r.body, "request_json.events cannot seed") || strings.Contains(r.body, "session_events") {
				t.Errorf("request_json events on a server that drops them = %d %s, want 400 naming request_json.events", r.status, r.body)
			}
			if ids := sessionIDs(t, base, user); len(ids) != 0 {
				t.Errorf("the unseeded session was left behind: %v", ids)
			}
			return
		}
		lines := streamCall(t, base, "async_stream_query", `{"user_id":"`+user+`","message":"Rome","session_events":`+seed+`}`)
		if len(lines) < 3 {
			t.Fatalf("lines = %q", lines)
		}
		ids := sessionIDs(t, base, user)
		if len(ids) != 1 {
			t.Fatalf("sessions = %v, want the one seeded", ids)
		}
		sess := unaryCall(t, base, "get_session", `{"user_id":"`+user+`","session_id":"`+ids[0]+`"}`)
		if !strings.Contains(string(sess.output), "remember me") {
			t.Errorf("the seeded session lacks the seed event: %s", sess.output)
		}
		r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"async_stream_query","input":{"user_id":"`+user+`","session_id":"x","message":"m","session_events":`+seed+`}}`)
		if r.status != 400 || !strings.Contains(r.body, "session_events") {
			t.Errorf("session_events with session_id = %d %s, want 400", r.status, r.body)
		}
	})
	t.Run("streaming_agent_run_with_events", func(t *testing.T) {
		user := "u-events"
		req, _ := json.Marshal(map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Lima"}}}, "user_id": user})
		in, _ := json.Marshal(map[string]any{"request_json": string(req)})
		lines := streamCall(t, base, "streaming_agent_run_with_events", string(in))
		var sid string
		var evs []string
		for _, l := range lines {
			var rec struct {
				Events    []json.RawMessage `json:"events"`
				SessionID string            `json:"session_id"`
			}
			if json.Unmarshal([]byte(l), &rec) != nil || len(rec.Events) != 1 || rec.SessionID == "" {
				t.Fatalf("line %q is not {\"events\": [event], \"session_id\": …}", l)
			}
			sid = rec.SessionID
			evs = append(evs, string(rec.Events[0]))
		}
		if got := strings.Join(kinds(t, evs), " "); got != "call response text" {
			t.Errorf("events = %s", got)
		}
		if ids := sessionIDs(t, base, user); len(ids) != 0 {
			t.Errorf("the temporary session %s outlived its run: %v", sid, ids)
		}
		// A named session is used and kept.
		unaryCall(t, base, "create_session", `{"user_id":"`+user+`","session_id":"kept"}`)
		req, _ = json.Marshal(map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Kyiv"}}}, "user_id": user, "session_id": "kept"})
		in, _ = json.Marshal(map[string]any{"request_json": string(req)})
		lines = streamCall(t, base, "streaming_agent_run_with_events", string(in))
		if !strings.Contains(lines[0], `"session_id":"kept"`) {
			t.Errorf("line = %s, want session_id kept", lines[0])
		}
		if ids := sessionIDs(t, base, user); len(ids) != 1 {
			t.Errorf("sessions = %v, want the named one only", ids)
		}
		if r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"streaming_agent_run_with_events","input":{"request_json":"not json"}}`); r.status != 400 {
			t.Errorf("bad request_json = %d %s, want 400", r.status, r.body)
		}
	})
	t.Run("disconnect deletes the temporary session", func(t *testing.T) {
		user := "u-leave"
		req, _ := json.Marshal(map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Quito"}}}, "user_id": user})
		in, _ := json.Marshal(map[string]any{"request_json": string(req)})
		ctx, cancel := context.WithCancel(context.Background())
		hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/stream_reasoning_engine",
			strings.NewReader(`{"class_method":"streaming_agent_run_with_events","input":`+string(in)+`}`))
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		first, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.Contains(first, `"session_id"`) {
			t.Fatalf("first line %q, %v", first, err)
		}
		cancel()
		resp.Body.Close()
		deadline := time.Now().Add(5 * time.Second)
		for len(sessionIDs(t, base, user)) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the temporary session outlived the caller who left")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("memory search", func(t *testing.T) {
		r := unaryCall(t, base, "async_search_memory", `{"user_id":"u","query":"weather"}`)
		if r.status != 400 || !strings.Contains(r.detail, "memory search") {
			t.Errorf("async_search_memory = %d %q, want 400 naming what is missing", r.status, r.detail)
		}
	})
}

// TestADKSnakeKeys: with adk.keys: snake, sessions and events carry
// AdkApp's snake_case field names while user data keeps its own keys.
func TestADKSnakeKeys(t *testing.T) {
	url := startPythonADK(t)
	base := startSidecar(t, "upstream: {url: "+url+"}\npreset: adk\nadk: {app: weather, keys: snake}\n")
	s := unaryCall(t, base, "create_session", `{"user_id":"u1","session_id":"s1","state":{"favoriteCity":"Oslo"}}`)
	out := string(s.output)
	if s.status != 200 || !strings.Contains(out, `"app_name":"weather"`) || !strings.Contains(out, `"user_id":"u1"`) ||
		!strings.Contains(out, `"last_update_time"`) || !strings.Contains(out, `"favoriteCity":"Oslo"`) || strings.Contains(out, "appName") {
		t.Errorf("create_session = %d %s, want snake_case fields and the state's own keys", s.status, out)
	}
	if r := unaryCall(t, base, "list_sessions", `{"user_id":"u1"}`); !strings.Contains(string(r.output), `"sessions":[{`) || strings.Contains(string(r.output), "userId") {
		t.Errorf("list_sessions = %s", r.output)
	}
	lines := streamCall(t, base, "stream_query", `{"user_id":"u1","session_id":"s1","message":"Lima"}`)
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, `"invocation_id"`) || !strings.Contains(all, `"function_call"`) || !strings.Contains(all, `"function_response"`) ||
		strings.Contains(all, "invocationId") || !strings.Contains(all, `"city":"Lima"`) {
		t.Errorf("stream_query events = %s", all)
	}
}

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// echoAgent answers every request with what it received.
func echoAgent(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var parsed any = nil
		if len(body) > 0 {
			parsed = json.RawMessage(body)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "uri": r.RequestURI, "body": parsed,
			"class_method":  r.Header.Get("X-Sidecar-Class-Method"),
			"traceparent":   r.Header.Get("Traceparent"),
			"authorization": r.Header.Get("Authorization"),
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

const echoConfig = `
upstream: {url: AGENT}
methods:
  query: {call: POST /query}
  get_session: {call: "GET /users/{user_id}/sessions/{session_id}", body: none}
  create_session:
    call: POST /users/{user_id}/sessions
    body: {user: "{input.user_id}", count: "{input.n}", nested: {deep: "{input.a.b}"}, list: ["{input.missing}", 1], fixed: "literal", all: "{input}"}
  envelope_method: {call: POST /api/reasoning_engine, body: envelope}
  stream_query: {mode: stream, call: POST /stream}
  async_stream_query: {mode: async_stream, call: POST /stream}
`

func TestUnaryEnvelopeVariants(t *testing.T) {
	agent := echoAgent(t)
	h := newHarness(t, agent.URL, echoConfig)
	tests := []struct {
		name     string
		body     string
		wantURI  string
		wantBody string
	}{
		{"plain", `{"class_method":"query","input":{"message":"hi"}}`, "/query", `{"message":"hi"}`},
		{"double encoded", `"{\"class_method\":\"query\",\"input\":{\"message\":\"hi\"}}"`, "/query", `{"message":"hi"}`},
		{"classMethod", `{"classMethod":"query","input":{"message":"hi"}}`, "/query", `{"message":"hi"}`},
		{"route default", `{"input":{"message":"hi"}}`, "/query", `{"message":"hi"}`},
		{"null input", `{"class_method":"query","input":null}`, "/query", `{}`},
		{"missing input", `{"class_method":"query"}`, "/query", `{}`},
		{"large integers", `{"class_method":"query","input":{"n":12345678901234567890123}}`, "/query", `{"n":12345678901234567890123}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.post(core.RouteUnary, tt.body)
			if r.status != http.StatusOK {
				t.Fatalf("status = %d (%s), want 200", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var got struct {
				Output struct {
					URI         string          `json:"uri"`
					Body        json.RawMessage `json:"body"`
					ClassMethod string          `json:"class_method"`
				} `json:"output"`
			}
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatalf("reply %q: %v", r.body, err)
			}
			if got.Output.URI != tt.wantURI || string(got.Output.Body) != tt.wantBody || got.Output.ClassMethod != "query" {
				t.Errorf("agent saw (%s, %s, %s), want (%s, %s, query)", got.Output.URI, got.Output.Body, got.Output.ClassMethod, tt.wantURI, tt.wantBody)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	var calls atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer agent.Close()
	h := newHarness(t, agent.URL, echoConfig)
	tests := []struct {
		name       string
		route      string
		body       string
		wantStatus int
		wantDetail string
	}{
		{"empty", core.RouteUnary, ``, 400, "request body is empty"},
		{"truncated", core.RouteUnary, `{"class_method":`, 400, "not valid JSON"},
		{"not json", core.RouteStream, `hello`, 400, "not valid JSON"},
		{"array", core.RouteUnary, `[]`, 400, "got an array"},
		{"input string", core.RouteUnary, `{"class_method":"query","input":"x"}`, 400, "input must be a JSON object"},
		{"input array", core.RouteStream, `{"class_method":"stream_query","input":[1]}`, 400, "input must be a JSON object"},
		{"unknown unary", core.RouteUnary, `{"class_method":"nope"}`, 400,
			"User-specified method `nope` not found. Available methods are: ['query', 'get_session', 'create_session', 'envelope_method']"},
		{"unknown stream", core.RouteStream, `{"class_method":"nope"}`, 400,
			"User-specified method `nope` not found. Available methods are: ['stream_query', 'async_stream_query']"},
		{"stream method on unary route", core.RouteUnary, `{"class_method":"stream_query"}`, 400,
			"`stream_query` is a streaming method: call it with :streamQuery"},
		{"unary method on stream route", core.RouteStream, `{"class_method":"query"}`, 400,
			"`query` is a unary method: call it with :query"},
		{"stream default missing on unary", core.RouteUnary, `{"input":{}}`, 200, ""},
		{"path field missing", core.RouteUnary, `{"class_method":"get_session","input":{"user_id":"u"}}`, 400, "input.session_id: is required"},
		{"path field object", core.RouteUnary, `{"class_method":"get_session","input":{"user_id":{},"session_id":"s"}}`, 400, "input.user_id: must be a string, number or boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := calls.Load()
			r := h.post(tt.route, tt.body)
			if r.status != tt.wantStatus {
				t.Fatalf("POST %s %q status = %d (%s), want %d", tt.route, tt.body, r.status, r.body, tt.wantStatus)
			}
			if tt.wantStatus == 200 {
				return
			}
			if d := detail(t, r); !strings.Contains(d, tt.wantDetail) {
				t.Errorf("detail = %q, want it to contain %q", d, tt.wantDetail)
			}
			if calls.Load() != before {
				t.Errorf("a rejected request reached the agent")
			}
		})
	}
}

func TestRoutesAndMethods(t *testing.T) {
	agent := echoAgent(t)
	h := newHarness(t, agent.URL, echoConfig)
	tests := []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, core.RouteUnary, http.StatusMethodNotAllowed},
		{http.MethodPut, core.RouteStream, http.StatusMethodNotAllowed},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed},
		{http.MethodGet, "/metrics", http.StatusNotFound},
		{http.MethodGet, "/debug/pprof/", http.StatusNotFound},
		{http.MethodPost, "/query", http.StatusNotFound},
		{http.MethodGet, "/healthz", http.StatusOK},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, h.url+tt.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.want)
		}
		if !json.Valid(b) {
			t.Errorf("%s %s body %q is not JSON", tt.method, tt.path, b)
		}
	}
}

func TestRequestBuilding(t *testing.T) {
	agent := echoAgent(t)
	h := newHarness(t, agent.URL, echoConfig)
	type seen struct {
		Method string          `json:"method"`
		URI    string          `json:"uri"`
		Body   json.RawMessage `json:"body"`
	}
	tests := []struct {
		name, method, input string
		want                seen
	}{
		{"path fields escaped", "get_session", `{"user_id":"a/b?c#d","session_id":"..."}`,
			seen{"GET", "/users/a%2Fb%3Fc%23d/sessions/...", json.RawMessage("null")}},
		{"dots in a name stay in segment", "get_session", `{"user_id":"..a/admin","session_id":".x"}`,
			seen{"GET", "/users/..a%2Fadmin/sessions/.x", json.RawMessage("null")}},
		{"percent and controls", "get_session", `{"user_id":"%2F","session_id":"a\nb c"}`,
			seen{"GET", "/users/%252F/sessions/a%0Ab%20c", json.RawMessage("null")}},
		{"number segment keeps its text", "get_session", `{"user_id":12345678901234567890123,"session_id":true}`,
			seen{"GET", "/users/12345678901234567890123/sessions/true", json.RawMessage("null")}},
		{"template", "create_session", `{"user_id":"u1","n":12345678901234567890123,"a":{"b":[true]}}`,
			seen{"POST", "/users/u1/sessions", json.RawMessage(`{"all":{"user_id":"u1","n":12345678901234567890123,"a":{"b":[true]}},"count":12345678901234567890123,"fixed":"literal","list":[null,1],"nested":{"deep":[true]},"user":"u1"}`)}},
		{"template missing fields omitted", "create_session", `{"user_id":"u1"}`,
			seen{"POST", "/users/u1/sessions", json.RawMessage(`{"all":{"user_id":"u1"},"fixed":"literal","list":[null,1],"nested":{},"user":"u1"}`)}},
		{"envelope", "envelope_method", `{"x":1}`,
			seen{"POST", "/api/reasoning_engine", json.RawMessage(`{"class_method":"envelope_method","input":{"x":1}}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.unary(tt.method, tt.input)
			if r.status != 200 {
				t.Fatalf("status = %d (%s)", r.status, r.body)
			}
			var got struct{ Output seen }
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatal(err)
			}
			if got.Output.Method != tt.want.Method || got.Output.URI != tt.want.URI || string(got.Output.Body) != string(tt.want.Body) {
				t.Errorf("agent saw %s %s %s\nwant        %s %s %s", got.Output.Method, got.Output.URI, got.Output.Body, tt.want.Method, tt.want.URI, tt.want.Body)
			}
		})
	}
}

// TestDotSegments: a path field that is "." or "..", or holds one between
// "/", is a 400 before the agent is called: escaped as %2E (%2F) it would
// stay one segment here, but agents that decode %2E before normalising
// (node's new URL()), and proxies that decode %2F, would climb.
func TestDotSegments(t *testing.T) {
	var calls atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, echoConfig)
	for _, in := range []string{`{"user_id":"..","session_id":"s"}`, `{"user_id":"u","session_id":"."}`, `{"user_id":"x/../../admin/panel","session_id":"s"}`} {
		r := h.unary("get_session", in)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, `must not be \".\" or \"..\"`) {
			t.Errorf("get_session %s = %d %s, want 400 naming the dot segment", in, r.status, r.body)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the agent was called %d times for dot segments", n)
	}
}

func TestHeadersAllowList(t *testing.T) {
	agent := echoAgent(t)
	h := newHarness(t, agent.URL, echoConfig)
	req, _ := http.NewRequest(http.MethodPost, h.url+core.RouteUnary, strings.NewReader(`{"class_method":"query"}`))
	req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Output struct{ Traceparent, Authorization string }
	}
	json.NewDecoder(resp.Body).Decode(&got)
	if got.Output.Traceparent == "" {
		t.Errorf("traceparent did not reach the agent")
	}
	if got.Output.Authorization != "" {
		t.Errorf("Authorization reached the agent: %q", got.Output.Authorization)
	}
}

// replyAgent answers every request with the given content type and body.
func replyAgent(t *testing.T, status int, contentType, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		} else {
			w.Header()["Content-Type"] = nil // no sniffing: send none
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const oneMethodConfig = `
upstream: {url: AGENT}
methods:
  query: {call: POST /q}
  as_is: {call: POST /q, output: as_is}
  stream_query: {mode: stream, call: POST /s}
`

func TestUnaryReplies(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		status      int
		contentType string
		body        string
		wantStatus  int
		wantBody    string
	}{
		{"json object", "query", 200, "application/json", `{"a": 1}`, 200, `{"output":{"a":1}}`},
		{"json charset", "query", 200, "Application/JSON; charset=utf-8", `[1, 2]`, 200, `{"output":[1,2]}`},
		{"json string", "query", 200, "application/json", `"Paris"`, 200, `{"output":"Paris"}`},
		{"large integer", "query", 200, "application/json", `{"n":12345678901234567890123}`, 200, `{"output":{"n":12345678901234567890123}}`},
		{"text", "query", 200, "text/plain; charset=utf-8", "héllo\n", 200, `{"output":"héllo\n"}`},
		{"no content", "query", 204, "", "", 200, `{"output":null}`},
		{"empty 200", "query", 200, "application/json", "", 200, `{"output":null}`},
		{"sniffed json", "query", 200, "", `{"x":true}`, 200, `{"output":{"x":true}}`},
		{"sniffed text", "query", 200, "", `plain words`, 200, `{"output":"plain words"}`},
		{"sse collected", "query", 200, "text/event-stream", "data: {\"i\":0}\n\ndata: {\"i\":1}\n\n", 200, `{"output":[{"i":0},{"i":1}]}`},
		{"as_is", "as_is", 200, "application/json", `{"output": {"k": "v"}}`, 200, `{"output":{"k":"v"}}`},
		{"as_is null", "as_is", 200, "application/json", `{"output": null}`, 200, `{"output":null}`},
		{"as_is missing output", "as_is", 200, "application/json", `{"result": 1}`, 502, ""},
		{"invalid json", "query", 200, "application/json", `{"a":`, 502, ""},
		{"agent 404 detail", "query", 404, "application/json", `{"detail":"Session not found"}`, 404, ""},
		{"agent 500 html", "query", 500, "text/html", `<html><body><h1>Internal</h1> boom</body></html>`, 500, ""},
		{"agent redirect", "query", 302, "", ``, 502, ""},
		{"large", "query", 200, "application/json", `"` + strings.Repeat("x", 10000) + `"`, 200, `{"output":"` + strings.Repeat("x", 10000) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := replyAgent(t, tt.status, tt.contentType, tt.body)
			h := newHarness(t, agent.URL, oneMethodConfig)
			r := h.unary(tt.method, `{}`)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d (%s), want %d", r.status, r.body, tt.wantStatus)
			}
			if tt.wantBody != "" && strings.TrimSpace(r.body) != tt.wantBody {
				t.Errorf("body = %.80s, want %.80s", r.body, tt.wantBody)
			}
			// The reply goes out with its length, whatever its size.
			if cl := r.header.Get("Content-Length"); tt.wantStatus == 200 && cl != strconv.Itoa(len(r.body)) {
				t.Errorf("Content-Length = %q, want %d", cl, len(r.body))
			}
			if tt.wantStatus != 200 {
				detail(t, r)
			}
		})
	}
}

func TestAgentErrorDetail(t *testing.T) {
	tests := []struct {
		contentType, body, want string
	}{
		{"application/json", `{"detail":"Session not found"}`, "Session not found"},
		{"application/json", `{"error":"bad user"}`, "bad user"},
		{"application/json", `{"error":{"message":"quota","code":429}}`, "quota"},
		{"text/html; charset=utf-8", "<!DOCTYPE html><html><head><title>Error</title><style>p{}</style></head><body><pre>Cannot POST /q</pre></body></html>", "Error Cannot POST /q"},
		{"text/plain", "upstream exploded", "upstream exploded"},
		{"", "", "Conflict"},
	}
	for _, tt := range tests {
		agent := replyAgent(t, http.StatusConflict, tt.contentType, tt.body)
		h := newHarness(t, agent.URL, oneMethodConfig)
		for _, route := range []string{core.RouteUnary, core.RouteStream} {
			method := "query"
			if route == core.RouteStream {
				method = "stream_query"
			}
			r := h.post(route, `{"class_method":"`+method+`"}`)
			if r.status != http.StatusConflict {
				t.Fatalf("%s status = %d, want the agent's 409", route, r.status)
			}
			if d := detail(t, r); d != tt.want {
				t.Errorf("%s detail for agent body %q = %q, want %q", route, tt.body, d, tt.want)
			}
		}
	}
}

func TestStreamConversions(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		want        []string
	}{
		{"sse", "text/event-stream", "data: {\"a\": 1}\n\n: comment\nid: 7\nretry: 10\ndata: {\"a\":\ndata: 2}\n\n", []string{`{"a":1}`, `{"a":2}`}},
		{"sse charset and case", "Text/Event-Stream; charset=UTF-8", "data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\ndata: {\"never\":1}\n\n", []string{`{"a":1}`}},
		{"sse non-json data", "text/event-stream", "data: hello world\n\n", []string{`{"output":"hello world"}`}},
		{"sse error event", "text/event-stream", "data: {\"i\":0}\n\nevent: error\ndata: {\"message\":\"overloaded\"}\n\n", []string{`{"i":0}`, `{"error":{"code":500,"message":"overloaded","status":"INTERNAL","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"AGENT_ERROR","domain":"sidecar"}]}}`}},
		{"sse interpolated error", "text/event-stream", "data: {\"i\":0}\n\ndata: {\"error\": \"Invalid \"x\" here\"}\n\n", []string{`{"i":0}`, `{"error":{"code":500,"message":"{\"error\": \"Invalid \"x\" here\"}","status":"INTERNAL","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"AGENT_ERROR","domain":"sidecar"}]}}`}},
		{"ndjson", "application/x-ndjson", "{\"a\": 1}\n\n{\"b\":2}\r\n{\"c\":3}", []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}},
		{"jsonl", "application/jsonl", "1\n\"two\"\n", []string{`1`, `"two"`}},
		{"json array split", "application/json", `[{"i":0}, {"i":1}]`, []string{`{"i":0}`, `{"i":1}`}},
		{"json object", "application/json; charset=utf-8", `{"only": "one"}`, []string{`{"only":"one"}`}},
		{"text", "text/plain; charset=utf-8", "héllo", []string{`{"output":"héllo"}`}},
		{"large integer", "application/x-ndjson", "{\"n\":12345678901234567890123}\n", []string{`{"n":12345678901234567890123}`}},
		{"empty", "application/x-ndjson", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := replyAgent(t, 200, tt.contentType, tt.body)
			h := newHarness(t, agent.URL, oneMethodConfig)
			r := h.stream("stream_query", `{}`)
			if r.status != 200 {
				t.Fatalf("status = %d (%s)", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			if ce := r.header.Get("Content-Encoding"); ce != "" {
				t.Errorf("Content-Encoding = %q, want none", ce)
			}
			if r.header.Get("X-Accel-Buffering") != "no" || r.header.Get("Cache-Control") != "no-cache" {
				t.Errorf("anti-buffering headers missing: %v", r.header)
			}
			got := lines(t, r.body)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("lines = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStreamFlushesEachLine: the caller holds line 1 before the agent has
// sent line 2 (DESIGN.md lesson 1), and the request carried no Accept hint
// (lesson 2).
func TestStreamFlushesEachLine(t *testing.T) {
	for _, ct := range []string{"text/event-stream", "application/x-ndjson", "text/plain", "application/json"} {
		t.Run(ct, func(t *testing.T) {
			release := make(chan struct{})
			agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body)
				if r.Header.Get("Accept") == "text/event-stream" {
					t.Errorf("the sidecar asked for a stream with Accept")
				}
				w.Header().Set("Content-Type", ct)
				rc := http.NewResponseController(w)
				for i := range 2 {
					switch ct {
					case "text/event-stream":
						fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
					case "text/plain":
						fmt.Fprintf(w, "t%d", i)
					default:
						fmt.Fprintf(w, "{\"i\":%d}\n", i)
					}
					rc.Flush()
					if i == 0 {
						select {
						case <-release:
						case <-r.Context().Done():
							return
						}
					}
				}
			}))
			defer agent.Close()
			h := newHarness(t, agent.URL, oneMethodConfig)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			lr := h.open(ctx, core.RouteStream, `{"class_method":"stream_query"}`)
			first := lr.nextPrompt(t) // line 1 arrives while the agent is still holding line 2
			close(release)
			second := lr.nextPrompt(t)
			want0, want1 := `{"i":0}`, `{"i":1}`
			if ct == "text/plain" {
				want0, want1 = `{"output":"t0"}`, `{"output":"t1"}`
			}
			if first != want0 || second != want1 {
				t.Errorf("lines = %q, %q, want %q, %q", first, second, want0, want1)
			}
		})
	}
}

// TestStreamOutlivesWriteTimeout: a server WriteTimeout is an absolute
// deadline; each call clears it (DESIGN.md lesson 3).
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		rc := http.NewResponseController(w)
		for i := range 8 {
			fmt.Fprintf(w, "{\"i\":%d}\n", i)
			rc.Flush()
			time.Sleep(100 * time.Millisecond)
		}
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, oneMethodConfig, withWriteTimeout(300*time.Millisecond))
	r := h.stream("stream_query", `{}`)
	if got := lines(t, r.body); len(got) != 8 {
		t.Fatalf("got %d lines (%q), want 8 across 800ms with a 300ms write timeout", len(got), got)
	}
	slow := h.unary("query", `{}`) // the same agent, collected: 800ms > 300ms
	if slow.status != 200 {
		t.Fatalf("slow unary status = %d (%s)", slow.status, slow.body)
	}
}

func TestStreamErrorsAfterFirstByte(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		config   string
		wantCode string
	}{
		{"agent dies mid-line", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":0}\n{\"i\": ")
			http.NewResponseController(w).Flush()
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}, oneMethodConfig, "agent_disconnected"},
		{"idle timeout", func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":0}\n")
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}, strings.Replace(oneMethodConfig, "mode: stream, call: POST /s", "mode: stream, call: POST /s, timeouts: {idle: 200ms}", 1), "timeout"},
		{"record too large", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":0}\n\""+strings.Repeat("x", 4096)+"\"\n{\"i\":2}\n")
		}, "limits: {record_bytes: 1024}\n" + oneMethodConfig, "record_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := httptest.NewServer(tt.handler)
			defer agent.Close()
			h := newHarness(t, agent.URL, tt.config)
			r := h.stream("stream_query", `{}`)
			got := lines(t, r.body)
			if len(got) != 2 || got[0] != `{"i":0}` {
				t.Fatalf("lines = %q, want the first record and one error line", got)
			}
			if e := parseErrorLine(t, got[1]); e.reason != strings.ToUpper(tt.wantCode) || e.message == "" {
				t.Errorf("final line = %s, want an error with reason %q", got[1], strings.ToUpper(tt.wantCode))
			}
		})
	}
}

func TestErrorsBeforeFirstByte(t *testing.T) {
	// A port with nothing listening.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()

	// A handler must read the body before net/http can see the client go.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		<-r.Context().Done()
	}))
	defer hang.Close()

	tests := []struct {
		name       string
		agent      string
		config     string
		wantStatus int
		wantDetail string
	}{
		{"unreachable", dead, "timeouts: {connect: 300ms}\n" + oneMethodConfig, 502, "agent unreachable"},
		{"first byte timeout", hang.URL, "timeouts: {first_byte: 200ms}\n" + oneMethodConfig, 504, "no response within 200ms"},
		{"total timeout", hang.URL, "timeouts: {total: 200ms}\n" + oneMethodConfig, 504, "total time limit of 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.agent, tt.config)
			for _, route := range []string{core.RouteUnary, core.RouteStream} {
				r := h.post(route, `{}`)
				if r.status != tt.wantStatus {
					t.Fatalf("%s status = %d (%s), want %d", route, r.status, r.body, tt.wantStatus)
				}
				if d := detail(t, r); !strings.Contains(d, tt.wantDetail) {
					t.Errorf("%s detail = %q, want it to contain %q", route, d, tt.wantDetail)
				}
			}
		})
	}
}

func TestRetriesOnlyBeforeTheAgent(t *testing.T) {
	t.Run("refused then listening", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		h := newHarness(t, "http://"+addr, oneMethodConfig)
		go func() {
			time.Sleep(300 * time.Millisecond)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"late":true}`)
			})}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
		}()
		r := h.unary("query", `{}`)
		if r.status != 200 || !strings.Contains(r.body, `"late":true`) {
			t.Fatalf("status = %d (%s), want the late agent's answer", r.status, r.body)
		}
	})
	t.Run("5xx is not retried", func(t *testing.T) {
		var calls atomic.Int32
		agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"detail":"model overloaded"}`)
		}))
		defer agent.Close()
		h := newHarness(t, agent.URL, oneMethodConfig)
		r := h.unary("query", `{}`)
		if r.status != 503 || detail(t, r) != "model overloaded" {
			t.Errorf("reply = %d %s, want the agent's 503 and message", r.status, r.body)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("agent called %d times, want 1", n)
		}
	})
	t.Run("reset after the request is not retried", func(t *testing.T) {
		var calls atomic.Int32
		agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			io.ReadAll(r.Body)
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}))
		defer agent.Close()
		h := newHarness(t, agent.URL, oneMethodConfig)
		r := h.unary("query", `{}`)
		if r.status != 502 {
			t.Errorf("status = %d (%s), want 502", r.status, r.body)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("agent called %d times, want 1: a request that reached it must not be retried", n)
		}
	})
}

func TestUnixSocketUpstream(t *testing.T) {
	dir, err := os.MkdirTemp("", "sc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"path\":%q}\n\n", r.URL.Path)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	h := newHarness(t, "unix://"+sock, oneMethodConfig)
	r := h.stream("stream_query", `{}`)
	if got := lines(t, r.body); len(got) != 1 || got[0] != `{"path":"/s"}` {
		t.Errorf("lines = %q, want the agent's one record", got)
	}
}

func TestHealthz(t *testing.T) {
	var up atomic.Bool
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"status":"ok"}`)
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, `
upstream: {url: AGENT, ready: {path: /health, interval: 20ms}}
methods: {query: {}}
`, withProber(100*time.Millisecond))
	get := func() (int, string) {
		resp, err := http.Get(h.url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor := func(want int) string {
		deadline := time.Now().Add(5 * time.Second)
		for {
			code, body := get()
			if code == want {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("/healthz = %d %s, want %d", code, body, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	body := waitFor(503)
	if !strings.Contains(body, `"agent":"not_ready"`) {
		t.Errorf("/healthz body = %s", body)
	}
	r := h.unary("query", `{}`)
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Errorf("call while not ready = %d (Retry-After %q), want 503 with Retry-After", r.status, r.header.Get("Retry-After"))
	}
	up.Store(true)
	if body := waitFor(200); !strings.Contains(body, `"agent":"ready"`) {
		t.Errorf("/healthz body = %s", body)
	}
	if r := h.unary("query", `{}`); r.status != 200 {
		t.Errorf("call when ready = %d %s", r.status, r.body)
	}
	up.Store(false)
	waitFor(503)
	h.server.Drain()
	up.Store(true)
	if body := waitFor(503); !strings.Contains(body, "draining") {
		t.Errorf("/healthz while draining = %s", body)
	}
	if r := h.unary("query", `{}`); r.status != 503 || r.header.Get("Retry-After") == "" || !strings.Contains(detail(t, r), "shutting down") {
		t.Errorf("a new call while draining = %d %s, want 503 shutting down with Retry-After", r.status, r.body)
	}
}

func TestCallLog(t *testing.T) {
	agent := replyAgent(t, 200, "text/event-stream", "data: {\"secret\":\"do-not-log\"}\n\ndata: {\"i\":1}\n\n")
	h := newHarness(t, agent.URL, oneMethodConfig)
	req, _ := http.NewRequest(http.MethodPost, h.url+core.RouteStream, strings.NewReader(`{"class_method":"stream_query","input":{"password":"hunter2"}}`))
	req.Header.Set("X-Request-Id", "req-42")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	deadline := time.Now().Add(2 * time.Second)
	for h.logs.FilterMessage("call").Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	entries := h.logs.FilterMessage("call").All()
	if len(entries) != 1 {
		t.Fatalf("got %d call log lines, want 1", len(entries))
	}
	f := entries[0].ContextMap()
	want := map[string]any{"class_method": "stream_query", "route": core.RouteStream, "status": int64(200),
		"reply": "sse", "records": int64(2), "outcome": "ok", "request_id": "req-42"}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("log field %s = %v (%T), want %v", k, f[k], f[k], v)
		}
	}
	if _, ok := f["duration"]; !ok {
		t.Errorf("log has no duration: %v", f)
	}
	if b, _ := f["bytes"].(int64); b == 0 {
		t.Errorf("log bytes = %v, want > 0", f["bytes"])
	}
	line := fmt.Sprint(f)
	if strings.Contains(line, "do-not-log") || strings.Contains(line, "hunter2") {
		t.Errorf("the log line carries a body: %s", line)
	}
}

func TestRequestTooLarge(t *testing.T) {
	var calls atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer agent.Close()
	h := newHarness(t, agent.URL, "limits: {request_bytes: 1KiB}\n"+oneMethodConfig)
	big := `{"class_method":"query","input":{"x":"` + strings.Repeat("a", 2048) + `"}}`
	for _, route := range []string{core.RouteUnary, core.RouteStream} {
		r := h.post(route, big)
		if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(detail(t, r), "1024 bytes") {
			t.Errorf("%s with a 2 KiB body = %d %s, want 413 naming the limit", route, r.status, r.body)
		}
	}
	if r := h.unary("query", `{"x":"small"}`); r.status != 200 {
		t.Errorf("a small body after the large ones = %d %s", r.status, r.body)
	}
	if calls.Load() != 1 {
		t.Errorf("agent called %d times, want 1 (only the small body)", calls.Load())
	}
}

// TestEndCalls: when the drain budget runs out, a stream in flight ends
// with one shutting_down line, a call still waiting for the agent gets a
// 503, and the agent's requests are cancelled.
func TestEndCalls(t *testing.T) {
	cancelled := make(chan string, 2)
	unaryArrived := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if r.URL.Path == "/q" {
			close(unaryArrived)
		}
		if r.URL.Path == "/s" {
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":0}\n")
			http.NewResponseController(w).Flush()
		}
		<-r.Context().Done()
		cancelled <- r.URL.Path
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, oneMethodConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lr := h.open(ctx, core.RouteStream, `{"class_method":"stream_query"}`)
	if got := lr.nextPrompt(t); got != `{"i":0}` {
		t.Fatalf("first line = %q", got)
	}
	unary := make(chan reply, 1)
	go func() {
		resp, err := http.Post(h.url+core.RouteUnary, "application/json", strings.NewReader(`{}`))
		if err != nil {
			unary <- reply{}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		unary <- reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}()
	<-unaryArrived
	h.server.EndCalls()
	last := lr.next(t)
	if e := parseErrorLine(t, last); e.code != 503 || e.status != "UNAVAILABLE" || e.reason != "SHUTTING_DOWN" {
		t.Errorf("last stream line = %q, want a shutting_down error", last)
	}
	if _, err := lr.r.ReadString('\n'); err != io.EOF {
		t.Errorf("stream went on after the error line: %v", err)
	}
	u := <-unary
	if u.status != http.StatusServiceUnavailable || u.header.Get("Retry-After") == "" || !strings.Contains(detail(t, u), "shutting down") {
		t.Errorf("unary in flight = %d %s, want 503 with Retry-After", u.status, u.body)
	}
	for range 2 {
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("the agent's requests were not cancelled")
		}
	}
}

// TestPassthrough: "*" serves every name the map does not list, on both
// routes when it has no mode, at POST /{class_method} by default.
func TestPassthrough(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintf(w, "{\"path\":%q,\"body\":%s}\n", r.URL.Path, body)
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, `
upstream: {url: AGENT}
methods:
  query: {call: POST /listed}
  "*": {}
`)
	if r := h.unary("my_tool", `{"a":1}`); r.status != 200 || strings.TrimSpace(r.body) != `{"output":[{"path":"/my_tool","body":{"a":1}}]}` {
		t.Errorf("unary passthrough = %d %s", r.status, r.body)
	}
	if r := h.stream("my_stream", `{"b":2}`); r.status != 200 || r.body != "{\"path\":\"/my_stream\",\"body\":{\"b\":2}}\n" {
		t.Errorf("stream passthrough = %d %q", r.status, r.body)
	}
	if r := h.unary("query", `{}`); !strings.Contains(r.body, `"path":"/listed"`) {
		t.Errorf("a listed method went through \"*\": %s", r.body)
	}

	streamOnly := newHarness(t, agent.URL, `
upstream: {url: AGENT}
methods:
  query: {}
  "*": {mode: async_stream}
`)
	if r := streamOnly.unary("my_tool", `{}`); r.status != 400 || !strings.Contains(detail(t, r), "Available methods are: ['query']") {
		t.Errorf("unary call of a stream-only \"*\" = %d %s, want 400", r.status, r.body)
	}
	if r := streamOnly.stream("my_tool", `{}`); r.status != 200 {
		t.Errorf("stream call through a stream-only \"*\" = %d %s", r.status, r.body)
	}
}

// heldCore is a log core whose "call" lines wait until release is closed.
type heldCore struct {
	zapcore.Core
	release chan struct{}
}

func (c heldCore) With(f []zapcore.Field) zapcore.Core { return heldCore{c.Core.With(f), c.release} }

func (c heldCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c heldCore) Write(e zapcore.Entry, f []zapcore.Field) error {
	if e.Message == "call" {
		<-c.release
	}
	return c.Core.Write(e, f)
}

// TestUnaryReplyBeforeLog: the caller has the whole unary reply while
// the call's log line is still being written.
func TestUnaryReplyBeforeLog(t *testing.T) {
	agent := replyAgent(t, 200, "application/json", `{"a":1}`)
	release := make(chan struct{})
	h := newHarness(t, agent.URL, oneMethodConfig, withLogCore(func(c zapcore.Core) zapcore.Core {
		return heldCore{c, release}
	}))
	defer close(release)
	got := make(chan string, 1)
	go func() {
		resp, err := http.Post(h.url+core.RouteUnary, "application/json", strings.NewReader(`{"class_method":"query","input":{}}`))
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	select {
	case body := <-got:
		if strings.TrimSpace(body) != `{"output":{"a":1}}` {
			t.Errorf("reply = %q", body)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the reply waited for the log line")
	}
}

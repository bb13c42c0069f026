package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/a2a"
	"github.com/sidecar-dev/sidecar/proxy/agentcore"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/foundry"
	"github.com/sidecar-dev/sidecar/proxy/mcp"
	"github.com/sidecar-dev/sidecar/proxy/openai"
	"github.com/sidecar-dev/sidecar/proxy/platform"
)

// namedToy is the toy door named as a runtime's, for the protocol label.
type namedToy struct{ toyDoor }

func (namedToy) Protocol() string { return "foundry" }

// TestHandlerForSharesLimits: two doors of one Server share its
// concurrency slots, in-flight count and drain; each call's log line and
// metrics name its door's protocol, from the fixed set.
func TestHandlerForSharesLimits(t *testing.T) {
	agent := &blockingAgent{started: make(chan core.Call, 1), release: make(chan struct{})}
	s, a, logs := toyServer(t, "limits: {concurrency: 1, queue: 0}\n", agent)
	m := metrics.New()
	s.Metrics = m
	s.Protocols = []string{"foundry"}
	b := s.HandlerFor(namedToy{})

	held := make(chan *httptest.ResponseRecorder)
	go func() { held <- toyCall(a, http.MethodPost, "/ask", `query {"id":1}`) }()
	<-agent.started
	if w := toyCall(b, http.MethodPost, "/ask", `query {"id":2}`); w.Code != 503 || !strings.HasPrefix(w.Body.String(), "BUSY: ") {
		t.Errorf("a call on the second door while the first holds the one slot = %d %q, want 503 BUSY", w.Code, w.Body)
	}
	close(agent.release)
	<-held
	s.Drain()
	if w := toyCall(b, http.MethodGet, "/up", ""); w.Code != 503 {
		t.Errorf("the second door's health while draining = %d, want 503", w.Code)
	}
	if s.Ready() {
		t.Error("Ready while draining")
	}
	var got []string
	for _, l := range logs.FilterMessage("call").All() {
		got = append(got, l.ContextMap()["protocol"].(string))
	}
	if strings.Join(got, ",") != "foundry,other" {
		t.Errorf("protocols logged %q, want foundry (the busy call), then other (the toy door)", got)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`sidecar_protocol_calls_total{outcome="busy",protocol="foundry"} 1`, `sidecar_protocol_calls_total{outcome="ok",protocol="other"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestDoorsNoRoute: every door answers a path it does not serve 404 and a
// method a route does not take 405 (with Allow) with the same message, in
// its own error shape, and a CORS preflight with no Access-Control-Allow-*;
// each refusal is one call log line with the door's
// protocol, its status, reason and route (none for the 404: never the
// caller's path) and the remote address, and counts in the metrics of
// calls, by protocol, as a bad request.
func TestDoorsNoRoute(t *testing.T) {
	s, _, logs := toyServer(t, "", &fakeAgent{})
	m := metrics.New()
	s.Metrics = m
	s.Protocols = []string{"agent_platform", "agentcore", "foundry", "a2a", "mcp", "openai"}
	agentCore, err := agentcore.New(s.Config, agentcore.Options{Method: "query", InFlight: s.InFlight})
	if err != nil {
		t.Fatal(err)
	}
	foundryDoor, err := foundry.New(s.Config, foundry.Options{Method: "query"})
	if err != nil {
		t.Fatal(err)
	}
	a2aDoor, err := a2a.New(s.Config, a2a.Options{Method: "query"})
	if err != nil {
		t.Fatal(err)
	}
	mcpDoor, err := mcp.New(s.Config, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	openaiDoor, err := openai.New(s.Config, openai.Options{Method: "query"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		door     Door
		notFound string // the 404's body for /nope
		allowed  string // a route, a method it does not take
		method   string
		allow    string
		shape    string // how the door's errors begin
		call     string // a route of its calls
	}{
		{platform.Door{}, `"no route \"/nope\"; the sidecar serves POST /api/reasoning_engine, POST /api/stream_reasoning_engine and GET /healthz"`,
			core.RouteUnary, http.MethodGet, "POST", `{"detail":`, core.RouteUnary},
		{agentCore, `"no route \"/nope\"; the sidecar serves POST /invocations and GET /ping"`,
			agentcore.RoutePing, http.MethodPost, "GET, HEAD", `{"error":`, agentcore.RouteInvocations},
		{foundryDoor, `"no route \"/nope\"; the sidecar serves POST /invocations and GET /readiness"`,
			foundry.RouteInvocations, http.MethodGet, "POST", `{"error":{"code":"`, foundry.RouteInvocations},
		{a2aDoor, `"no route \"/nope\"; the sidecar serves POST / (JSON-RPC), the HTTP+JSON routes (POST /message:send, GET /tasks/{id}, …), GET /.well-known/agent-card.json and GET /healthz"`,
			a2a.RouteCard, http.MethodPost, "GET, HEAD", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`, a2a.RouteRPC},
		{mcpDoor, `"no route \"/nope\"; the sidecar serves POST /mcp (MCP, Streamable HTTP) and GET /healthz"`,
			mcp.RouteHealth, http.MethodPost, "GET, HEAD", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`, mcp.DefaultPath},
		{openaiDoor, `"no route \"/nope\"; the sidecar serves GET /v1/models, POST /v1/chat/completions, POST /v1/responses and GET /healthz"`,
			openai.RouteChat, http.MethodGet, "POST", `{"error":{"message":`, openai.RouteChat},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(s.HandlerFor(tt.door))
		get := func(method, path string, header ...string) (*http.Response, string) {
			req, _ := http.NewRequest(method, srv.URL+path, nil)
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, string(b)
		}
		name := tt.door.(Named).Protocol()
		logs.TakeAll()
		resp, body := get(http.MethodGet, "/nope")
		if resp.StatusCode != 404 || !strings.HasPrefix(body, tt.shape) || !strings.Contains(body, tt.notFound) {
			t.Errorf("%s: GET /nope = %d %s, want 404 %s…%s", name, resp.StatusCode, body, tt.shape, tt.notFound)
		}
		refusalLogged(t, logs, name, 404, "NOT_FOUND", "", len(body))
		want := fmt.Sprintf(`"method \"%s\" not allowed on %s; use %s"`, tt.method, tt.allowed, tt.allow)
		resp, body = get(tt.method, tt.allowed)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != tt.allow || !strings.HasPrefix(body, tt.shape) || !strings.Contains(body, want) {
			t.Errorf("%s: %s %s = %d (Allow %q) %s, want 405 (Allow %q) %s…%s", name, tt.method, tt.allowed, resp.StatusCode,
				resp.Header.Get("Allow"), body, tt.allow, tt.shape, want)
		}
		refusalLogged(t, logs, name, 405, "METHOD_NOT_ALLOWED", tt.allowed, len(body))
		// No door answers a CORS preflight: no page of another site reads
		// an answer, or sends what a preflight guards.
		resp, body = get(http.MethodOptions, tt.call, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "content-type, authorization")
		if resp.StatusCode < 400 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("%s: a CORS preflight of %s = %d %v, want refused, no Access-Control-Allow-*", name, tt.call, resp.StatusCode, resp.Header)
		}
		logs.TakeAll()
		srv.Close()
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, p := range s.Protocols {
		if want := `sidecar_protocol_calls_total{outcome="bad_request",protocol="` + p + `"} 3`; !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s (the 404, the 405 and the preflight)", want)
		}
	}
	if want := `sidecar_calls_total{class_method="",outcome="bad_request",route=""} 6`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s (every door's 404)", want)
	}
}

// refusalLogged checks that the one log line since the last is a call
// refused by the door of protocol: its status, reason and route, the
// bytes of its body and the remote address.
func refusalLogged(t *testing.T, logs *observer.ObservedLogs, protocol string, status int, reason, route string, bytes int) {
	t.Helper()
	lines := logs.TakeAll()
	if len(lines) != 1 || lines[0].Message != "call" {
		t.Errorf("%s: a %d logged %d lines %v, want one call line", protocol, status, len(lines), lines)
		return
	}
	f := lines[0].ContextMap()
	if f["protocol"] != protocol || f["status"] != int64(status) || f["reason"] != reason || f["route"] != route ||
		f["outcome"] != "bad_request" || f["bytes"] != int64(bytes) || !strings.HasPrefix(fmt.Sprint(f["remote"]), "127.0.0.1:") {
		t.Errorf("%s: a %d logged %v, want protocol %s, status %d, reason %s, route %q, outcome bad_request, bytes %d, remote 127.0.0.1",
			protocol, status, f, protocol, status, reason, route, bytes)
	}
}

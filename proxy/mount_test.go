package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
)

// TestMounted: on one listener, each mounted door gets the paths it
// claims with its mount taken off (the mount itself is its "/"; a claim
// matches the escaped path, so an escaped mount is not the mount), answers in its own shape
// (its 404s saying the paths are under the mount) and through its own
// guard, with its own log line; every other path is the platform's.
func TestMounted(t *testing.T) {
	agent := &countingAgent{fakeAgent: fakeAgent{output: json.RawMessage(`{"text":"hi"}`)}}
	cfg, err := config.Parse("test.yaml", []byte(fakeConfig))
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	s := &Server{Config: cfg, Agent: agent, Logger: zap.New(observed)}
	h := Mounted(s.HandlerFor(platform.Door{}), []Mount{
		{Path: "/toy", Claims: []config.Claim{{Path: "/toy", Tree: true}}, Handler: s.HandlerFor(toyDoor{})},
		// The platform's door again, as a door whose refusals go through
		// refuse, under a mount of two segments.
		{Path: "/p/q", Claims: []config.Claim{{Path: "/p/q", Tree: true}}, Handler: s.HandlerFor(platform.Door{})},
	})
	srv := httptest.NewServer(h)
	defer srv.Close()

	do := func(method, path, body string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			if header[i] == "Host" {
				req.Host = header[i+1]
				continue
			}
			req.Header.Set(header[i], header[i+1])
		}
		if strings.Contains(path, "%") {
			req.URL.Opaque = "//" + req.URL.Host + path // as sent, not re-escaped
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tt := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/toy/ask", `query {}`, 200, "out {\"text\":\"hi\"}\n"},
		{"POST", "/%74oy/ask", `query {}`, 404, `no route \"/toy/ask\"`},
		{"GET", "/toy/up", "", 200, `"status":"ok"`},
		{"POST", "/p/q/api/reasoning_engine", `{"class_method":"query","input":{}}`, 200, `{"output":{"text":"hi"}}`},
		{"GET", "/p/q", "", 200, `"status":"ok"`}, // the mount is the door's "/", its health route
		{"GET", "/p/q/", "", 200, `"status":"ok"`},
		{"GET", "/p/q/nope", "", 404, `no route \"/nope\"; the sidecar serves POST /api/reasoning_engine, POST /api/stream_reasoning_engine and GET /healthz (paths under the mount /p/q)`},
		{"GET", "/p/q/api/reasoning_engine", "", 405, `use POST (paths under the mount /p/q)`},
		{"POST", "/api/reasoning_engine", `{"class_method":"query","input":{}}`, 200, `{"output":{"text":"hi"}}`},
		{"GET", "/toyx/ask", "", 404, `no route \"/toyx/ask\"; the sidecar serves POST /api/reasoning_engine`},
		{"GET", "/p", "", 404, `no route \"/p\"`},
		{"GET", "/healthz", "", 200, `"status":"ok"`},
	} {
		status, body := do(tt.method, tt.path, tt.body)
		if status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("%s %s = %d %q, want %d with %q", tt.method, tt.path, status, body, tt.status, tt.want)
		}
	}
	// The mounted door's own guard: a page's Host on loopback is refused
	// in its shape, the agent never called.
	calls := agent.n.Load()
	if status, body := do("POST", "/p/q/api/reasoning_engine", `{"class_method":"query","input":{}}`, "Host", "evil.example"); status != 403 || !strings.Contains(body, "PERMISSION_DENIED") && !strings.Contains(body, "Host") {
		t.Errorf("a foreign Host through the mount = %d %q, want 403", status, body)
	}
	if agent.n.Load() != calls {
		t.Errorf("the agent was called for a refused request")
	}
	var routes []string
	for _, l := range logs.FilterMessage("call").All() {
		routes = append(routes, l.ContextMap()["route"].(string))
	}
	if got := strings.Join(routes, " "); !strings.HasPrefix(got, "/ask ") {
		t.Errorf("call log routes = %q, want the toy door's own routes", got)
	}
}

// countingAgent is a fakeAgent that counts its unary calls, safe to read
// while a server runs.
type countingAgent struct {
	fakeAgent
	n atomic.Int32
}

func (a *countingAgent) Unary(ctx context.Context, c core.Call) (json.RawMessage, error) {
	a.n.Add(1)
	return a.output, a.err
}

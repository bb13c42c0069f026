package devapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingAgent answers every call with a reply a page should never read
// and counts the calls it got.
func countingAgent(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"secret":"the agent's reply"}`+"\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &calls
}

// devPort is the port of a dev listener's base URL.
func devPort(dev string) string { return dev[strings.LastIndex(dev, ":")+1:] }

// send makes one request to the dev listener at dev (its address), with
// the Host and headers given, and reads the whole answer.
func send(t *testing.T, method, dev, path, host string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, dev+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v", method, path, host, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s (Host %s): reading: %v", method, path, host, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

var jsonType = map[string]string{"Content-Type": "application/json"}

// TestDevHost: the dev listener answers only its loopback names with its
// own port; under any other Host (DNS rebinding: a page at a name that
// resolves to 127.0.0.1) it serves neither the page nor a call, and the
// agent is never called.
func TestDevHost(t *testing.T) {
	agent, calls := countingAgent(t)
	st := newStackAt(t, agent, Options{})
	port := devPort(st.dev)
	call := `{"class_method": "echo", "input": {}}`
	for _, host := range []string{"rebind.test:" + port, "127.0.0.1.nip.io:" + port, "localhost.:" + port, "localhost.rebind.test:" + port,
		"0.0.0.0:" + port, "10.0.0.1:" + port, "[fe80::1]:" + port, "agent.localhost:" + port} {
		for _, tt := range []struct{ method, path, body string }{{"GET", "/", ""}, {"GET", "/playground/methods.json", ""}, {"POST", engine("v1", "query"), call}} {
			code, _, body := send(t, tt.method, st.dev, tt.path, host, jsonType, tt.body)
			if code != http.StatusForbidden || !strings.Contains(body, `"status":"PERMISSION_DENIED"`) ||
				!strings.Contains(body, "is not the dev listener's") || !strings.Contains(body, "http://localhost:"+port) {
				t.Errorf("%s %s with Host %s: %d %s, want 403 naming the listener's own names", tt.method, tt.path, host, code, body)
			}
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the agent was called %d times under a foreign Host", n)
	}
	// Its loopback names with any port or none: ssh -L and kubectl
	// port-forward reach it with the tunnel's port in Host.
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost:" + port, "[::1]:" + port, "127.0.0.2:" + port,
		"localhost:9000", "127.0.0.1:1", "localhost", "127.0.0.1", "[::1]"} {
		if code, _, body := send(t, "GET", st.dev, "/", host, nil, ""); code != 200 || !strings.Contains(body, "<html") {
			t.Errorf("GET / with Host %s: %d %.200s", host, code, body)
		}
		if code, _, body := send(t, "POST", st.dev, engine("v1", "query"), host, jsonType, call); code != 200 || !strings.Contains(body, "the agent's reply") {
			t.Errorf("POST :query with Host %s: %d %s", host, code, body)
		}
	}
}

// TestDevOrigin: a call carrying the Origin of another page (a
// cross-site request forgery) is refused before the agent is called;
// the listener's own page and clients that send no Origin are served.
func TestDevOrigin(t *testing.T) {
	agent, calls := countingAgent(t)
	st := newStackAt(t, agent, Options{})
	port := devPort(st.dev)
	call := `{"class_method": "echo", "input": {}}`
	for _, origin := range []string{"http://127.0.0.1:1" + port, "http://evil.test", "http://rebind.test:" + port, "null",
		"https://127.0.0.1:" + port, "http://127.0.0.1:" + port + "/x", "http://u@127.0.0.1:" + port, "not a URL"} {
		for _, verb := range []string{"query", "streamQuery"} {
			h := map[string]string{"Content-Type": "application/json", "Origin": origin}
			code, _, body := send(t, "POST", st.dev, engine("v1", verb), "", h, call)
			if code != http.StatusForbidden || !strings.Contains(body, "Origin") || !strings.Contains(body, `"status":"PERMISSION_DENIED"`) {
				t.Errorf(":%s with Origin %q: %d %s, want 403", verb, origin, code, body)
			}
		}
		// Another method is refused alike; reading the page is not.
		if code, _, _ := send(t, "PUT", st.dev, "/", "", map[string]string{"Origin": origin}, ""); code != http.StatusForbidden {
			t.Errorf("PUT / with Origin %q: %d, want 403", origin, code)
		}
		if code, _, _ := send(t, "GET", st.dev, "/", "", map[string]string{"Origin": origin}, ""); code != 200 {
			t.Errorf("GET / with Origin %q: %d, want 200", origin, code)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the agent was called %d times from a foreign Origin", n)
	}
	for _, origin := range []string{"", "http://127.0.0.1:" + port, "http://localhost:" + port, "http://[::1]:" + port} {
		h := map[string]string{"Content-Type": "application/json"}
		if origin != "" {
			h["Origin"] = origin
		}
		if code, _, body := send(t, "POST", st.dev, engine("v1", "query"), "", h, call); code != 200 {
			t.Errorf("POST :query with Origin %q: %d %s, want 200", origin, code, body)
		}
	}
	// Through a tunnel (ssh -L 9000:localhost:PORT) the page is
	// http://localhost:9000 and so is its Host: its own page. Another
	// port's page under that Host is not.
	h := map[string]string{"Content-Type": "application/json", "Origin": "http://localhost:9000"}
	if code, _, body := send(t, "POST", st.dev, engine("v1", "query"), "localhost:9000", h, call); code != 200 {
		t.Errorf("POST :query through a tunnel (Host and Origin localhost:9000): %d %s, want 200", code, body)
	}
	h["Origin"] = "http://localhost:9001"
	if code, _, body := send(t, "POST", st.dev, engine("v1", "query"), "localhost:9000", h, call); code != http.StatusForbidden {
		t.Errorf("POST :query with Host localhost:9000 and Origin localhost:9001: %d %s, want 403", code, body)
	}
}

// TestDevContentType: a REST call whose body is not declared JSON (what
// a page can send cross-origin without a preflight: text/plain, a form)
// is a 415 and never reaches the agent.
func TestDevContentType(t *testing.T) {
	agent, calls := countingAgent(t)
	st := newStackAt(t, agent, Options{})
	call := `{"class_method": "echo", "input": {}}`
	for _, ct := range []string{"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "application/jsonx", "application/json,text/plain", "json"} {
		for _, verb := range []string{"query", "streamQuery"} {
			h := map[string]string{}
			if ct != "" {
				h["Content-Type"] = ct
			}
			code, _, body := send(t, "POST", st.dev, engine("v1", verb), "", h, call)
			if code != http.StatusUnsupportedMediaType || !strings.Contains(body, "Content-Type: application/json") || !strings.Contains(body, `"code":415`) {
				t.Errorf(":%s with Content-Type %q: %d %s, want 415", verb, ct, code, body)
			}
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the agent was called %d times without a JSON Content-Type", n)
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		if code, _, body := send(t, "POST", st.dev, engine("v1", "query"), "", map[string]string{"Content-Type": ct}, call); code != 200 {
			t.Errorf(":query with Content-Type %q: %d %s, want 200", ct, code, body)
		}
	}
}

// TestDevPageHeaders: the page and every other answer forbid framing,
// sniffing, and loading anything but the listener's own files.
func TestDevPageHeaders(t *testing.T) {
	agent, _ := countingAgent(t)
	st := newStackAt(t, agent, Options{})
	for _, tt := range []struct{ method, path, host string }{
		{"GET", "/", ""}, {"GET", "/playground/app.js", ""}, {"GET", "/playground/methods.json", ""},
		{"POST", engine("v1", "query"), ""}, {"GET", "/nope", ""}, {"GET", "/", "rebind.test:" + devPort(st.dev)},
	} {
		_, h, _ := send(t, tt.method, st.dev, tt.path, tt.host, jsonType, `{"class_method": "echo"}`)
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") ||
			!strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: CSP %q, X-Frame-Options %q, X-Content-Type-Options %q", tt.method, tt.path, csp,
				h.Get("X-Frame-Options"), h.Get("X-Content-Type-Options"))
		}
	}
}

// TestDevMethodNamedTwice: a body naming one method as class_method and
// another as classMethod is a 400 on the REST routes and on the contract
// routes behind them, whichever comes first; the agent is never called.
// The same method under both names is served.
func TestDevMethodNamedTwice(t *testing.T) {
	agent, calls := countingAgent(t)
	st := newStackAt(t, agent, Options{})
	for _, body := range []string{
		`{"class_method": "echo", "classMethod": "fail", "input": {}}`,
		`{"classMethod": "fail", "class_method": "echo"}`,
		`{"class_method": "", "classMethod": "echo"}`,
	} {
		code, _, got := postRead(t, st.dev+engine("v1", "query"), body)
		if code != 400 || !strings.Contains(got, `"status":"INVALID_ARGUMENT"`) || !strings.Contains(got, "name two methods") {
			t.Errorf(":query %s: %d %s, want 400 INVALID_ARGUMENT naming both", body, code, got)
		}
		code, _, got = postRead(t, st.contract+"/api/reasoning_engine", body)
		if code != 400 || !strings.Contains(got, `"detail"`) || !strings.Contains(got, "names two methods") {
			t.Errorf("the contract route, %s: %d %s, want 400 naming both", body, code, got)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the agent was called %d times for a body naming two methods", n)
	}
	for _, url := range []string{st.dev + engine("v1", "query"), st.contract + "/api/reasoning_engine"} {
		if code, _, got := postRead(t, url, `{"class_method": "echo", "classMethod": "echo"}`); code != 200 || !strings.Contains(got, "the agent's reply") {
			t.Errorf("%s, one method under both names: %d %s, want 200", url, code, got)
		}
	}
}

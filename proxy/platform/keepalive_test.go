package platform_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// probeAnswer is one answer of the keep-alive probe.
type probeAnswer struct {
	status int
	body   string
}

func ask(t *testing.T, method, url, host string) probeAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return probeAnswer{resp.StatusCode, string(b)}
}

// until waits for cond, failing the test by name after 10 s: what it
// waits for (a held call reaching the agent, a released one ending)
// takes milliseconds, or never happens.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within 10s", what)
		}
	}
}

// TestKeepAliveProbe drives the platform door's keep-alive probe through
// real listeners: 503 while no call is in flight (the probe itself not
// counted), 200 with the count while one is, on the platform's own door
// or on the A2A door's listener, and 503 again once they end; HEAD as
// GET; another method 405; a Host only a web page sends 403, as on the
// door's other routes.
func TestKeepAliveProbe(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "keep_alive_probe: {path: /busy, max_seconds: 600}\nprotocols: {a2a: {method: hold}}\n", doors.Kinds(doors.All)...)
	host := core.Host{InFlight: s.InFlight}
	serve := func(name string) string {
		d, err := doors.Build(doors.All, s.Config, name, host)
		if err != nil {
			t.Fatal(err)
		}
		return s.Serve(t, d)
	}
	platform, a2a := serve(config.ProtocolAgentPlatform), serve("a2a")
	probe := platform + "/busy"

	idle := probeAnswer{http.StatusServiceUnavailable, `{"busy":false,"calls":0}`}
	if got := ask(t, http.MethodGet, probe, ""); got != idle {
		t.Errorf("GET /busy with no call = %+v, want %+v", got, idle)
	}
	if got := ask(t, http.MethodHead, probe, ""); got.status != idle.status || got.body != "" {
		t.Errorf("HEAD /busy with no call = %+v, want %d and no body", got, idle.status)
	}

	post := func(url, body string, done chan<- string) {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	// A call on the A2A door's own listener, held by the agent.
	a2aDone := make(chan string, 1)
	go post(a2a, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`, a2aDone)
	until(t, "the A2A call reaching the agent", func() bool { return agent.Held.Load() == 1 })
	if got, want := ask(t, http.MethodGet, probe, ""), (probeAnswer{http.StatusOK, `{"busy":true,"calls":1}`}); got != want {
		t.Errorf("GET /busy with an A2A call in flight = %+v, want %+v", got, want)
	}
	// And one on the platform's own door.
	platformDone := make(chan string, 1)
	go post(platform+core.RouteUnary, `{"class_method":"hold","input":{}}`, platformDone)
	until(t, "the platform call reaching the agent", func() bool { return agent.Held.Load() == 2 })
	if got, want := ask(t, http.MethodGet, probe, ""), (probeAnswer{http.StatusOK, `{"busy":true,"calls":2}`}); got != want {
		t.Errorf("GET /busy with two calls in flight = %+v, want %+v", got, want)
	}
	if got := ask(t, http.MethodHead, probe, ""); got.status != http.StatusOK || got.body != "" {
		t.Errorf("HEAD /busy with calls in flight = %+v, want 200 and no body", got)
	}
	if got := ask(t, http.MethodGet, probe, "evil.example"); got.status != http.StatusForbidden {
		t.Errorf("GET /busy with Host evil.example = %+v, want 403", got)
	}
	if got := ask(t, http.MethodPost, probe, ""); got.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /busy = %+v, want 405", got)
	}

	close(agent.Release)
	for name, done := range map[string]chan string{"a2a": a2aDone, "platform": platformDone} {
		if got := <-done; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "held") {
			t.Errorf("the %s call = %s, want 200 with the agent's answer", name, got)
		}
	}
	// A call ends (its log line written) just after its caller has the
	// answer: the probe says so soon after.
	until(t, "the probe answering 503 once the calls ended", func() bool { return ask(t, http.MethodGet, probe, "") == idle })
}

// TestKeepAliveProbeOff: without keep_alive_probe the path is the door's
// 404, as any path it does not serve.
func TestKeepAliveProbeOff(t *testing.T) {
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "", doors.Kinds(doors.All)...)
	d, err := doors.Build(doors.All, s.Config, config.ProtocolAgentPlatform, core.Host{InFlight: s.InFlight})
	if err != nil {
		t.Fatal(err)
	}
	got := ask(t, http.MethodGet, s.Serve(t, d)+"/busy", "")
	var detail struct{ Detail string }
	if got.status != http.StatusNotFound || json.Unmarshal([]byte(got.body), &detail) != nil || detail.Detail == "" {
		t.Errorf("GET /busy with no probe configured = %+v, want 404 {\"detail\": …}", got)
	}
}

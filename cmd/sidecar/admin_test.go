package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAdminMetrics: /metrics is served on admin.listen only, never on the
// public port, and counts calls, records and stream ends.
func TestAdminMetrics(t *testing.T) {
	a := startAgent(t, "python", false)
	base, logs := startSidecarLogs(t, "upstream: {url: "+a.url+", ready: {path: /health}}\nadmin: {listen: \"127.0.0.1:0\"}\n"+agentMethods)
	admin := logs.addr(t, "admin")
	if r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"sse","input":{}}`); r.status != 200 {
		t.Fatalf("stream = %d %s", r.status, r.body)
	}
	if r := post(t, base+"/api/reasoning_engine", `{"class_method":"nope"}`); r.status != 400 {
		t.Fatalf("unknown method = %d", r.status)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("/metrics on the public port = %d, want 404", resp.StatusCode)
	}
	wants := []string{
		`sidecar_calls_total{class_method="sse",outcome="ok",route="/api/stream_reasoning_engine"} 1`,
		`sidecar_calls_total{class_method="",outcome="bad_request",route="/api/reasoning_engine"} 1`,
		`sidecar_records_total{class_method="sse"} 3`,
		`sidecar_stream_ends_total{reason="ok"} 1`,
		`sidecar_time_to_first_line_seconds_count{class_method="sse"} 1`,
		`sidecar_calls_in_flight 0`,
		`sidecar_agent_ready 1`,
		`sidecar_agent_restarts_total 0`,
		`go_goroutines`,
	}
	// A call is counted just after its reply leaves, so the figures are
	// polled until they all hold or the deadline passes.
	var missing []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		missing = missing[:0]
		for _, want := range wants {
			if !strings.Contains(string(b), want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range missing {
		t.Errorf("/metrics lacks %s", want)
	}
	resp, err = http.Get("http://" + admin + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("admin /healthz = %d", resp.StatusCode)
	}
}

// TestAdminHost: the admin listener is held to the Host check every door
// makes: on loopback, a page under a rebinding name on this machine reads
// neither /metrics nor /healthz (403); a loopback name, with any port (a
// tunnel's) or none, and a name of trusted_hosts are served.
func TestAdminHost(t *testing.T) {
	agent := newHostileAgent(t)
	_, _, logs := hostileServe(t, "agent_platform", "query", "admin: {listen: \"127.0.0.1:0\"}\ntrusted_hosts: [agents.example.com]\n", agent)
	var admin string
	for deadline := time.Now().Add(hostileBound); admin == ""; time.Sleep(5 * time.Millisecond) {
		for _, l := range logs.FilterMessage("admin listening").All() {
			admin, _ = l.ContextMap()["addr"].(string)
		}
		if admin == "" && time.Now().After(deadline) {
			t.Fatalf("no admin listening line with its addr after %v", hostileBound)
		}
	}
	_, port, _ := net.SplitHostPort(admin)
	get := func(path, host string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+admin+path, http.NoBody)
		req.Host = host
		_, resp := call(t, req)
		return resp.StatusCode, string(readAll(t, resp))
	}
	for _, path := range []string{"/metrics", "/healthz"} {
		for _, host := range []string{"rebind.test:" + port, "rebind.test", "127.0.0.1.nip.io:" + port, "localhost.rebind.test:" + port} {
			if code, body := get(path, host); code != http.StatusForbidden || strings.Contains(body, "sidecar_") || strings.Contains(body, "status") {
				t.Errorf("GET %s with Host %s = %d %.200q, want 403 and nothing of its answer", path, host, code, body)
			}
		}
		for _, host := range []string{admin, "localhost:" + port, "localhost:9000", "localhost", "[::1]", "agents.example.com"} {
			if code, body := get(path, host); code != http.StatusOK {
				t.Errorf("GET %s with Host %s = %d %.200q, want 200", path, host, code, body)
			}
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEntrypointProtocols: the built binary serves the platform contract,
// AgentCore and Foundry, each on its own port, in front of one agent; on
// SIGTERM, all of them drain in the one budget: a stream open on the
// AgentCore port ends with its error event, new calls on every port get
// 503, and the process exits within the budget.
func TestEntrypointProtocols(t *testing.T) {
	cfg := "upstream: {url: " + agentUpstream(t, false) + ", ready: {path: /health}}\nshutdown: {drain: 1500ms, agent_grace: 2s}\n" +
		"protocols:\n  agentcore: {listen: \"127.0.0.1:0\", method: hang}\n  foundry: {listen: \"127.0.0.1:0\", method: echo}\n" +
		"  a2a: {listen: \"127.0.0.1:0\", method: echo, card: {name: Echo agent}}\n" +
		lifecycleMethods
	t.Cleanup(testClient.CloseIdleConnections)
	p := startProc(t, cfg, []string{"PORT=1", "FOUNDRY_AGENT_SESSION_ID=s-env"}, "--", "python3", "agent.py")
	p.waitHealth(200)
	coreURL, foundryURL := "http://"+p.listen("agentcore"), "http://"+p.listen("foundry")
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		n := len(p.listens)
		p.mu.Unlock()
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not four listeners: %v", p.listens)
		}
		time.Sleep(10 * time.Millisecond)
	}

	resp, err := testClient.Post(foundryURL+"/invocations", "text/plain", strings.NewReader(`{"q":1}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"q":1`)) || resp.Header.Get("X-Agent-Session-Id") != "s-env" {
		t.Fatalf("foundry call = %d %s (session %q)", resp.StatusCode, body, resp.Header.Get("X-Agent-Session-Id"))
	}
	if code := status(testClient.Get(foundryURL + "/readiness")); code != 200 {
		t.Fatalf("foundry readiness = %d", code)
	}
	if code := status(testClient.Post(p.base+"/api/reasoning_engine", "application/json", strings.NewReader(`{"class_method":"echo","input":{"a":1}}`))); code != 200 {
		t.Fatalf("platform call = %d", code)
	}
	a2aURL := "http://" + p.listen("a2a")
	resp, err = testClient.Get(a2aURL + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"name": "Echo agent"`)) || !bytes.Contains(body, []byte(a2aURL+"/")) {
		t.Fatalf("a2a card = %d %s", resp.StatusCode, body)
	}
	resp, err = testClient.Post(a2aURL+"/", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"message/send",`+
		`"params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi a2a"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"id":7`)) || !bytes.Contains(body, []byte(`"state":"completed"`)) || !bytes.Contains(body, []byte(`hi a2a`)) {
		t.Fatalf("a2a message/send = %d %s", resp.StatusCode, body)
	}

	ping := func() string {
		resp, err := testClient.Get(coreURL + "/ping")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct{ Status string }
		json.NewDecoder(resp.Body).Decode(&v)
		return v.Status
	}
	if s := ping(); s != "Healthy" {
		t.Errorf("idle /ping = %q", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, coreURL+"/invocations", strings.NewReader(`{"prompt":"x"}`))
	stream, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	r := bufio.NewReader(stream.Body)
	if first, _ := r.ReadString('\n'); stream.Header.Get("Content-Type") != "text/event-stream" || first != `data: {"started":true}`+"\n" {
		t.Fatalf("agentcore stream %s, first line %q", stream.Header.Get("Content-Type"), first)
	}
	r.ReadString('\n')
	if s := ping(); s != "HealthyBusy" {
		t.Errorf("/ping with a stream open = %q", s)
	}

	signalled := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	if code := status(testClient.Post(foundryURL+"/invocations", "application/json", strings.NewReader(`{}`))); code != 503 {
		t.Errorf("a foundry call while draining = %d, want 503", code)
	}
	if code := status(testClient.Get(foundryURL + "/readiness")); code != 503 {
		t.Errorf("foundry readiness while draining = %d, want 503", code)
	}
	rest, _ := io.ReadAll(r)
	if !strings.HasPrefix(string(rest), `data: {"error":`) || !strings.Contains(string(rest), `"error_type":"SHUTTING_DOWN"`) || !strings.HasSuffix(string(rest), "\n\n") {
		t.Errorf("the stream's end %q, want the SHUTTING_DOWN error event", rest)
	}
	if code := p.wait(10 * time.Second); time.Since(signalled) > 4500*time.Millisecond {
		t.Errorf("exited %d after %v, past the 4s budget", code, time.Since(signalled))
	}
}

// TestValidateProtocols: validate refuses two protocols on one port and a
// method the map does not have, and --print writes the section back.
func TestValidateProtocols(t *testing.T) {
	validate := func(yaml string, args ...string) (string, error) {
		path := filepath.Join(t.TempDir(), "sidecar.yaml")
		os.WriteFile(path, []byte("upstream: {url: \"http://127.0.0.1:8000\"}\nmethods: {query: {}, stream_query: {mode: stream}}\n"+yaml), 0o600)
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"validate", "--config", path}, args...), func(string) string { return "" }, &out, io.Discard)
		return out.String(), err
	}
	// Four on one port are one problem naming them all, not six pairs.
	_, err := validate("protocols: {agentcore: {method: query}, foundry: {listen: \":8080\", method: query}, a2a: {listen: \"127.0.0.1:8080\", method: query}}\n")
	want := `sidecar.yaml:3: protocols.agentcore.listen: ":8080" is the port of agent_platform, foundry and a2a too: each protocol needs a port of its own, or mount: a path on the platform's listener`
	if err == nil || !strings.HasSuffix(err.Error(), want) || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("four on one port: %v, want the one line %s", err, want)
	}
	_, err = validate("admin: {listen: \":9000\"}\nprotocols: {foundry: {listen: \":9000\", method: query}, a2a: {method: query}}\n")
	want = `sidecar.yaml:3: admin.listen: ":9000" is the port of foundry and a2a: metrics must be served elsewhere`
	if err == nil || !strings.Contains(err.Error(), want+"\n") || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("admin on the port of two: %v, want one line for the two and %s", err, want)
	}
	if _, err = validate("protocols: {foundry: {method: nope}}\n"); err == nil || !strings.Contains(err.Error(), `protocols.foundry.method: "nope" is not a method of the map`) {
		t.Errorf("unknown method: %v", err)
	}
	out, err := validate("protocols: {agent_platform: {enabled: false}, agentcore: {method: stream_query}}\n", "--print")
	if err != nil || !strings.Contains(out, "protocols:") || !strings.Contains(out, "enabled: false") || !strings.Contains(out, `listen: ":8080"`) {
		t.Errorf("--print = %v\n%s", err, out)
	}
}

// status is a reply's status, its body read and closed; 0 for an error.
func status(resp *http.Response, err error) int {
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

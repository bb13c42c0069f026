package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/internal/idptest"
)

// TestConnectionKeepsIdentity: a caller's Connection header removes the
// caller's own hop-by-hop headers (X-Tenant, allow-listed), never the
// identity headers the sidecar sets for a verified caller (auth.headers).
func TestConnectionKeepsIdentity(t *testing.T) {
	p := idptest.Start(t)
	var agent headersAgent
	yaml := "upstream: {url: AGENT}\nmethods: {query: {}}\nheaders: {forward: [X-Tenant]}\n" +
		"auth: {issuer: \"" + p.URL + "\", audience: \"" + audience + "\", doors: [agent_platform], headers: {sub: X-User-Id}}\n"
	h := newHarness(t, agent.start(t).URL, yaml, withServer(func(s *Server) {
		s.Protocols = []string{"agent_platform"}
		s.Auth = auth.New(s.Config.Auth, nil)
	}))
	req, _ := http.NewRequest(http.MethodPost, h.url+"/api/reasoning_engine", strings.NewReader(queryCall))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.Token(t, "alice", audience, ""))
	req.Header.Set("Connection", "keep-alive, X-User-Id, X-Tenant")
	req.Header.Set("X-Tenant", "acme")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, got := agent.calls()
	if resp.StatusCode != 200 || got.Get("X-User-Id") != "alice" || got.Get("X-Tenant") != "" {
		t.Errorf("Connection: keep-alive, X-User-Id, X-Tenant: %d, the agent got X-User-Id %q X-Tenant %q, want 200 alice and no X-Tenant",
			resp.StatusCode, got.Get("X-User-Id"), got.Get("X-Tenant"))
	}
}

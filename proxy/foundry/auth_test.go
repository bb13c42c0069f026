package foundry

import (
	"net/http"
	"testing"

	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// TestProtectedHealth: on a door the auth section protects, GET and HEAD
// /readiness, the platform's readiness probe, are answered without a token (it sends
// none); a call without one is 401 with the challenge.
func TestProtectedHealth(t *testing.T) {
	p := idptest.Start(t)
	s := doortest.NewSidecar(t, doortest.NewAgent(t), "")
	s.Protect(p.URL, Name)
	url := s.Serve(t, newDoor(t, Options{Method: "query"}))
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		if resp, _ := do(t, method, url+RouteReadiness, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s without a token = %d, want 200: the probe carries none", method, RouteReadiness, resp.StatusCode)
		}
	}
	if resp, _ := do(t, http.MethodPost, url+RouteInvocations, "{}"); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("POST %s without a token = %d, want 401 with the challenge", RouteInvocations, resp.StatusCode)
	}
}

// TestProtectedUserID: on a protected door nothing in front sets
// X-Agent-User-Id, so the caller's is removed; the call id still reaches
// the agent.
func TestProtectedUserID(t *testing.T) {
	const userID, callID = "X-Agent-User-Id", "X-Agent-Foundry-Call-Id"
	p := idptest.Start(t)
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	s.Protect(p.URL, Name)
	url := s.Serve(t, newDoor(t, Options{Method: "query"}))
	resp, body := do(t, http.MethodPost, url+RouteInvocations, "{}", "Authorization", "Bearer "+p.Token(t, "alice", "https://agent.example.com", ""),
		userID, "admin", callID, "call-1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s = %d %s, want 200", RouteInvocations, resp.StatusCode, body)
	}
	if got := agent.Header(); got.Get(userID) != "" || got.Get(callID) != "call-1" {
		t.Errorf("the agent got %s = %q, %s = %q; want no user id (the caller's) and the call id", userID, got.Get(userID), callID, got.Get(callID))
	}
}

package agentcore

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// TestProtectedHealth: on a door the auth section protects, GET and HEAD
// /ping, the runtime's health probe, are answered without a token (it sends
// none); a call without one is 401 with the challenge.
func TestProtectedHealth(t *testing.T) {
	p := idptest.Start(t)
	s := doortest.NewSidecar(t, doortest.NewAgent(t), "")
	s.Protect(p.URL, Name)
	url := s.Serve(t, newDoor(t, Options{Method: "query", InFlight: s.InFlight}))
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, url+RoutePing, http.NoBody)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if readAll(t, resp); resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s without a token = %d, want 200: the probe carries none", method, RoutePing, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, url+RouteInvocations, http.NoBody)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, resp); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("POST %s without a token = %d, want 401 with the challenge", RouteInvocations, resp.StatusCode)
	}
}

// TestProtectedUserID: on a protected door nothing in front sets the
// runtime's user id, so the caller's is removed; the session id still
// reaches the agent. On an open door the runtime sets it, and it passes.
func TestProtectedUserID(t *testing.T) {
	const userID, sessionID = "X-Amzn-Bedrock-Agentcore-Runtime-User-Id", "X-Amzn-Bedrock-Agentcore-Runtime-Session-Id"
	p := idptest.Start(t)
	agent := doortest.NewAgent(t)
	s := doortest.NewSidecar(t, agent, "")
	s.Protect(p.URL, Name)
	url := s.Serve(t, newDoor(t, Options{Method: "query", InFlight: s.InFlight}))
	resp := post(t, url, `{}`, "Authorization", "Bearer "+p.Token(t, "alice", "https://agent.example.com", ""),
		userID, "admin", sessionID, strings.Repeat("s", 33))
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s = %d %s, want 200", RouteInvocations, resp.StatusCode, body)
	}
	if got := agent.Header(); got.Get(userID) != "" || got.Get(sessionID) == "" {
		t.Errorf("the agent got %s = %q, %s = %q; want no user id (the caller's) and the session id", userID, got.Get(userID), sessionID, got.Get(sessionID))
	}
}

package proxy

import (
	"net/http"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/proxy/agentcore"
	"github.com/sidecar-dev/sidecar/proxy/foundry"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/quota"
)

// TestProbesPublic: every probe path (the platform's health routes, "/"
// among them, and its keep-alive probe; AgentCore's /ping; Foundry's
// /readiness) answers 200 without a token, with the caller's quota
// spent by a call in flight: never counted, never refused, on a door the
// auth section protects or not.
func TestProbesPublic(t *testing.T) {
	hangsAfter(t, 30*time.Second)
	p := idptest.Start(t)
	tests := []struct {
		name  string
		yaml  string
		token string
	}{
		{"no auth", "", ""},
		{"auth", "auth: {issuer: \"" + p.URL + "\", audience: \"" + audience + "\", doors: [agent_platform]}\n",
			"Bearer " + p.Token(t, "alice", audience, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			calls, agent := heldAgent(t, release, `{"ok":true}`)
			yaml := "upstream: {url: AGENT}\nmethods: {query: {}}\nkeep_alive_probe: {path: /busy}\nlimits: {per_caller: {requests: 1, per: 1m}}\n" + tt.yaml
			h := newHarness(t, agent.URL, yaml, withServer(func(s *Server) {
				s.Protocols = []string{"agent_platform", "agentcore", "foundry"}
				if s.Config.Auth.Issuer != "" {
					s.Auth = auth.New(s.Config.Auth, nil)
				}
				s.Quota = quota.New(s.Config.Limits.PerCaller, nil)
			}))
			plat, err := platform.New(h.server.Config, platform.Options{InFlight: h.server.InFlight})
			if err != nil {
				t.Fatal(err)
			}
			core, err := agentcore.New(h.server.Config, agentcore.Options{Method: "query", InFlight: h.server.InFlight})
			if err != nil {
				t.Fatal(err)
			}
			fd, err := foundry.New(h.server.Config, foundry.Options{Method: "query"})
			if err != nil {
				t.Fatal(err)
			}
			platURL := serveDoor(t, h, plat)
			held := make(chan int, 1)
			go func() { held <- sendFrom(t, "", http.MethodPost, platURL+"/api/reasoning_engine", queryCall, tt.token) }()
			waitFor(t, func() bool { return calls.Load() == 1 })
			if got := sendFrom(t, "", http.MethodPost, platURL+"/api/reasoning_engine", queryCall, tt.token); got != 429 {
				t.Fatalf("a second call: %d, want 429 (the quota spent)", got)
			}
			probes := []string{platURL + "/", platURL + "/health", platURL + "/healthz", platURL + "/busy",
				serveDoor(t, h, core) + agentcore.RoutePing, serveDoor(t, h, fd) + foundry.RouteReadiness}
			for _, url := range probes {
				for _, method := range []string{http.MethodGet, http.MethodHead} {
					if got := sendFrom(t, "", method, url, "", ""); got != 200 {
						t.Errorf("%s %s without a token, the quota spent: %d, want 200", method, url, got)
					}
				}
			}
			close(release)
			if got := <-held; got != 200 {
				t.Errorf("the held call: %d, want 200", got)
			}
		})
	}
}

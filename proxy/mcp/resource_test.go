package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestResourceMetadata: a door on a listener of its own that the auth
// section protects serves its protected resource metadata (RFC 9728) at
// the well-known path and at its form with the endpoint's path, to any
// caller; a request without a token is 401 whose challenge names that
// URL (as the caller reached it: a trusted proxy's X-Forwarded-Host too), and its metadata
// names the audience and the issuer. An unprotected door serves none.
func TestResourceMetadata(t *testing.T) {
	p := idptest.Start(t)
	const aud = "https://agent.example.com/mcp"
	for _, protected := range []bool{true, false} {
		cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(testMap, "AGENT", "http://127.0.0.1:1")))
		if err != nil {
			t.Fatal(err)
		}
		if protected {
			cfg.Auth = config.Auth{Issuer: p.URL, Audience: aud, Doors: []string{Name}, Line: 1}
		}
		door, err := New(cfg, Options{Path: "/mcp", Public: core.Public{Proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
		if err != nil {
			t.Fatal(err)
		}
		s := &proxy.Server{Config: cfg, Logger: zap.NewNop(), Protocols: []string{Name}}
		if protected {
			s.Auth = auth.New(cfg.Auth, nil)
		}
		srv := httptest.NewServer(s.HandlerFor(door))
		defer srv.Close()

		for _, path := range []string{RouteResourceMetadata + "/mcp", RouteResourceMetadata} {
			resp, err := testClient.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			var meta struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
				BearerMethods        []string `json:"bearer_methods_supported"`
			}
			json.NewDecoder(resp.Body).Decode(&meta)
			resp.Body.Close()
			switch {
			case !protected && resp.StatusCode != http.StatusNotFound:
				t.Errorf("unprotected, GET %s: %d, want 404", path, resp.StatusCode)
			case protected && (resp.StatusCode != 200 || meta.Resource != aud || len(meta.AuthorizationServers) != 1 ||
				meta.AuthorizationServers[0] != p.URL || len(meta.BearerMethods) != 1 || meta.BearerMethods[0] != "header"):
				t.Errorf("GET %s: %d %+v", path, resp.StatusCode, meta)
			}
		}
		if !protected {
			continue
		}
		resp, _ := post(t, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "X-Forwarded-Host", "agent.example.com", "X-Forwarded-Proto", "https")
		want := `resource_metadata="https://agent.example.com` + RouteResourceMetadata + `/mcp"`
		if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(ch, want) {
			t.Errorf("without a token: %d %q, want 401 with %s", resp.StatusCode, ch, want)
		}
	}
}

// TestResourceMetadataScopes: a protected door whose tools need scopes
// names them, each once, in its metadata (scopes_supported) and in the
// 401's challenge (scope=), with no token or a bad one: a client (the Go
// MCP SDK's client credentials handler) asks its authorization server for
// them, else it gets a token that lists only the tools needing none. A
// door whose tools need none names none, whatever other methods of the
// map need.
func TestResourceMetadataScopes(t *testing.T) {
	p := idptest.Start(t)
	const aud = "https://agent.example.com/mcp"
	// The scopes are set after parsing: config refuses them without an
	// auth section, which needs an enabled door the test's map has none of.
	scopes := map[string][]string{"ask": {"agent:read"}, "fail": {"agent:admin", "agent:read"}}
	for _, c := range []struct {
		methods []string
		want    []string
	}{
		{[]string{"ask", "story", "fail"}, []string{"agent:read", "agent:admin"}},
		{[]string{"story", "long"}, nil},
	} {
		cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(testMap, "AGENT", "http://127.0.0.1:1")))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cfg.Methods {
			m.Scopes = scopes[m.Name]
		}
		cfg.Auth = config.Auth{Issuer: p.URL, Audience: aud, Doors: []string{Name}, Line: 1}
		door, err := New(cfg, Options{Path: "/mcp", Methods: c.methods})
		if err != nil {
			t.Fatal(err)
		}
		s := &proxy.Server{Config: cfg, Logger: zap.NewNop(), Protocols: []string{Name}, Auth: auth.New(cfg.Auth, nil)}
		srv := httptest.NewServer(s.HandlerFor(door))
		defer srv.Close()

		resp, err := testClient.Get(srv.URL + RouteResourceMetadata + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		var meta map[string]any
		json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		got, _ := json.Marshal(meta["scopes_supported"])
		if want, _ := json.Marshal(c.want); resp.StatusCode != 200 || c.want == nil && meta["scopes_supported"] != nil || c.want != nil && string(got) != string(want) {
			t.Errorf("tools %v: the metadata: %d %v, want scopes_supported %s", c.methods, resp.StatusCode, meta, want)
		}
		for _, token := range []string{"", "Bearer " + p.Token(t, "alice", "https://other.example.com", "agent:read")} {
			resp, _ := post(t, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Authorization", token)
			ch := resp.Header.Get("WWW-Authenticate")
			want := `scope="` + strings.Join(c.want, " ") + `"`
			if resp.StatusCode != 401 || c.want != nil && !strings.Contains(ch, want) || c.want == nil && strings.Contains(ch, "scope=") {
				t.Errorf("tools %v, token %.10q: %d %q, want 401 naming the scopes (%v)", c.methods, token, resp.StatusCode, ch, c.want)
			}
		}
	}
}

// TestResourceMetadataMountedAtRoot: a protected door mounted at "/"
// names its metadata at the well-known path itself, no "//" in it, and
// serves it there.
func TestResourceMetadataMountedAtRoot(t *testing.T) {
	p := idptest.Start(t)
	cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(testMap, "AGENT", "http://127.0.0.1:1")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = config.Auth{Issuer: p.URL, Audience: "https://agent.example.com/", Doors: []string{Name}, Line: 1}
	door, err := New(cfg, Options{Path: "/", Mount: "/"})
	if err != nil {
		t.Fatal(err)
	}
	s := &proxy.Server{Config: cfg, Logger: zap.NewNop(), Protocols: []string{Name}, Auth: auth.New(cfg.Auth, nil)}
	srv := httptest.NewServer(s.HandlerFor(door))
	defer srv.Close()
	resp, _ := post(t, srv.URL+"/", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	ch := resp.Header.Get("WWW-Authenticate")
	want := `resource_metadata="` + srv.URL + RouteResourceMetadata + `"`
	if resp.StatusCode != 401 || !strings.Contains(ch, want) {
		t.Fatalf("POST / without a token: %d %q, want 401 with %s", resp.StatusCode, ch, want)
	}
	meta, err := testClient.Get(srv.URL + RouteResourceMetadata)
	if err != nil {
		t.Fatal(err)
	}
	meta.Body.Close()
	if meta.StatusCode != 200 {
		t.Errorf("GET %s: %d, want 200", RouteResourceMetadata, meta.StatusCode)
	}
}

// TestResourceMetadataOnPlatform: a protected door mounted on Agent
// Platform names its metadata at the platform's public URL of the mount,
// as the A2A card does (core.PlatformBase), not at the container's Host.
func TestResourceMetadataOnPlatform(t *testing.T) {
	p := idptest.Start(t)
	env := map[string]string{core.EnvEngineID: "1234567890", core.EnvEngineLocation: "europe-west4", core.EnvProject: "my-proj"}
	yaml := strings.ReplaceAll(testMap, "AGENT", "http://127.0.0.1:1") + "protocols:\n  mcp: {mount: /mcp}\n"
	cfg, err := config.Parse("test.yaml", []byte(yaml), Protocol.Kind)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = config.Auth{Issuer: p.URL, Audience: "https://agent.example.com/", Doors: []string{Name}, Line: 1}
	door, err := New(cfg, Protocol.Options(cfg.Protocols.Door(Name), core.Host{Getenv: func(name string) string { return env[name] }}))
	if err != nil {
		t.Fatal(err)
	}
	s := &proxy.Server{Config: cfg, Logger: zap.NewNop(), Protocols: []string{Name}, Auth: auth.New(cfg.Auth, nil)}
	srv := httptest.NewServer(s.HandlerFor(door))
	defer srv.Close()
	resp, _ := post(t, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	const base = "https://europe-west4-aiplatform.googleapis.com/reasoningEngines/v1/projects/my-proj/locations/europe-west4/reasoningEngines/1234567890/api"
	want := `resource_metadata="` + base + "/mcp" + RouteResourceMetadata + `"`
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(ch, want) {
		t.Errorf("POST /mcp without a token on the platform: %d %q, want 401 with %s", resp.StatusCode, ch, want)
	}
}

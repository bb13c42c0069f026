package config_test

import (
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

const mountBase = "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods: {query: {}, stream_query: {mode: stream}}\n"

// TestMounts: a door's mount takes it off a listener of its own (Listens
// leaves it out, its default port is free), it claims everything under
// its mount, or at "/" the routes its registration declares, and it is
// printed back with mount in place of listen.
func TestMounts(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(mountBase+`keep_alive_probe: {path: /busy}
protocols:
  agentcore: {mount: /, method: stream_query}
  a2a: {mount: /a2a, method: stream_query}
  mcp: {mount: /mcp}
  openai: {mount: /, method: stream_query}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Listens(); len(got) != 1 || got[0][0] != config.ProtocolAgentPlatform {
		t.Errorf("Listens = %v, want the platform's only", got)
	}
	claims := map[string]string{}
	for _, d := range c.Mounted() {
		var l []string
		for _, cl := range c.Claims(d) {
			l = append(l, cl.String())
		}
		claims[d.Name] = strings.Join(l, " ")
	}
	for name, want := range map[string]string{
		"agentcore": "/invocations /ping",
		"a2a":       "/a2a/…",
		"mcp":       "/mcp/…",
		"openai":    "/v1/…",
	} {
		if claims[name] != want {
			t.Errorf("Claims(%s) = %q, want %q", name, claims[name], want)
		}
	}
	for path, want := range map[string]bool{"/a2a": true, "/a2a/": true, "/a2a/x": true, "/a2ab": false, "/mcp": true, "/mcpx": false} {
		if got := (config.Claim{Path: strings.TrimSuffix(path, "/"), Tree: true}).Covers(path); !got {
			t.Errorf("a tree does not cover its own path %q", path)
		}
		covered := false
		for _, d := range c.Mounted() {
			for _, cl := range c.Claims(d) {
				covered = covered || cl.Covers(path)
			}
		}
		if covered != want {
			t.Errorf("%s covered = %v, want %v", path, covered, want)
		}
	}
	again, err := Parse("printed.yaml", c.Expanded())
	if err != nil || string(again.Expanded()) != string(c.Expanded()) {
		t.Fatalf("printed and parsed again: %v\n%s", err, c.Expanded())
	}
	if d := again.Protocols.Door("a2a"); d == nil || d.Mount != "/a2a" {
		t.Errorf("printed a2a = %+v, want mounted at /a2a\n%s", d, c.Expanded())
	}
	if strings.Contains(string(c.Expanded()), "path:") && strings.Contains(string(c.Expanded()), `mcp:
    mount: "/mcp"
    path`) {
		t.Errorf("a mounted MCP door printed with a path:\n%s", c.Expanded())
	}
}

// TestMountCollisions is the route-collision table: every pair of owners
// of the platform's listener that claim a path in common is a problem at
// the later one, naming both with their lines; so are a bad mount and a
// mount beside listen.
func TestMountCollisions(t *testing.T) {
	tests := []struct{ name, protocols, want string }{
		{"invocations twice", "  agentcore: {mount: /, method: query}\n  foundry: {mount: /, method: query}\n",
			`sidecar.yaml:5: protocols.foundry.mount: "/" claims /invocations, which protocols.agentcore.mount "/" (line 4) serves`},
		{"one prefix", "  a2a: {mount: /x, method: query}\n  mcp: {mount: /x}\n",
			`sidecar.yaml:5: protocols.mcp.mount: "/x" claims /x/…, which protocols.a2a.mount "/x" (line 4) serves`},
		{"nested prefix", "  a2a: {mount: /x, method: query}\n  mcp: {mount: /x/mcp}\n",
			`sidecar.yaml:5: protocols.mcp.mount: "/x/mcp" claims /x/mcp/…, which protocols.a2a.mount "/x" (line 4) serves`},
		{"prefix over a root route", "  openai: {mount: /, method: query}\n  mcp: {mount: /v1}\n",
			`sidecar.yaml:5: protocols.mcp.mount: "/v1" claims /v1/…, which protocols.openai.mount "/" (line 4) serves`},
		{"under /api", "  mcp: {mount: /api/mcp}\n",
			`sidecar.yaml:4: protocols.mcp.mount: "/api/mcp" claims /api/mcp/…, which the platform's contract (/api/…) serves`},
		{"/api itself", "  mcp: {mount: /api}\n", `protocols.mcp.mount: "/api" claims /api/…, which the platform's contract (/api/…) serves`},
		{"healthz", "  mcp: {mount: /healthz}\n", `protocols.mcp.mount: "/healthz" claims /healthz/…, which the platform's health probe /healthz serves`},
		{"health", "  a2a: {mount: /health, method: query}\n", `which the platform's health probe /health serves`},
		{"root route", "  a2a: {mount: /, method: query}\n", `protocols.a2a.mount: "/" claims /, which the platform's health probe / serves`},
		{"mcp at root", "  mcp: {mount: /}\n", `protocols.mcp.mount: "/" claims /, which the platform's health probe / serves`},
		{"keep-alive probe", "  mcp: {mount: /busy}\n", `sidecar.yaml:4: protocols.mcp.mount: "/busy" claims /busy/…, which keep_alive_probe.path "/busy" (line 5) serves`},
		{"keep-alive probe under", "  mcp: {mount: /b}\n", ``},
		{"listen and mount", "  a2a: {mount: /a2a, listen: \":9000\", method: query}\n",
			`sidecar.yaml:4: protocols.a2a.listen: a door has a listener of its own (listen) or is mounted on the platform's (mount, line 4), not both`},
		{"mcp path", "  mcp: {mount: /m, path: /mcp}\n", `sidecar.yaml:4: protocols.mcp.path: a mounted door's endpoint is its mount ("/m", line 4)`},
		{"relative", "  mcp: {mount: mcp}\n", `protocols.mcp.mount: "mcp" does not start with "/"`},
		{"trailing slash", "  mcp: {mount: /mcp/}\n", `protocols.mcp.mount: "/mcp/" is not a clean path (want "/mcp")`},
		{"dot segments", "  mcp: {mount: /a/../mcp}\n", `is not a clean path`},
		{"escape", "  mcp: {mount: /m%63p}\n", `want a plain path`},
		{"platform off", "  agent_platform: {enabled: false}\n  mcp: {mount: /mcp}\n",
			`sidecar.yaml:5: protocols.mcp.mount: a mounted door is served on the platform's listener, and protocols.agent_platform is off`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probe := "keep_alive_probe: {path: /busy}\n"
			if strings.Contains(tt.protocols, "enabled: false") {
				probe = ""
			}
			if tt.name == "keep-alive probe under" {
				probe = "keep_alive_probe: {path: /b/busy}\n"
				tt.want = `protocols.mcp.mount: "/b" claims /b/…, which keep_alive_probe.path "/b/busy" (line 5) serves`
			}
			_, err := Parse("sidecar.yaml", []byte(mountBase+"protocols:\n"+tt.protocols+probe))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v,\nwant %q", err, tt.want)
			}
		})
	}
	// What shares the listener without a common path is fine: both of
	// the invocations doors on their own listeners, one mounted.
	if _, err := Parse("sidecar.yaml", []byte(mountBase+"protocols:\n  agentcore: {mount: /, method: query}\n  foundry: {method: query}\n  a2a: {mount: /a2a, method: query}\n  mcp: {mount: /a2a-mcp}\n")); err != nil {
		t.Errorf("disjoint mounts: %v", err)
	}
}

// TestMountsWellKnown: a protected MCP door mounted at /mcp also claims
// RFC 9728's path of its metadata at the listener's root (and the root's
// own when the audience is the origin: issue 37); unprotected, it
// claims only its mount. Another door mounted over that path is refused,
// naming both.
func TestMountsWellKnown(t *testing.T) {
	const auth = "auth: {issuer: \"http://127.0.0.1:1\", audience: \"https://agent.example.com/mcp\"}\n"
	for _, tt := range []struct{ name, yaml, want string }{
		{"protected", "protocols:\n  mcp: {mount: /mcp}\n" + auth, "/mcp/… /.well-known/oauth-protected-resource/mcp"},
		{"protected for the origin", "protocols:\n  mcp: {mount: /mcp}\n" + strings.Replace(auth, "example.com/mcp", "example.com", 1),
			"/mcp/… /.well-known/oauth-protected-resource/mcp /.well-known/oauth-protected-resource"},
		{"open", "protocols:\n  mcp: {mount: /mcp}\n", "/mcp/…"},
		{"other doors", "protocols:\n  mcp: {mount: /mcp}\n  a2a: {mount: /a2a, method: query}\n" + strings.Replace(auth, "}", ", doors: [a2a]}", 1), "/mcp/…"},
	} {
		c, err := Parse("sidecar.yaml", []byte(mountBase+tt.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var l []string
		for _, cl := range c.Claims(c.Protocols.Door("mcp")) {
			l = append(l, cl.String())
		}
		if got := strings.Join(l, " "); got != tt.want {
			t.Errorf("%s: Claims(mcp) = %q, want %q", tt.name, got, tt.want)
		}
	}
	_, err := Parse("sidecar.yaml", []byte(mountBase+"protocols:\n  mcp: {mount: /mcp}\n  a2a: {mount: /.well-known, method: query}\n"+auth))
	want := `sidecar.yaml:5: protocols.a2a.mount: "/.well-known" claims /.well-known/…, which protocols.mcp.mount "/mcp" (line 4) serves`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a door over the metadata's path: %v, want %s", err, want)
	}
}

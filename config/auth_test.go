package config_test

import (
	"strings"
	"testing"
	"time"
)

// TestAuth: the auth section decodes issuer (exactly: a trailing slash
// is part of it, issue 37), jwks_url, audience and doors; without doors, every enabled door
// but agent_platform is protected; http is taken on loopback hosts only.
func TestAuth(t *testing.T) {
	base := mountBase + "protocols:\n  a2a: {method: stream_query}\n  mcp: {}\n"
	c, err := Parse("sidecar.yaml", []byte(base+"auth: {issuer: \"https://idp.example.com/\", audience: \"https://agent.example.com\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Auth
	if a.Issuer != "https://idp.example.com/" || a.Audience != "https://agent.example.com" || strings.Join(a.Doors, ",") != "a2a,mcp" {
		t.Errorf("Auth = %+v", a)
	}
	if !a.Protects("mcp") || a.Protects("agent_platform") {
		t.Errorf("Protects: mcp %v, agent_platform %v; want true, false", a.Protects("mcp"), a.Protects("agent_platform"))
	}
	c, err = Parse("sidecar.yaml", []byte(base+"auth:\n  issuer: http://127.0.0.1:4444\n  jwks_url: http://localhost:4444/jwks\n  audience: urn:agent\n  doors: [mcp, agent_platform]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Auth; a.JWKSURL != "http://localhost:4444/jwks" || strings.Join(a.Doors, ",") != "mcp,agent_platform" || a.Protects("a2a") {
		t.Errorf("Auth = %+v", a)
	}
	again, err := Parse("printed.yaml", c.Expanded())
	if err != nil || again.Auth.Issuer != c.Auth.Issuer || again.Auth.JWKSURL != c.Auth.JWKSURL || again.Auth.Audience != c.Auth.Audience ||
		strings.Join(again.Auth.Doors, ",") != strings.Join(c.Auth.Doors, ",") {
		t.Errorf("printed and parsed again: %+v, %v\n%s", again.Auth, err, c.Expanded())
	}
	if c, err := Parse("sidecar.yaml", []byte(base)); err != nil || c.Auth.Protects("mcp") {
		t.Errorf("no auth section: %v, protects mcp %v", err, c.Auth.Protects("mcp"))
	}
}

// TestAuthProblems: each mistake of the section is refused at its line.
func TestAuthProblems(t *testing.T) {
	base := mountBase + "protocols:\n  mcp: {}\n"
	tests := []struct{ name, section, want string }{
		{"no issuer", "{audience: urn:a}", `sidecar.yaml:5: auth.issuer: missing`},
		{"no audience", "{issuer: \"https://idp.example.com\"}", `sidecar.yaml:5: auth.audience: missing`},
		{"http issuer", "{issuer: \"http://idp.example.com\", audience: urn:a}", `auth.issuer: "http://idp.example.com": http only on a loopback host`},
		{"http jwks", "{issuer: \"https://idp.example.com\", jwks_url: \"http://10.0.0.1/jwks\", audience: urn:a}", `auth.jwks_url: "http://10.0.0.1/jwks": http only on a loopback host`},
		{"other scheme", "{issuer: \"ftp://idp.example.com\", audience: urn:a}", `scheme "ftp" is not https`},
		{"relative", "{issuer: /idp, audience: urn:a}", `want an absolute https URL`},
		{"query", "{issuer: \"https://idp.example.com/?a=1\", audience: urn:a}", `want an absolute https URL without user, query or fragment`},
		{"empty audience", "{issuer: \"https://idp.example.com\", audience: \"\"}", `auth.audience: "": want the resource`},
		{"door not enabled", "{issuer: \"https://idp.example.com\", audience: urn:a, doors: [a2a]}", `auth.doors: "a2a" is not an enabled door (enabled: agent_platform, mcp)`},
		{"empty doors", "{issuer: \"https://idp.example.com\", audience: urn:a, doors: []}", `auth.doors: empty`},
		{"unknown key", "{issuer: \"https://idp.example.com\", audience: urn:a, secret: x}", `auth.secret: unknown key (want issuer, jwks_url, audience, doors or headers)`},
		{"not a mapping", "on", `auth: want a mapping with issuer, jwks_url, audience, doors and headers`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := base + "auth: " + tt.section + "\n"
			_, err := Parse("sidecar.yaml", []byte(yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %v, want a problem containing %q", yaml, err, tt.want)
			}
		})
	}
	_, err := Parse("sidecar.yaml", []byte(mountBase+"auth: {issuer: \"https://idp.example.com\", audience: urn:a}\n"))
	if err == nil || !strings.Contains(err.Error(), "no door to protect") {
		t.Errorf("auth with only the platform: %v, want no door to protect", err)
	}
}

// TestPerCaller: limits.per_caller decodes requests, per (1m by default)
// and concurrent; each mistake is refused at its line.
func TestPerCaller(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(mountBase+"limits: {per_caller: {requests: 60, concurrent: 4}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pc := c.Limits.PerCaller; pc.Requests != 60 || pc.Per != time.Minute || pc.Concurrent != 4 || !pc.On() {
		t.Errorf("PerCaller = %+v", pc)
	}
	if c, _ := Parse("sidecar.yaml", []byte(mountBase)); c.Limits.PerCaller.On() {
		t.Errorf("no per_caller: %+v is on", c.Limits.PerCaller)
	}
	for _, tt := range []struct{ section, want string }{
		{"{requests: -1}", `sidecar.yaml:3: limits.per_caller.requests: "-1" is not a whole number ≥ 0`},
		{"{requests: 2000000}", `limits.per_caller.requests: 2000000 is more than 1000000`},
		{"{requests: 5, per: 10ms}", `limits.per_caller.per: 10ms is not 1s to 24h`},
		{"{requests: 5, per: 60}", `limits.per_caller.per: 60 has no unit`},
		{"{burst: 5}", `limits.per_caller.burst: unknown key (want requests, per or concurrent)`},
		{"5", `limits.per_caller: want a mapping with requests, per and concurrent`},
	} {
		yaml := mountBase + "limits: {per_caller: " + tt.section + "}\n"
		if _, err := Parse("sidecar.yaml", []byte(yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want a problem containing %q", yaml, err, tt.want)
		}
	}
}

// TestAuthForwardsNoToken: forwarding Authorization to the agent beside an
// auth section is refused: the token stays with the sidecar.
func TestAuthForwardsNoToken(t *testing.T) {
	yaml := mountBase + "protocols:\n  mcp: {}\nheaders: {forward: [authorization]}\nauth: {issuer: \"https://idp.example.com\", audience: urn:a}\n"
	if _, err := Parse("sidecar.yaml", []byte(yaml)); err == nil || !strings.Contains(err.Error(), "headers.forward: lists Authorization while the auth section checks tokens") {
		t.Errorf("Parse = %v, want Authorization in headers.forward refused", err)
	}
}

// TestScopes: a method's scopes decode and print back; a bad or repeated
// scope, and scopes without an auth section, are refused at their line.
func TestScopes(t *testing.T) {
	authed := "upstream: {url: \"http://127.0.0.1:8000\"}\nprotocols:\n  mcp: {}\nauth: {issuer: \"https://idp.example.com\", audience: urn:a}\nmethods:\n  query: {scopes: [agent:query, \"tools:*\"]}\n"
	c, err := Parse("sidecar.yaml", []byte(authed))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Methods[0].Scopes, " "); got != "agent:query tools:*" {
		t.Errorf("scopes = %q", got)
	}
	if again, err := Parse("printed.yaml", c.Expanded()); err != nil || strings.Join(again.Methods[0].Scopes, " ") != "agent:query tools:*" {
		t.Errorf("printed and parsed again: %v %v", again, err)
	}
	for _, tt := range []struct{ yaml, want string }{
		{strings.Replace(authed, "[agent:query, \"tools:*\"]", "[\"a b\"]", 1), `sidecar.yaml:6: methods.query.scopes: "a b" is not a scope`},
		{strings.Replace(authed, "[agent:query, \"tools:*\"]", "[x, x]", 1), `methods.query.scopes: "x" is listed twice`},
		{mountBase[:strings.Index(mountBase, "methods:")] + "methods:\n  query: {scopes: [x]}\n", `sidecar.yaml:3: methods.query.scopes: set, but no auth section checks tokens`},
	} {
		if _, err := Parse("sidecar.yaml", []byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

// TestAuthHeaders: auth.headers maps claims to header names, printed
// back; a name that is no header, one the sidecar or HTTP owns, one named
// twice, and an unknown claim are refused.
func TestAuthHeaders(t *testing.T) {
	base := mountBase + "protocols:\n  mcp: {}\nauth: {issuer: \"https://idp.example.com\", audience: urn:a, headers: HEADERS}\n"
	c, err := Parse("sidecar.yaml", []byte(strings.Replace(base, "HEADERS", "{sub: x-user-id, scope: X-User-Scopes}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Auth.Headers; len(h) != 2 || h["sub"] != "X-User-Id" || h["scope"] != "X-User-Scopes" {
		t.Errorf("Headers = %v", h)
	}
	if again, err := Parse("printed.yaml", c.Expanded()); err != nil || again.Auth.Headers["sub"] != "X-User-Id" || again.Auth.Headers["scope"] != "X-User-Scopes" {
		t.Errorf("printed and parsed again: %v %v\n%s", again, err, c.Expanded())
	}
	for _, tt := range []struct{ headers, want string }{
		{"{sub: \"X User\"}", `auth.headers.sub: "X User" is not a header name`},
		{"{sub: authorization}", `auth.headers.sub: "authorization" is a header the sidecar or HTTP owns`},
		{"{sub: X-Sidecar-Caller}", `is a header the sidecar or HTTP owns`},
		{"{sub: X-A, scope: x-a}", `auth.headers.scope: "x-a" names two claims`},
		{"{email: X-Email}", `auth.headers.email: unknown key (want sub, scope or client_id)`},
	} {
		yaml := strings.Replace(base, "HEADERS", tt.headers, 1)
		if _, err := Parse("sidecar.yaml", []byte(yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("headers %s: %v, want %q", tt.headers, err, tt.want)
		}
	}
}

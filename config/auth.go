package config

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Auth is the auth section: the identity provider whose JWT bearer
// tokens the protected doors require (package auth verifies them).
//
//	auth:
//	  issuer: https://idp.example.com        # OIDC discovery at {issuer}/.well-known/openid-configuration
//	  jwks_url: https://idp.example.com/jwks # optional, instead of discovery
//	  audience: https://agent.example.com    # the aud a token must carry (RFC 8707)
//	  doors: [mcp, a2a, openai]              # default: every enabled door but agent_platform
type Auth struct {
	// Issuer is the iss a token must carry, and where OIDC discovery
	// finds the keys unless JWKSURL is set: an https URL, or http on a
	// loopback host (a local provider, tests). "" when there is no auth
	// section: no door checks tokens.
	Issuer string
	// JWKSURL is the issuer's key set, fetched directly instead of
	// through discovery; "" to discover it. https, or http on loopback.
	JWKSURL string
	// Audience is the aud a token must carry: the resource the tokens
	// are issued for (RFC 8707), one for every door: the deployment's
	// origin, e.g. https://agent.example.com (docs/auth.md).
	Audience string
	// Doors are the protected doors' names. Default: every enabled door
	// but agent_platform, whose callers the platform authenticates.
	Doors []string
	// Headers name the headers the agent gets a verified caller's
	// identity in, by what they carry (AuthClaims: sub, scope,
	// client_id), e.g. {sub: X-User-Id}. The sidecar sets them on a
	// verified caller's calls and removes them from every request a
	// caller sends, so no caller can name itself.
	Headers map[string]string
	// Line is where the section is declared, for messages.
	Line int
}

// Protects reports whether the door called name requires a token.
func (a *Auth) Protects(name string) bool {
	return a.Issuer != "" && slices.Contains(a.Doors, name)
}

// auth decodes the auth section; the doors it names are checked against
// the enabled ones by checkAuthDoors, once protocols is decoded.
func (p *parser) auth(e entry, a *Auth) (doorsLine int) {
	if !p.mapping(e.val, e.name, "a mapping with issuer, jwks_url, audience, doors and headers") {
		return 0
	}
	a.Line = e.key.Line
	seen := map[string]bool{}
	for _, f := range p.entries(e.val, e.name) {
		key := join(e.name, f.name)
		seen[f.name] = true
		switch f.name {
		case "issuer", "jwks_url", "audience":
			v, ok := p.url(f, key)
			if !ok {
				continue
			}
			if f.name != "audience" {
				if err := CheckIdPURL(v); err != nil {
					p.addf(f.val.Line, key, "%v", err)
					continue
				}
			} else if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				p.addf(f.val.Line, key, "%q: want the resource the tokens are issued for, e.g. https://agent.example.com", v)
				continue
			}
			switch f.name {
			case "issuer":
				a.Issuer = v // exactly: a trailing slash is part of the iss (Auth0)
			case "jwks_url":
				a.JWKSURL = v
			default:
				a.Audience = v
			}
		case "doors":
			list, ok := Decoder{p}.Strings(Entry{Name: f.name, Key: f.key, Value: f.val}, key, "door names")
			if !ok {
				continue
			}
			if len(list) == 0 {
				p.addf(f.val.Line, key, "empty (want the doors that require a token, e.g. [mcp, a2a], or no doors key for every enabled door but agent_platform)")
				continue
			}
			a.Doors, doorsLine = list, f.val.Line
		case "headers":
			p.authHeaders(f, key, a)
		default:
			p.unknown(f, e.name, "issuer", "jwks_url", "audience", "doors", "headers")
		}
	}
	if !seen["issuer"] {
		p.addf(a.Line, join(e.name, "issuer"), "missing: the iss a token must carry (want issuer: https://idp.example.com)")
	}
	if !seen["audience"] {
		p.addf(a.Line, join(e.name, "audience"), "missing: the aud a token must carry, the resource it is for (want audience: https://agent.example.com)")
	}
	return doorsLine
}

// checkAuthDoors checks that the doors auth.doors names are enabled, or
// sets them to every enabled door but agent_platform.
func (p *parser) checkAuthDoors(c *Config, doorsLine int) {
	a := &c.Auth
	if a.Line == 0 {
		return
	}
	enabled := []string{}
	if c.Protocols.AgentPlatform {
		enabled = append(enabled, ProtocolAgentPlatform)
	}
	for _, d := range c.Protocols.Doors {
		enabled = append(enabled, d.Name)
	}
	if slices.Contains(c.Headers.Forward, "Authorization") {
		p.addf(a.Line, "headers.forward", "lists Authorization while the auth section checks tokens: a caller's token never goes to the agent (want it out of headers.forward)")
	}
	if a.Doors == nil {
		for _, name := range enabled {
			if name != ProtocolAgentPlatform {
				a.Doors = append(a.Doors, name)
			}
		}
		if len(a.Doors) == 0 {
			p.addf(a.Line, "auth", "no door to protect: only agent_platform is enabled, whose callers the platform authenticates (want doors: [agent_platform] to check its tokens too, or no auth section)")
		}
		return
	}
	for _, name := range a.Doors {
		if !slices.Contains(enabled, name) {
			p.addf(doorsLine, "auth.doors", "%q is not an enabled door (enabled: %s)", name, strings.Join(enabled, ", "))
		}
	}
}

// CheckIdPURL accepts an https URL, or an http one whose host is loopback
// (localhost, 127.0.0.0/8, ::1): keys fetched in the clear from elsewhere
// could be anyone's.
func CheckIdPURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: want an absolute https URL without user, query or fragment, e.g. https://idp.example.com", v)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%q: http only on a loopback host (localhost, 127.0.0.1, ::1); want https", v)
	}
	return fmt.Errorf("%q: scheme %q is not https", v, u.Scheme)
}

// loopbackHost reports whether host is localhost or a loopback IP.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// scopes decodes a method's scopes: OAuth scope tokens (RFC 6749 §3.3:
// printable ASCII but space, '"' and '\\'), each once.
func (p *parser) scopes(e entry, path string, m *Method) {
	list, ok := Decoder{p}.Strings(Entry{Name: e.name, Key: e.key, Value: e.val}, path, "scope names")
	if !ok {
		return
	}
	for i, sc := range list {
		if sc == "" || strings.ContainsFunc(sc, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }) {
			p.addf(e.val.Content[i].Line, path, "%q is not a scope (want printable ASCII without spaces, quotes or backslashes, e.g. tools:call)", sc)
			return
		}
		if slices.Contains(list[:i], sc) {
			p.addf(e.val.Content[i].Line, path, "%q is listed twice", sc)
			return
		}
	}
	m.Scopes, m.ScopesLine = list, e.key.Line
}

// checkScopes refuses scopes without an auth section: nothing would
// check them.
func (p *parser) checkScopes(c *Config, methods []methodDraft) {
	if c.Auth.Line > 0 {
		return
	}
	for _, d := range methods {
		if len(d.m.Scopes) > 0 {
			p.addf(d.m.ScopesLine, "methods."+d.m.Name+".scopes", "set, but no auth section checks tokens: nothing would check them (want an auth section, or no scopes)")
		}
	}
}

// AuthClaims are what auth.headers may pass the agent of a verified
// caller: its token's subject, its scopes (space-separated), its client.
var AuthClaims = []string{"sub", "scope", "client_id"}

// authHeaders decodes auth.headers: each of AuthClaims to a header name
// of its own, none a header the sidecar or HTTP owns.
func (p *parser) authHeaders(e entry, path string, a *Auth) {
	if !p.mapping(e.val, path, "a mapping of sub, scope and client_id to header names, e.g. {sub: X-User-Id}") {
		return
	}
	a.Headers = map[string]string{}
	seen := map[string]bool{}
	for _, f := range p.entries(e.val, path) {
		key := join(path, f.name)
		if !slices.Contains(AuthClaims, f.name) {
			p.unknown(f, path, AuthClaims...)
			continue
		}
		v, ok := p.scalar(f, key)
		if !ok {
			continue
		}
		name := http.CanonicalHeaderKey(v)
		switch {
		case !ValidHeaderName(v):
			p.addf(f.val.Line, key, "%q is not a header name", v)
		case reservedHeader(name):
			p.addf(f.val.Line, key, "%q is a header the sidecar or HTTP owns (want a name of your own, e.g. X-User-Id)", v)
		case seen[name]:
			p.addf(f.val.Line, key, "%q names two claims", v)
		default:
			seen[name] = true
			a.Headers[f.name] = name
		}
	}
}

// reservedHeader reports whether name (canonical) is one an identity
// header must not be: the ones headers.forward and set may not name
// (hop-by-hop, framing, the sidecar's own), the credentials, and the
// trace and request ids the sidecar forwards for its own reasons.
func reservedHeader(name string) bool {
	switch name {
	case "Authorization", "Cookie", "Traceparent", "Tracestate", "X-Cloud-Trace-Context", "X-Request-Id":
		return true
	}
	if slices.ContainsFunc(hopHeaders, func(h string) bool { return strings.EqualFold(h, name) }) {
		return true
	}
	return slices.ContainsFunc(managedPrefixes, func(p string) bool {
		return len(name) >= len(p) && strings.EqualFold(name[:len(p)], p)
	})
}

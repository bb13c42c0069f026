package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/sidecar-dev/sidecar/auth"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// RouteResourceMetadata is where a door the auth section protects serves
// its OAuth 2.0 Protected Resource Metadata (RFC 9728), as MCP's
// authorization specification asks: a client refused 401 reads it (the
// challenge's resource_metadata names its URL) to find the authorization
// server. On a listener of its own it is served there and with the
// endpoint's path appended (RFC 9728's well-known form for
// https://host/mcp); mounted, under the mount.
const RouteResourceMetadata = "/.well-known/oauth-protected-resource"

// resourceMetadata is the door's metadata when the auth section protects
// it, else nil: the resource is auth.audience (the URL the tokens are
// issued for: the service's origin, which every door shares and MCP
// clients take for a server under it), its authorization server auth.issuer, tokens in the
// Authorization header only, and scopes_supported the scopes its tools
// need (none: left out), which clients ask their authorization server for
// when the challenge names none.
func resourceMetadata(cfg *config.Config, scopes []string) []byte {
	if !cfg.Auth.Protects(Name) {
		return nil
	}
	b, _ := json.Marshal(struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		BearerMethods        []string `json:"bearer_methods_supported"`
		ResourceName         string   `json:"resource_name"`
		ScopesSupported      []string `json:"scopes_supported,omitempty"`
	}{cfg.Auth.Audience, []string{cfg.Auth.Issuer}, []string{"header"}, "sidecar MCP", scopes})
	return b
}

// ScopesSupported are the scopes the door's tools need, each once, in the
// tools' order; nil when none does or auth does not protect the door. A
// refusal's 401 challenge names them (scope=, as MCP's authorization
// specification asks), so that a client asks its authorization server for
// a token that may call the tools, not one that sees only those needing
// none.
func (d *Door) ScopesSupported() []string { return d.scopes }

// metadataPath is RFC 9728's path of the metadata of an endpoint at
// endpoint: the well-known path, then the endpoint's path but "/".
func metadataPath(endpoint string) string {
	if endpoint == "/" {
		return RouteResourceMetadata
	}
	return RouteResourceMetadata + endpoint
}

// isOrigin reports whether aud is an origin (https://host, no path): the
// one audience every door of a port can share (docs/auth.md), whose
// metadata RFC 9728 puts at the root's well-known path.
func isOrigin(aud string) bool {
	u, err := url.Parse(aud)
	return err == nil && u.Scheme != "" && u.Host != "" && u.Path == "" && u.RawQuery == "" && u.Fragment == ""
}

// isMetadata reports whether path is where the door serves its metadata:
// the well-known path (under its mount when mounted) and RFC 9728's path
// of its endpoint (at the listener's root when mounted, which the
// mount's WellKnown claims).
func (d *Door) isMetadata(path string) bool {
	if d.metadata == nil {
		return false
	}
	endpoint := d.opts.Path
	if d.opts.Mount != "" {
		endpoint = d.opts.Mount
	}
	return path == RouteResourceMetadata || path == metadataPath(endpoint)
}

// Public: the metadata is read before a client has a token.
func (d *Door) Public(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && d.isMetadata(r.URL.Path)
}

// ResourceMetadata is the URL of the door's metadata as the caller of r
// reaches it (a refusal's challenge names it): Options.Public's base, as
// the A2A card's.
func (d *Door) ResourceMetadata(r *http.Request) string {
	if d.opts.Mount != "" && d.opts.Mount != "/" {
		// Under the mount: a proxy in front that routes only the mount's
		// paths to the sidecar reaches it too.
		return d.opts.Public.Base(r) + d.opts.Mount + RouteResourceMetadata
	}
	return d.opts.Public.Base(r) + metadataPath(d.opts.Path)
}

// serveMetadata answers GET and HEAD of the metadata.
func (d *Door) serveMetadata(w http.ResponseWriter, r *http.Request, refuse core.Refuse) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		d.notAllowed(w, r, refuse, "GET, HEAD")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(d.metadata)
	}
}

// listFor is tools/list's result for the caller of r: every tool, built
// once, unless a tool needs scopes on a door the auth section protects;
// then the tools the caller's token may call (a tool needing scopes it
// does not grant is left out, as tools/call would refuse it 403), built
// for the call, and in 2026-07-28's form cached privately.
func (d *Door) listFor(r *http.Request, modern bool) []byte {
	if len(d.scopes) == 0 {
		if modern {
			return d.listModern
		}
		return d.listLegacy
	}
	caller := auth.CallerOf(r.Context())
	b := []byte(`{"tools":[`)
	n := 0
	for _, name := range d.order {
		m := d.tools[name].method
		if len(m.Scopes) > 0 && (caller == nil || !caller.HasScopes(m.Scopes)) {
			continue
		}
		if n++; n > 1 {
			b = append(b, ',')
		}
		b = appendTool(b, name, m)
	}
	b = append(b, ']')
	if modern {
		return fmt.Appendf(b, `,"resultType":"complete","ttlMs":%d,"cacheScope":"private"}`, listTTL)
	}
	return append(b, '}')
}

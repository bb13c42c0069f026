package doors_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
	"github.com/sidecar-dev/sidecar/proxy/mcp"
	"github.com/sidecar-dev/sidecar/upstream"
)

// origin is the audience the one-port tests' tokens are for: the
// service's origin, which every door on the port shares (docs/auth.md).
const origin = "https://agent.example.com"

// onePort serves the platform's door with A2A mounted at /a2a and MCP at
// /mcp, both protected by p's tokens for aud ("": the port's own origin,
// http://127.0.0.1:port), as the program builds them (proxy.Mounted), in
// front of an agent whose /echo answers; it returns the port's URL.
func onePort(t *testing.T, p *idptest.IdP, aud string) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	if aud == "" {
		aud = "http://" + srv.Listener.Addr().String()
	}
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"hello"}`)
	}))
	t.Cleanup(agent.Close)
	cfg, err := Parse("sidecar.yaml", []byte(`
upstream: {url: "`+agent.URL+`"}
methods:
  query: {call: POST /echo}
protocols:
  a2a: {mount: /a2a, method: query, card: {name: Echo, description: Echoes.}}
  mcp: {mount: /mcp}
auth: {issuer: "`+p.URL+`", audience: "`+aud+`", doors: [a2a, mcp]}
`))
	if err != nil {
		t.Fatal(err)
	}
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	s := &proxy.Server{Config: cfg, Logger: zap.NewNop(), Protocols: doors.Names(doors.All), Auth: auth.New(cfg.Auth, nil),
		Agent: dialect.Agent{Agent: core.Mux{Plain: client}, MaxReply: cfg.Limits.ReplyBytes, MaxRecord: cfg.Limits.RecordBytes}}
	host := core.Host{InFlight: s.InFlight, Getenv: func(string) string { return "" }}
	root, err := doors.Build(doors.All, cfg, config.ProtocolAgentPlatform, host)
	if err != nil {
		t.Fatal(err)
	}
	var mounts []proxy.Mount
	for _, m := range cfg.Mounted() {
		d, err := doors.Build(doors.All, cfg, m.Name, host)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := d.(io.Closer); ok {
			t.Cleanup(func() { c.Close() })
		}
		mounts = append(mounts, proxy.Mount{Path: m.Mount, Claims: cfg.Claims(m), Handler: s.HandlerFor(d)})
	}
	srv.Config.Handler = proxy.Mounted(s.HandlerFor(root), mounts)
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		client.Close()
	})
	return srv.URL
}

// rpcDoors are the JSON-RPC doors of onePort: where, and a request.
var rpcDoors = []struct{ name, path, body string }{
	{"a2a", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`},
	{"mcp", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
}

// post posts body to url with Authorization authz ("": none), as the
// JSON-RPC doors' clients do, and returns the status and the body.
func post(t *testing.T, url, body, authz string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAuthRefusalOneShape (issue 37 item 6; item 1 through the doors): a
// request the token check refuses is the same JSON-RPC error on the A2A
// and MCP doors: 401, -32600 (invalid request: the caller's to mend), one
// message, written without HTML escaping (<JWT>, not \u003cJWT\u003e). A
// token without sub is refused alike, saying so.
func TestAuthRefusalOneShape(t *testing.T) {
	p := idptest.Start(t)
	base := onePort(t, p, origin)
	noSub := p.Claims("", origin, "")
	for _, tt := range []struct {
		name, authz, says string
	}{
		{"no token", "", "this door requires a bearer token (Authorization: Bearer <JWT>)"},
		{"no sub", "Bearer " + p.Sign(t, noSub, "rsa1", "RS256"), "the token has no sub"},
	} {
		messages := map[string]string{}
		for _, d := range rpcDoors {
			status, body := post(t, base+d.path, d.body, tt.authz)
			var rpc struct {
				JSONRPC string
				Error   *struct {
					Code    int
					Message string
				}
			}
			if json.Unmarshal([]byte(body), &rpc); status != http.StatusUnauthorized || rpc.JSONRPC != "2.0" || rpc.Error == nil ||
				rpc.Error.Code != -32600 || !strings.Contains(rpc.Error.Message, tt.says) || strings.Contains(body, `\u003c`) {
				t.Errorf("%s, %s: %d %s, want 401, JSON-RPC -32600 saying %q unescaped", tt.name, d.name, status, body, tt.says)
				continue
			}
			messages[d.name] = rpc.Error.Message
		}
		if messages["a2a"] != messages["mcp"] {
			t.Errorf("%s: A2A says %q, MCP %q: want one text", tt.name, messages["a2a"], messages["mcp"])
		}
	}
}

// TestOriginAudienceOnePort (issue 37 item 7): with one audience for
// every door, the service's origin (docs/auth.md), a protected A2A door
// and a protected MCP door on one port both take a token for it, and
// MCP's protected resource metadata (RFC 9728) names it as the resource
// wherever a client looks: the challenge's URL under the mount, RFC 9728's
// path for the endpoint, and the origin's own (the root), where the Go
// MCP SDK looks for a resource that is the origin
// (oauthex.GetProtectedResourceMetadata checks it names exactly that).
func TestOriginAudienceOnePort(t *testing.T) {
	p := idptest.Start(t)
	base := onePort(t, p, "")
	token := "Bearer " + p.Token(t, "alice", base, "")
	for _, d := range rpcDoors {
		if status, body := post(t, base+d.path, d.body, token); status != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Errorf("%s with a token for the origin %s: %d %s, want 200 with a result", d.name, base, status, body)
		}
	}
	for _, path := range []string{"/mcp" + mcp.RouteResourceMetadata, mcp.RouteResourceMetadata + "/mcp", mcp.RouteResourceMetadata} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Resource string }
		json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || meta.Resource != base {
			t.Errorf("GET %s: %d, resource %q; want 200 naming %s", path, resp.StatusCode, meta.Resource, base)
		}
	}
	// The Go MCP SDK's client (auth/extauth), calling base/mcp, takes the
	// root's metadata when its resource is the origin.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &http.Client{}
	defer c.CloseIdleConnections()
	if _, err := oauthex.GetProtectedResourceMetadata(ctx, base+mcp.RouteResourceMetadata, base, c); err != nil {
		t.Errorf("the Go MCP SDK's check of the origin's metadata: %v", err)
	}
}

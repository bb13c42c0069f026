package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/testports"
)

// oidcClient is a client the authorization server has registered: its
// secret, how it presents it at the token endpoint, and the scopes it may
// be granted.
type oidcClient struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	Auth   string `json:"auth"`
	Scope  string `json:"scope"`
	Alg    string `json:"alg"`
}

// startOIDCProvider runs testdata/oidc/provider.mjs, a real oidc-provider
// that issues JWT access tokens for resources to clients, and returns its
// issuer URL; it is stopped (SIGTERM) when the test ends.
func startOIDCProvider(t *testing.T, resources []string, clients []oidcClient, defaultResource string) string {
	t.Helper()
	modules := deps.NPM(t, "oidc")
	config, _ := json.Marshal(map[string]any{"resources": resources, "clients": clients, "defaultResource": defaultResource})
	issuer := make(chan string, 1)
	p := startProcess(t, syscall.SIGTERM, []string{"NODE_PATH=" + modules}, func(line string) {
		select {
		case issuer <- line:
		default:
		}
	}, "node", filepath.Join(deps.Repo(), "testdata", "oidc", "provider.mjs"), string(config))
	select {
	case u := <-issuer:
		return u
	case <-p.done:
		t.Fatalf("provider.mjs exited before listening: %s", p.output.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("provider.mjs did not print its issuer in 60s: %s", p.output.String())
	}
	return ""
}

// clientToken is an access token from issuer's token endpoint for c and
// resource (RFC 8707; "" asks for none), client_secret_basic.
func clientToken(t *testing.T, issuer string, c oidcClient, resource string) string {
	t.Helper()
	resp, err := testClient.Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	form := url.Values{"grant_type": {"client_credentials"}}
	if resource != "" {
		form.Set("resource", resource)
	}
	req, _ := http.NewRequest(http.MethodPost, meta.TokenEndpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.ID, c.Secret)
	resp, err = testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != 200 || tok.AccessToken == "" {
		t.Fatalf("the token endpoint for %s and %q: %d %v", c.ID, resource, resp.StatusCode, err)
	}
	return tok.AccessToken
}

// TestOAuthClients (issue 31): a real authorization server, oidc-provider,
// issues the tokens (client credentials, RFC 8707 resource indicators,
// RFC 9068 JWT access tokens) that the real sidecar checks in front of a
// real agent, A2A, MCP and OpenAI mounted on its one port; the protocols'
// published clients get them with their own OAuth support and call:
//   - the MCP TypeScript SDK 1.x and client 2.x (both revisions) with
//     their ClientCredentialsProvider start without a token: from the
//     401's resource_metadata they find the RFC 9728 document, the
//     authorization server in it, its token endpoint, get a token for the
//     document's resource and go on; a client the server grants fewer
//     scopes does not see the tool that needs more, and is refused it 403
//     insufficient_scope even after the SDK's step-up;
//   - the Go MCP SDK's client credentials handler asks for the scopes the
//     401 names, and sees and calls every tool;
//   - @a2a-js/sdk finds the server in the card's oidc scheme; without a
//     token it gets the door's refusal, with its authentication hook it
//     sends, streams and gets its task;
//   - the openai client with the token as its API key, a completion and a
//     stream; a token for another resource is refused 401.
//
// The agent never sees a token, only the caller's headers; tokens of
// each JWS algorithm the server signs with (RS256, PS256, ES256, EdDSA)
// are taken.
func TestOAuthClients(t *testing.T) {
	agent := startServerOnPort(t, nil, "python3", "../../testdata/agents/doors.py").url
	// The sidecar's URL is the MCP clients' resource (they check the
	// metadata's resource against the URL they call), so its port is
	// chosen before it starts.
	base := fmt.Sprintf("http://127.0.0.1:%d", testports.Free(t))
	resource, other := base+"/mcp", "https://other.example.com/mcp"
	operator := oidcClient{ID: "operator", Secret: "operator-secret", Auth: "client_secret_basic", Scope: "agent:read agent:admin", Alg: "RS256"}
	reader := oidcClient{ID: "reader", Secret: "reader-secret", Auth: "client_secret_post", Scope: "agent:read", Alg: "ES256"}
	// The Go MCP SDK's handler presents its secret in the request's body
	// when the server takes that (oidc-provider does).
	gopher := oidcClient{ID: "gopher", Secret: "gopher-secret", Auth: "client_secret_post", Scope: "agent:read agent:admin", Alg: "ES256"}
	clients := []oidcClient{operator, reader, gopher}
	for _, alg := range []string{"PS256", "EdDSA"} {
		clients = append(clients, oidcClient{ID: "signer-" + alg, Secret: "s", Auth: "client_secret_basic", Alg: alg})
	}
	// The Go MCP SDK's handler names no resource (RFC 8707) in its token
	// request: the server's default resource, as an AS's default audience,
	// is the sidecar.
	issuer := startOIDCProvider(t, []string{resource, other}, clients, resource)

	yaml := strings.NewReplacer(
		"AGENT", agent,
		"fail: {call: POST /fail}", "fail: {call: POST /fail, scopes: [agent:admin]}",
		"    call: POST /ask\n", "    call: POST /ask\n    scopes: [agent:read]\n",
	).Replace(onePortMap) + `  whoami: {call: POST /headers, description: What the agent saw.}
protocols:
  a2a: {mount: /a2a, method: story, card: {name: Story agent, description: Tells stories.}}
  mcp: {mount: /mcp, methods: [ask, story, fail, whoami]}
  openai: {mount: /, method: chat, model: agent}
auth:
  issuer: "` + issuer + `"
  audience: "` + resource + `"
  headers: {sub: X-User-Id, scope: X-User-Scopes, client_id: X-Client-Id}
`
	_, logs := startSidecarAt(t, yaml, strings.TrimPrefix(base, "http://"))

	metaURL := base + "/mcp/.well-known/oauth-protected-resource"
	for _, c := range []struct {
		set, mode, version string
		client             oidcClient
	}{
		{"mcp", "", "2025-11-25", operator},
		{"mcp", "", "2025-11-25", reader},
		{"mcp2", "", "2025-11-25", operator},
		{"mcp2", "", "2025-11-25", reader},
		{"mcp2", "auto", "2026-07-28", operator},
		{"mcp2", "auto", "2026-07-28", reader},
	} {
		name := c.set + " " + c.client.ID + " " + c.version
		args := []string{resource, issuer, c.client.ID, c.client.Secret, "agent:read agent:admin"}
		if c.mode != "" {
			args = append(args, c.mode)
		}
		mcpOAuth(t, name, deps.Node(t, c.set, "oauth.mjs", args...), c.version, resource, metaURL, issuer, c.client)
	}

	mcpGoOAuth(t, resource, issuer, gopher)

	deps.MatchLines(t, deps.Node(t, "a2a", "oauth.mjs", base+"/a2a", reader.ID, reader.Secret, resource), []string{
		`{"step":"card","schemes":["bearer","oidc"],"discovery":"` + issuer + `/.well-known/openid-configuration"}`,
		`{"step":"no token","error":"this door requires a bearer token (Authorization: Bearer <JWT>)"}`,
		`{"step":"send","state":"TASK_STATE_COMPLETED","text":"once upon a time hi "}`,
		`{"step":"stream","text":"once upon a time there "}`,
		`{"step":"get","state":"TASK_STATE_COMPLETED","same":true}`,
		`{"step":"auth","challenged":1,"tokens":1}`,
	})
	deps.MatchLines(t, deps.Node(t, "openai", "oauth.mjs", base, issuer, operator.ID, operator.Secret, resource, other), []string{
		`{"step":"chat","object":"chat.completion","content":"echo: hi","finish":"stop"}`,
		`{"step":"chat stream","content":"echo: hi","chunks":5}`,
		`{"step":"other resource","threw":"AuthenticationError","status":401,"message":"401 the token is not for this resource (its aud must include ` + resource + `)"}`,
	})

	// Without a token the MCP door's challenge names the metadata and the
	// scopes its tools need: what the clients above read.
	mcpHeaders := []string{"Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-11-25"}
	status, challenge, _ := authPost(t, base+"/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, mcpHeaders...)
	if want := `Bearer realm="sidecar", scope="agent:read agent:admin", resource_metadata="` + metaURL + `"`; status != 401 || challenge != want {
		t.Errorf("MCP without a token: %d %q, want 401 %q", status, challenge, want)
	}

	// A token the server issued for another resource (RFC 8707) is
	// refused by every door.
	elsewhere := clientToken(t, issuer, operator, other)
	for _, door := range []struct{ path, body string }{
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`},
		{"/v1/chat/completions", `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`},
	} {
		status, challenge, body := authPost(t, base+door.path, "Bearer "+elsewhere, door.body, mcpHeaders...)
		if status != 401 || !strings.Contains(challenge, `error="invalid_token"`) || !strings.Contains(body, "the token is not for this resource") {
			t.Errorf("%s with a token for %s: %d %q %s, want 401 invalid_token", door.path, other, status, challenge, body)
		}
	}

	// The reader's token lacks agent:admin: 403 insufficient_scope naming
	// it, as the MCP clients were told.
	modern := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	status, challenge, body := authPost(t, base+"/mcp", "Bearer "+clientToken(t, issuer, reader, resource),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","arguments":{},`+modern+`}}`,
		"Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "fail")
	if status != 403 || !strings.Contains(challenge, `error="insufficient_scope"`) || !strings.Contains(challenge, `scope="agent:admin"`) ||
		!strings.Contains(challenge, `resource_metadata="`+metaURL+`"`) {
		t.Errorf("the reader calling fail: %d %q %s, want 403 insufficient_scope naming agent:admin", status, challenge, body)
	}

	// Every algorithm the server signs with.
	for _, c := range clients[3:] {
		status, _, body := authPost(t, base+"/v1/chat/completions", "Bearer "+clientToken(t, issuer, c, resource), `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 || !strings.Contains(body, `"chat.completion"`) {
			t.Errorf("OpenAI with a %s token of the server: %d %s", c.Alg, status, body)
		}
	}

	// No request of any door reached the agent with an Authorization
	// header; the agent counts those it gets (one here, sent to it directly).
	for want, auth := range []string{"", "Bearer direct"} {
		if _, _, body := authPost(t, agent+"/headers", auth, `{}`); !strings.Contains(body, fmt.Sprintf(`"authorized": %d}`, want)) {
			t.Errorf("the agent's count of requests with Authorization: %s, want %d", body, want)
		}
	}
	for _, c := range clients {
		if logs.count(`"caller":"`+c.ID+`"`) == 0 {
			t.Errorf("no log line names the caller %s", c.ID)
		}
	}
	if logs.count(elsewhere[len(elsewhere)-20:]) != 0 {
		t.Error("a log line carries a token")
	}
}

// mcpOAuth checks the lines of an MCP client's oauth.mjs run as client c
// (name says which): a session of version with a token of issuer for
// resource, found from the 401's resource_metadata (metaURL); the tools c's
// scopes allow; what the agent saw; the tool fail, which needs agent:admin.
func mcpOAuth(t *testing.T, name string, lines []string, version, resource, metaURL, issuer string, c oidcClient) {
	t.Helper()
	type step struct {
		Step, Version, Server, Aud, Sub, Scope, Text, Error string
		Tools                                               []string
		IsError                                             bool
		Seen                                                struct {
			Authorization        *string
			User, Client, Scopes string
			Authorized           int
		}
		Requests []string
	}
	steps := map[string]step{}
	for _, line := range lines {
		var s step
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("%s printed %q", name, line)
		}
		steps[s.Step] = s
	}
	admin := strings.Contains(c.Scope, "agent:admin")
	if s := steps["connect"]; s.Error != "" || s.Version != version || s.Server != "sidecar" || s.Aud != resource || s.Sub != c.ID || s.Scope != c.Scope {
		t.Errorf("%s connect: %+v, want a %s session with a token for %s of %s granting %q", name, s, version, resource, c.ID, c.Scope)
	}
	tools := "ask story whoami"
	if admin {
		tools = "ask story fail whoami"
	}
	if s := steps["tools"]; strings.Join(s.Tools, " ") != tools {
		t.Errorf("%s tools: %+v, want %s", name, s, tools)
	}
	if s := steps["ask"]; s.IsError || s.Text != `{"answer":"you asked: what is up","words":3}` {
		t.Errorf("%s ask: %+v", name, s)
	}
	if s := steps["whoami"]; s.Error != "" || s.Seen.Authorization != nil || s.Seen.Authorized != 0 || s.Seen.User != c.ID || s.Seen.Client != c.ID || s.Seen.Scopes != c.Scope {
		t.Errorf("%s whoami: %+v, want the agent to see %s's identity headers and no token", name, s, c.ID)
	}
	if s := steps["fail"]; admin && (!s.IsError || s.Text != "the model is overloaded") || !admin && !strings.Contains(s.Error, "403") {
		t.Errorf("%s fail: %+v, want the agent's error with agent:admin, else 403", name, s)
	}
	// Discovery, in order: the 401, the metadata it named, the
	// authorization server's metadata, its token endpoint, the retry.
	got := steps["fetched"].Requests
	want := []string{"POST " + resource + " 401", "GET " + metaURL + " 200",
		"GET " + issuer + "/.well-known/oauth-authorization-server 200", "POST " + issuer + "/token 200", "POST " + resource + " 200"}
	if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("%s's requests:\n%s\nwant them to begin:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Without agent:admin the SDK tried a step-up (a new token), and was
	// refused again.
	if !admin && (len(got) < 2 || got[len(got)-1] != "POST "+resource+" 403" || got[len(got)-2] != "POST "+issuer+"/token 200") {
		t.Errorf("%s's requests end:\n%s\nwant a token asked for after the 403, and 403 again", name, strings.Join(got, "\n"))
	}
}

// mcpGoOAuth: the Go MCP SDK's client with its client credentials handler
// (extauth) as c, which starts without a token and, on the 401, reads the
// challenge and the RFC 9728 metadata it names for the authorization
// server and the scopes to ask for: it sees every tool c's scopes allow,
// and calls ask and fail, which need them.
func mcpGoOAuth(t *testing.T, endpoint, issuer string, c oidcClient) {
	t.Helper()
	handler, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: c.ID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: c.Secret}, Issuer: issuer},
		HTTPClient:  testClient,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), streamClient.Timeout)
	defer cancel()
	client := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-oauth-test", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &gomcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: streamClient, MaxRetries: -1,
		DisableStandaloneSSE: true, OAuthHandler: handler}, &gomcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("the Go MCP SDK with its client credentials handler: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, " "); got != "ask story fail whoami" {
		t.Errorf("the Go MCP SDK's tools: %s, want every tool (its client may have every scope)", got)
	}
	for _, call := range []struct{ name, want string }{{"ask", `{"answer":"you asked: hi","words":1}`}, {"fail", "the model is overloaded"}} {
		res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: call.name, Arguments: map[string]any{"message": "hi"}})
		if err != nil {
			t.Errorf("the Go MCP SDK calling %s: %v", call.name, err)
			continue
		}
		if text := res.Content[0].(*gomcp.TextContent).Text; text != call.want {
			t.Errorf("the Go MCP SDK calling %s: %q, want %q", call.name, text, call.want)
		}
	}
}

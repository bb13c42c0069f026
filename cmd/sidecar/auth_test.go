package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sidecar-dev/sidecar/internal/idptest"
)

// bearer is a transport that sends every request with Authorization.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// authPost posts body to url with the Authorization auth ("" none) and
// returns the status, the challenge and the body.
func authPost(t *testing.T, url, auth, body string, header ...string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// TestAuthDoors (issue 31): the real sidecar with an auth section in front
// of a real agent, A2A, MCP and OpenAI mounted on its one port and
// protected, a provider on loopback issuing the tokens. Without a token
// each door answers 401 in its own shape with the challenge (the Go MCP
// SDK cannot connect); with one, the Go MCP SDK runs a whole session and
// A2A and OpenAI answer; a fresh token of the same subject finds the
// subject's A2A task, another subject's does not; the card, health and
// the unprotected platform contract need none.
func TestAuthDoors(t *testing.T) {
	agent := startServerOnPort(t, nil, "python3", "../../testdata/agents/doors.py").url
	p := idptest.Start(t)
	const aud = "https://agent.example.com"
	yaml := strings.NewReplacer("AGENT", agent, "fail: {call: POST /fail}", "fail: {call: POST /fail, scopes: [agent:admin]}").Replace(onePortMap) + `
protocols:
  a2a: {mount: /a2a, method: story, card: {name: Story agent, description: Tells stories.}}
  mcp: {mount: /mcp, methods: [ask, story, long, fail, fail_late]}
  openai: {mount: /, method: chat, model: agent}
auth: {issuer: "` + p.URL + `", audience: "` + aud + `"}
`
	base, logs := startSidecarLogs(t, yaml)
	alice := p.Token(t, "alice", aud, "agent:admin")

	// Without a token: 401 in each door's shape, with the challenge.
	for _, c := range []struct{ name, path, body, shape string }{
		{"a2a", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`, `"jsonrpc":"2.0"`},
		{"mcp", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `"jsonrpc":"2.0"`},
		{"openai", "/v1/chat/completions", `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`, `"error":{`},
	} {
		status, challenge, body := authPost(t, base+c.path, "", c.body, "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-11-25")
		if status != 401 || !strings.HasPrefix(challenge, "Bearer ") || !strings.Contains(body, c.shape) || !strings.Contains(body, "requires a bearer token") {
			t.Errorf("%s without a token: %d %q %s", c.name, status, challenge, body)
		}
	}
	// MCP's challenge names its protected resource metadata (RFC 9728),
	// which any caller may read: the resource and its authorization server.
	_, challenge, _ := authPost(t, base+"/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream")
	metaURL := base + "/mcp/.well-known/oauth-protected-resource"
	if !strings.Contains(challenge, `resource_metadata="`+metaURL+`"`) {
		t.Errorf("MCP's challenge %q, want resource_metadata=%q", challenge, metaURL)
	}
	// Also at RFC 9728's path for the endpoint /mcp, at the port's root,
	// where clients look when a challenge names no metadata.
	for _, u := range []string{metaURL, base + "/.well-known/oauth-protected-resource/mcp"} {
		resp, err := testClient.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if resp.StatusCode != 200 || meta.Resource != aud || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != p.URL {
			t.Errorf("the metadata at %s: %d %+v, want the audience and the issuer", u, resp.StatusCode, meta)
		}
	}
	if status, _, _ := authPost(t, base+"/api/reasoning_engine", "", `{"class_method":"echo","input":{"x":1}}`); status != 200 {
		t.Errorf("the platform's contract (not protected) without a token: %d", status)
	}
	resp, err := testClient.Get(base + "/a2a/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		SecuritySchemes map[string]struct {
			Type, Scheme     string
			OpenIDConnectURL string                   `json:"openIdConnectUrl"`
			HTTPAuth         *struct{ Scheme string } `json:"httpAuthSecurityScheme"`
		}
		Security             []map[string][]string
		SecurityRequirements []struct {
			Schemes map[string]struct{ List []string }
		}
	}
	json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	scheme, oidc := card.SecuritySchemes["bearer"], card.SecuritySchemes["oidc"]
	if resp.StatusCode != 200 || scheme.Type != "http" || scheme.Scheme != "bearer" || scheme.HTTPAuth == nil || scheme.HTTPAuth.Scheme != "Bearer" ||
		oidc.OpenIDConnectURL != p.URL+"/.well-known/openid-configuration" || len(card.Security) != 1 || card.Security[0]["bearer"] == nil ||
		len(card.SecurityRequirements) != 1 || card.SecurityRequirements[0].Schemes["bearer"].List == nil {
		t.Errorf("the A2A card without a token: %d %+v, want 200 (public) declaring the bearer scheme in 0.3's and 1.0's fields", resp.StatusCode, card)
	}

	// The Go MCP SDK: refused without a token, a whole session with one.
	ctx, cancel := context.WithTimeout(t.Context(), streamClient.Timeout)
	defer cancel()
	plain := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-test", Version: "1.0.0"}, nil)
	if cs, err := plain.Connect(ctx, &gomcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: streamClient, MaxRetries: -1, DisableStandaloneSSE: true}, nil); err == nil {
		cs.Close()
		t.Error("the Go MCP SDK connected without a token")
	}
	const key = "mcp-auth"
	var once sync.Once
	client := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-test", Version: "1.0.0"}, &gomcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *gomcp.ProgressNotificationClientRequest) {
			once.Do(func() {
				if resp, err := testClient.Post(agent+"/release/"+key, "application/json", nil); err == nil {
					resp.Body.Close()
				}
			})
		}})
	authed := &http.Client{Timeout: streamClient.Timeout, Transport: bearer{alice, http.DefaultTransport}}
	cs, err := client.Connect(ctx, &gomcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: authed, MaxRetries: -1, DisableStandaloneSSE: true},
		&gomcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if text := mcpGoCalls(ctx, t, cs, key); text != "once released upon a time hold-"+key+" " {
		t.Errorf("story = %q", text)
	}
	cs.Close()

	// Scopes: carol's token grants none, so tools/list leaves out fail,
	// which needs agent:admin, and calling it is 403 insufficient_scope.
	carol := "Bearer " + p.Token(t, "carol", aud, "")
	mcpHeaders := []string{"Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2026-07-28"}
	modern := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	_, _, list := authPost(t, base+"/mcp", carol, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modern+`}}`, append(mcpHeaders, "Mcp-Method", "tools/list")...)
	if !strings.Contains(list, `"name":"ask"`) || strings.Contains(list, `"name":"fail"`) || !strings.Contains(list, `"cacheScope":"private"`) {
		t.Errorf("carol's tools/list: %s, want ask and no fail, cached privately", list)
	}
	status, challenge, body := authPost(t, base+"/mcp", carol, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail","arguments":{},`+modern+`}}`,
		append(mcpHeaders, "Mcp-Method", "tools/call", "Mcp-Name", "fail")...)
	if status != 403 || !strings.Contains(challenge, `error="insufficient_scope"`) || !strings.Contains(challenge, `scope="agent:admin"`) ||
		!strings.Contains(challenge, `resource_metadata="`+metaURL+`"`) || !strings.Contains(body, `"jsonrpc":"2.0"`) {
		t.Errorf("carol calling fail: %d %q %s, want 403 insufficient_scope naming agent:admin", status, challenge, body)
	}

	// A2A: the task is the subject's, whatever its token.
	status, _, body = authPost(t, base+"/a2a", "Bearer "+alice,
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`)
	var sent struct {
		Result struct {
			ID     string `json:"id"`
			Status struct{ State string }
		}
	}
	if json.Unmarshal([]byte(body), &sent); status != 200 || sent.Result.ID == "" || sent.Result.Status.State != "completed" {
		t.Fatalf("A2A message/send with a token: %d %s", status, body)
	}
	get := `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"` + sent.Result.ID + `"}}`
	fresh := p.Sign(t, p.Claims("alice", aud, "other"), "ec1", "ES256") // another token, the same subject
	if _, _, body := authPost(t, base+"/a2a", "Bearer "+fresh, get); !strings.Contains(body, `"completed"`) {
		t.Errorf("tasks/get with a fresh token of alice: %s, want her task", body)
	}
	if _, _, body := authPost(t, base+"/a2a", "Bearer "+p.Token(t, "bob", aud, ""), get); !strings.Contains(body, "-32001") {
		t.Errorf("tasks/get by bob: %s, want TaskNotFound", body)
	}

	// A 1 MB token is refused by the header limit (431) before any
	// verification; the door serves the next caller as before.
	if status, _, _ := authPost(t, base+"/v1/chat/completions", "Bearer "+strings.Repeat("a", 1<<20), `{}`); status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 1 MB token: %d, want 431", status)
	}

	// OpenAI with a token.
	if status, _, body := authPost(t, base+"/v1/chat/completions", "Bearer "+alice, `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`); status != 200 || !strings.Contains(body, `"chat.completion"`) {
		t.Errorf("OpenAI with a token: %d %s", status, body)
	}
	if logs.count(`"caller":"alice"`) == 0 {
		t.Error("no log line names the caller alice")
	}
	if logs.count(alice[len(alice)-20:]) != 0 {
		t.Error("a log line carries the token")
	}
}

package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestModernHeaders: a 2026-07-28 request whose headers disagree with its
// body, or lack one, is 400 with -32020 (HeaderMismatch), never served; one
// whose _meta, or the protocol version or client capabilities in it, is
// missing is 400 with -32602 (the conformance suite's SEP-2575 checks);
// Mcp-Name may be =?base64?…?=; an Mcp-Session-Id on such a request is
// ignored.
func TestModernHeaders(t *testing.T) {
	s := serve(t, "", Options{})
	call := `"name":"ask","arguments":{"message":"hi"}`
	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	tests := []struct {
		name, body string
		h          []string
		want       int // 0: 200 and a result
		msg        string
		code       int // 0: -32020
	}{
		{"all agree", "", nil, 0, "", 0},
		{"Mcp-Name base64", "", []string{"Mcp-Name", b64("ask")}, 0, "", 0},
		{"a session id is ignored", "", []string{"Mcp-Session-Id", "made-up"}, 0, "", 0},
		{"Mcp-Method missing", "", []string{"Mcp-Method", ""}, 400, "the Mcp-Method header is missing", 0},
		{"Mcp-Method other", "", []string{"Mcp-Method", "tools/list"}, 400, `Mcp-Method "tools/list" is not the body's method "tools/call"`, 0},
		{"Mcp-Name missing", "", []string{"Mcp-Name", ""}, 400, "the Mcp-Name header is missing", 0},
		{"Mcp-Name other", "", []string{"Mcp-Name", "story"}, 400, `Mcp-Name "story" is not the body's params.name "ask"`, 0},
		{"Mcp-Name base64 other", "", []string{"Mcp-Name", b64("story")}, 400, `Mcp-Name "story" is not`, 0},
		{"Mcp-Name bad base64", "", []string{"Mcp-Name", "=?base64?***?="}, 400, "neither plain ASCII nor", 0},
		{"no _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}`, nil, 400, `params._meta is missing`, -32602},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, nil, 400, `params._meta is missing`, -32602},
		{"no _meta version", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, nil, 400, `params._meta["io.modelcontextprotocol/protocolVersion"] is missing`, -32602},
		{"no _meta capabilities", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, nil, 400, `params._meta["io.modelcontextprotocol/clientCapabilities"] is missing`, -32602},
		{"_meta version other", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, nil, 400, `is not the _meta's "2025-11-25"`, 0},
		{"no version header, _meta modern", "", []string{"MCP-Protocol-Version", ""}, 400, "the MCP-Protocol-Version header is missing", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp *http.Response
			var b []byte
			if tt.body == "" {
				resp, b = modern(t, s.url, "tools/call", call, "ask", tt.h...)
			} else {
				resp, b = post(t, s.url, tt.body, append([]string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "ask"}, tt.h...)...)
			}
			r := decode(t, b)
			if tt.want == 0 {
				if resp.StatusCode != 200 || r.Error != nil || !strings.Contains(string(r.Result), `"resultType":"complete"`) {
					t.Errorf("= %d %s, want 200 and a complete result", resp.StatusCode, b)
				}
				return
			}
			code := tt.code
			if code == 0 {
				code = -32020
			}
			if resp.StatusCode != tt.want || r.Error == nil || r.Error.Code != code || !strings.Contains(r.Error.Message, tt.msg) || string(r.ID) != "1" {
				t.Errorf("= %d %s, want %d, %d saying %q, id 1", resp.StatusCode, b, tt.want, code, tt.msg)
			}
		})
	}
}

// TestVersions: an unsupported or malformed MCP-Protocol-Version is 400
// with -32022 and the versions served in data.supported; a 2025 version
// without a session is 400; server/discover and tools/list answer the
// stateless revision's complete, cacheable results; an unknown method is
// 404 -32601 there (200 in a session, as the 2025 revisions answer it).
func TestVersions(t *testing.T) {
	s := serve(t, "", Options{})
	for _, v := range []string{"2099-01-01", "2025-03-26", "latest", "2026-07-28, 2026-07-28"} {
		resp, b := modern(t, s.url, "tools/list", "", "", "MCP-Protocol-Version", v)
		r := decode(t, b)
		var data struct{ Supported []string }
		if r.Error != nil {
			json.Unmarshal(r.Error.Data, &data)
		}
		if resp.StatusCode != 400 || r.Error == nil || r.Error.Code != -32022 || strings.Join(data.Supported, " ") != "2026-07-28 2025-11-25 2025-06-18" {
			t.Errorf("MCP-Protocol-Version %q = %d %s, want 400, -32022 listing the versions", v, resp.StatusCode, b)
		}
	}
	if _, b := modern(t, s.url, "tools/list", "", "", "MCP-Protocol-Version", "latest"); !strings.Contains(string(b), "Malformed protocol version") {
		t.Errorf("a malformed version = %s, want it called malformed", b)
	}

	resp, b := modern(t, s.url, "server/discover", "", "")
	var discover struct {
		ResultType        string
		SupportedVersions []string
		Capabilities      struct{ Tools *struct{} }
		Meta              map[string]struct{ Name, Version string } `json:"_meta"`
		TTLMs             *int
		CacheScope        string
	}
	json.Unmarshal(decode(t, b).Result, &discover)
	if resp.StatusCode != 200 || discover.ResultType != "complete" || discover.SupportedVersions[0] != "2026-07-28" || discover.Capabilities.Tools == nil ||
		discover.Meta["io.modelcontextprotocol/serverInfo"].Name != "sidecar" || discover.TTLMs == nil || *discover.TTLMs <= 0 || discover.CacheScope != "public" {
		t.Errorf("server/discover = %d %s", resp.StatusCode, b)
	}
	resp, b = modern(t, s.url, "tools/list", "", "")
	if r := decode(t, b); resp.StatusCode != 200 || !strings.Contains(string(r.Result), `"resultType":"complete","ttlMs":60000,"cacheScope":"public"`) {
		t.Errorf("tools/list = %d %s, want a complete result with ttlMs and cacheScope", resp.StatusCode, b)
	}
	for _, method := range []string{"ping", "resources/list", "initialize/x", "initialize"} {
		resp, b = modern(t, s.url, method, "", "")
		if r := decode(t, b); resp.StatusCode != 404 || r.Error == nil || r.Error.Code != -32601 {
			t.Errorf("%s (2026-07-28) = %d %s, want 404 -32601", method, resp.StatusCode, b)
		}
	}

	session := initialize(t, s.url, version20251125)
	resp, b = post(t, s.url, `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`, "Mcp-Session-Id", session, "MCP-Protocol-Version", version20251125)
	if r := decode(t, b); resp.StatusCode != 200 || r.Error == nil || r.Error.Code != -32601 {
		t.Errorf("resources/list in a session = %d %s, want 200 -32601", resp.StatusCode, b)
	}
	resp, b = post(t, s.url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", session, "MCP-Protocol-Version", version20251125)
	if r := decode(t, b); resp.StatusCode != 200 || r.Error != nil || strings.Contains(string(r.Result), "resultType") || !strings.Contains(string(r.Result), `"name":"ask"`) {
		t.Errorf("tools/list in a session = %d %s, want the tools, no resultType", resp.StatusCode, b)
	}
	resp, b = post(t, s.url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", session, "MCP-Protocol-Version", version20250618)
	if r := decode(t, b); resp.StatusCode != 400 || r.Error == nil || !strings.Contains(r.Error.Message, "is not the session's") {
		t.Errorf("another version in a session = %d %s, want 400", resp.StatusCode, b)
	}
}

// TestSessions: initialize negotiates the version (the one asked when
// served, else 2025-11-25) and issues an Mcp-Session-Id; a 2025 request
// without one is 400, with one the door does not hold 404; notifications
// and a client's responses are 202 with no body; GET is 405; DELETE ends
// the session (then 404), an unknown one 404, none 400.
func TestSessions(t *testing.T) {
	s := serve(t, "", Options{})
	for asked, want := range map[string]string{version20250618: version20250618, version20251125: version20251125, "2024-11-05": version20251125, "2026-07-28": version20251125} {
		resp, b := post(t, s.url, fmt.Sprintf(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, asked))
		var init struct {
			ProtocolVersion string
			Capabilities    struct{ Tools *struct{} }
			ServerInfo      struct{ Name string }
		}
		r := decode(t, b)
		json.Unmarshal(r.Result, &init)
		if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" || string(r.ID) != `"i"` || init.ProtocolVersion != want || init.Capabilities.Tools == nil || init.ServerInfo.Name != "sidecar" {
			t.Errorf("initialize %s = %d %s (session %q), want %s, a session, tools and serverInfo", asked, resp.StatusCode, b, resp.Header.Get("Mcp-Session-Id"), want)
		}
	}
	session := initialize(t, s.url, version20251125)
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no"}}`,
	} {
		resp, b := post(t, s.url, body, "Mcp-Session-Id", session)
		if resp.StatusCode != 202 || len(b) != 0 {
			t.Errorf("%s = %d %q, want 202, no body", body, resp.StatusCode, b)
		}
	}
	resp, b := post(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", session)
	if r := decode(t, b); resp.StatusCode != 200 || string(r.Result) != "{}" {
		t.Errorf("ping = %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if r := decode(t, b); resp.StatusCode != 400 || r.Error == nil || !strings.Contains(r.Error.Message, "Mcp-Session-Id header is required") {
		t.Errorf("tools/list without a session = %d %s, want 400", resp.StatusCode, b)
	}
	resp, b = post(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id", "made-up")
	if r := decode(t, b); resp.StatusCode != 404 || r.Error == nil || !strings.Contains(r.Error.Message, "Session not found") {
		t.Errorf("tools/list with an unknown session = %d %s, want 404", resp.StatusCode, b)
	}

	req, _ := http.NewRequest(http.MethodGet, s.url, nil)
	resp, b = do(t, req, "Accept", "text/event-stream", "Mcp-Session-Id", session)
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST, DELETE" || decode(t, b).Error == nil {
		t.Errorf("GET = %d %s (Allow %q), want 405, Allow: POST, DELETE", resp.StatusCode, b, resp.Header.Get("Allow"))
	}
	for _, tt := range []struct {
		id   string
		want int
	}{{"", 400}, {"made-up", 404}, {session, 200}, {session, 404}} {
		req, _ := http.NewRequest(http.MethodDelete, s.url, nil)
		if resp, b := do(t, req, "Mcp-Session-Id", tt.id); resp.StatusCode != tt.want {
			t.Errorf("DELETE of %q = %d %s, want %d", tt.id, resp.StatusCode, b, tt.want)
		}
	}
	resp, b = post(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id", session)
	if resp.StatusCode != 404 {
		t.Errorf("tools/list in an ended session = %d %s, want 404", resp.StatusCode, b)
	}
}

// TestSessionCap: the sessions are at most limits.mcp_sessions: opening
// far more keeps that many, the least recently used forgotten first (its
// client, answered 404, initializes again).
func TestSessionCap(t *testing.T) {
	s := serve(t, "limits: {mcp_sessions: 3}\n", Options{})
	first := initialize(t, s.url, version20251125)
	second := initialize(t, s.url, version20251125)
	initialize(t, s.url, version20251125)
	ping := func(id string) int {
		resp, _ := post(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", id)
		return resp.StatusCode
	}
	if ping(first) != 200 { // first is now the most recently used
		t.Fatal("the first session is not served")
	}
	initialize(t, s.url, version20251125) // forgets second, the least recently used
	if got := ping(second); got != 404 {
		t.Errorf("the least recently used session past the cap = %d, want 404", got)
	}
	if got := ping(first); got != 200 {
		t.Errorf("a session used since = %d, want 200", got)
	}
	for range 200 {
		initialize(t, s.url, version20251125)
	}
	if n := s.door.sessions.len(); n != 3 {
		t.Errorf("%d sessions after 204 initializes, want the cap, 3", n)
	}
}

// TestGuards: the endpoint answers 406 to a POST whose Accept lacks
// either type, 403 to an Origin not its own and, on a connection to a
// loopback address (a loopback listener's, or one of every interface), to
// a Host that is not a loopback name with its port; a client with no
// Origin, or the endpoint's own, is served.
func TestGuards(t *testing.T) {
	s := serve(t, "", Options{})
	host := strings.TrimPrefix(s.base, "http://")
	port := host[strings.LastIndex(host, ":")+1:]
	tests := []struct {
		name string
		h    []string
		want int
	}{
		{"no Accept", []string{"Accept", ""}, 406},
		{"JSON only", []string{"Accept", "application/json"}, 406},
		{"SSE only", []string{"Accept", "text/event-stream"}, 406},
		{"both, two headers", []string{"Accept", "application/json;q=0.9,text/event-stream"}, 200},
		{"*/*", []string{"Accept", "*/*"}, 200},
		{"foreign Origin", []string{"Origin", "https://evil.example"}, 403},
		{"null Origin", []string{"Origin", "null"}, 403},
		{"own Origin", []string{"Origin", "http://" + host}, 200},
		{"localhost", []string{"Host", "localhost:" + port}, 200},
		{"foreign Host", []string{"Host", "evil.example:" + port}, 403},
		{"loopback Host, other port (a tunnel's)", []string{"Host", "127.0.0.1:1"}, 200},
		{"localhost, no port", []string{"Host", "localhost"}, 200},
		{"a body not declared JSON", []string{"Content-Type", "text/plain"}, 415},
		{"rebinding: Host and Origin alike", []string{"Host", "evil.example:" + port, "Origin", "http://evil.example:" + port}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{%s}}`, modernMeta)
			req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Content-Type", "application/json")
			var h []string
			for i := 0; i < len(tt.h); i += 2 {
				if tt.h[i] == "Host" {
					req.Host = tt.h[i+1]
					continue
				}
				h = append(h, tt.h[i], tt.h[i+1])
			}
			resp, b := do(t, req, append([]string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"}, h...)...)
			if resp.StatusCode != tt.want {
				t.Errorf("= %d %s, want %d", resp.StatusCode, b, tt.want)
			}
			if tt.want != 200 && decode(t, b).Error == nil {
				t.Errorf("= %s, want a JSON-RPC error", b)
			}
		})
	}
	// On a listener of every interface (the default, :8090), a request
	// that came in on a loopback address is held to a loopback Host too:
	// a rebinding page reaches 127.0.0.1:8090 under its own name.
	c, err := config.Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {ask: {}}\nprotocols: {mcp: {}}\n"), Protocol.Kind)
	if err != nil {
		t.Fatal(err)
	}
	every := serve(t, "", Protocol.Options(c.Protocols.Door(Name), core.Host{}))
	everyHost := strings.TrimPrefix(every.base, "http://")
	everyPort := everyHost[strings.LastIndex(everyHost, ":")+1:]
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{%s}}`, modernMeta)
	listHeaders := []string{"Accept", "application/json, text/event-stream", "Content-Type", "application/json", "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"}
	req, _ := http.NewRequest(http.MethodPost, every.url, strings.NewReader(body))
	req.Host = "evil.example:" + everyPort
	if resp, b := do(t, req, append(listHeaders, "Origin", "http://evil.example:"+everyPort)...); resp.StatusCode != 403 {
		t.Errorf("a rebinding page on 127.0.0.1 of a listener of every interface = %d %s, want 403", resp.StatusCode, b)
	}
	req, _ = http.NewRequest(http.MethodPost, every.url, strings.NewReader(body))
	if resp, b := do(t, req, listHeaders...); resp.StatusCode != 200 {
		t.Errorf("a loopback Host on a listener of every interface = %d %s, want 200", resp.StatusCode, b)
	}
	// Its public name, on a connection to another address, is served
	// (the tests listen on loopback only: the request says where it came).
	pub := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	pub.Host = "agents.example.com"
	pub = pub.WithContext(context.WithValue(pub.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 8090}))
	for i := 0; i < len(listHeaders); i += 2 {
		pub.Header.Set(listHeaders[i], listHeaders[i+1])
	}
	served := false
	ok := func(string, bool) http.Handler {
		return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = true })
	}
	refuse := func(w http.ResponseWriter, _ *http.Request, _ string, _ error) { w.WriteHeader(http.StatusForbidden) }
	w := httptest.NewRecorder()
	every.door.Handler(ok, http.NotFoundHandler(), refuse).ServeHTTP(w, pub)
	if !served {
		t.Errorf("a public name on a non-loopback address of a listener of every interface = %d, want served", w.Code)
	}
}

// TestMalformed: what is not one JSON-RPC request is refused with its
// JSON-RPC error and status, the agent never called.
func TestMalformed(t *testing.T) {
	s := serve(t, "", Options{})
	h := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "ask"}
	tests := []struct {
		body         string
		status, code int
		msg          string
	}{
		{`{"jsonrpc":"2.0","id":1,`, 400, -32700, "not valid JSON"},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, 400, -32600, "batches are not supported"},
		{`{"id":1,"method":"tools/call"}`, 400, -32600, `"jsonrpc" must be "2.0"`},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`, 400, -32600, `"id" must be a string or a number`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"x"}`, 400, -32600, `member "method" is given twice`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}`, 400, -32600, `"params" must be an object`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":[1],` + modernMeta + `}}`, 200, -32602, "params.arguments must be an object"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7,` + modernMeta + `}}`, 200, -32602, "params.name must be a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":{}}}}`, 200, -32602, "progressToken must be a string or a number"},
	}
	for _, tt := range tests {
		resp, b := post(t, s.url, tt.body, h...)
		r := decode(t, b)
		if resp.StatusCode != tt.status || r.Error == nil || r.Error.Code != tt.code || !strings.Contains(r.Error.Message, tt.msg) {
			t.Errorf("%s = %d %s, want %d, %d saying %q", tt.body, resp.StatusCode, b, tt.status, tt.code, tt.msg)
		}
	}
	resp, b := modern(t, s.url, "tools/call", `"name":"nope","arguments":{}`, "nope")
	if r := decode(t, b); resp.StatusCode != 200 || r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `Unknown tool "nope"`) {
		t.Errorf("an unknown tool = %d %s, want 200 -32602", resp.StatusCode, b)
	}
	resp, b = modern(t, s.url, "tools/call", `"arguments":{}`, "")
	if r := decode(t, b); resp.StatusCode != 400 || r.Error == nil || r.Error.Code != -32020 {
		t.Errorf("tools/call without a name = %d %s, want 400 -32020 (its Mcp-Name cannot match)", resp.StatusCode, b)
	}
}

// TestSessionOwner: a session answers only requests with the
// Authorization of the initialize that opened it: another credential, or
// none, finds no session (404), and cannot end it.
func TestSessionOwner(t *testing.T) {
	s := serve(t, "", Options{})
	resp, b := post(t, s.url, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		"Authorization", "Bearer alice")
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || session == "" {
		t.Fatalf("initialize = %d %s", resp.StatusCode, b)
	}
	ping := func(auth string) int {
		resp, _ := post(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", session, "Authorization", auth)
		return resp.StatusCode
	}
	if got := ping("Bearer mallory"); got != 404 {
		t.Errorf("the session with another credential = %d, want 404", got)
	}
	if got := ping(""); got != 404 {
		t.Errorf("the session with none = %d, want 404", got)
	}
	req, _ := http.NewRequest(http.MethodDelete, s.url, nil)
	if resp, _ := do(t, req, "Mcp-Session-Id", session, "Authorization", "Bearer mallory"); resp.StatusCode != 404 {
		t.Errorf("DELETE with another credential = %d, want 404", resp.StatusCode)
	}
	if got := ping("Bearer alice"); got != 200 {
		t.Errorf("the session with its own credential = %d, want 200", got)
	}
}

// TestRefusalsLogged: what the endpoint answers before a call exists (a
// POST whose Accept lacks a type, a foreign Origin, GET, DELETE of a
// session), as what Open refuses, gets one call log line with protocol
// mcp, its status, reason and route, and counts in the metrics by
// protocol.
func TestRefusalsLogged(t *testing.T) {
	s := serve(t, "", Options{})
	session := initialize(t, s.url, version20251125)
	s.logs.TakeAll()
	request := func(method string) *http.Request {
		req, _ := http.NewRequest(method, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if method == http.MethodPost {
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Content-Type", "application/json")
		}
		return req
	}
	tests := []struct {
		name    string
		method  string
		h       []string
		status  int
		reason  string
		outcome string
		err     string // in the line's error, the refusal's message
	}{
		{"Accept without SSE", http.MethodPost, []string{"Accept", "application/json", "Mcp-Session-Id", session}, 406, "NOT_ACCEPTABLE", "bad_request", "Accept"},
		{"a foreign Origin", http.MethodPost, []string{"Origin", "https://evil.example", "Mcp-Session-Id", session}, 403, "PERMISSION_DENIED", "bad_request", "evil.example"},
		{"GET", http.MethodGet, []string{"Accept", "text/event-stream"}, 405, "METHOD_NOT_ALLOWED", "bad_request", "server-initiated"},
		{"DELETE without a session", http.MethodDelete, nil, 400, "BAD_REQUEST", "bad_request", ""},
		{"DELETE of an unknown session", http.MethodDelete, []string{"Mcp-Session-Id", "made-up"}, 404, "NOT_FOUND", "bad_request", ""},
		{"DELETE of the session", http.MethodDelete, []string{"Mcp-Session-Id", session}, 200, "", "ok", ""},
		// Refused once read, by Open: the call's line, its reason too.
		{"a 2025 request without its session", http.MethodPost, nil, 400, "BAD_REQUEST", "bad_request", ""},
	}
	for _, tt := range tests {
		resp, b := do(t, request(tt.method), tt.h...)
		if resp.StatusCode != tt.status {
			t.Errorf("%s = %d %s, want %d", tt.name, resp.StatusCode, b, tt.status)
		}
		lines := s.logs.TakeAll()
		if len(lines) != 1 {
			t.Errorf("%s logged %d lines %v, want one", tt.name, len(lines), lines)
			continue
		}
		f := lines[0].ContextMap()
		route := DefaultPath
		if tt.status == http.StatusForbidden {
			route = "" // the Server's guard refuses before the door routes
		}
		if lines[0].Message != "call" || f["protocol"] != Name || f["status"] != int64(tt.status) || f["route"] != route ||
			f["outcome"] != tt.outcome || (tt.reason != "" && f["reason"] != tt.reason) || f["bytes"] != int64(len(b)) ||
			!strings.Contains(fmt.Sprint(f["error"]), tt.err) {
			t.Errorf("%s logged %s %v, want a call of protocol mcp, status %d, route %s, outcome %s, reason %q, bytes %d, error with %q",
				tt.name, lines[0].Message, f, tt.status, route, tt.outcome, tt.reason, len(b), tt.err)
		}
	}
	rec := httptest.NewRecorder()
	s.metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `sidecar_protocol_calls_total{outcome="bad_request",protocol="mcp"} 6`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s", want)
	}
}

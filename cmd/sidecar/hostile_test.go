package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// jsonDoors says, for every registered door, whether its calls take only
// a body declared JSON (docs/doors.md's table): the protocols' clients
// all send application/json, the runtimes' front ends may not.
var jsonDoors = map[string]bool{"agent_platform": false, "agentcore": false, "foundry": false, "a2a": true, "mcp": true, "openai": true}

// originEverywhere says, for every registered door, whether it holds a
// request's Origin off loopback too (docs/doors.md).
var originEverywhere = map[string]bool{"agent_platform": false, "agentcore": false, "foundry": false, "a2a": false, "mcp": true, "openai": true}

// otherPort is a port other than port (a decimal string): a tunnel's.
func otherPort(port string) int {
	p, _ := strconv.Atoi(port)
	return p%60000 + 1024
}

// TestHostileDoors: every registered door, served as run serves it, holds
// against the same hostile callers and agents, on a listener of its own
// and mounted on the platform's (hostileWays), every row the same: a body
// over limits.request_bytes and a call while busy are refused in the
// door's shape before their body is read (none is ever sent); a caller
// leaving mid-stream ends the agent's request; an agent cut mid-record
// gives exactly one failure in the door's shape; a stream or unary call
// in flight at drain gets the door's shutting-down failure; a path the
// door does not serve is its 404 and one call log line of its protocol;
// headers past limits.header_bytes are refused, and ids in a body past
// their cap. A stream's head and a failure carry the Server-Timing of the
// phases the call reached. Protected by an auth section, every door
// refuses hostile tokens and holds while the provider hangs or is down
// (hostileAuthRows), in process and through the real binary
// (hostileAuthBinary).
func TestHostileDoors(t *testing.T) {
	for _, d := range doors.All {
		spec := d.Probe
		if spec.Conversations {
			continue // no calls: its conversations are its package's to try
		}
		if spec.Request == nil || spec.Refusal == nil || spec.Errors == nil {
			t.Errorf("door %s is registered without a Probe (its Protocol's Request, Refusal and Errors): the hostile-input table cannot call it", d.Name)
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			for _, way := range hostileWays(t, d) {
				t.Run(way.name, func(t *testing.T) { hostileRows(t, d, way, false) })
			}
		})
		if d.Name == "a2a" {
			// A2A's second binding, HTTP+JSON, every way too.
			rest := d
			rest.Probe = a2aREST
			t.Run("a2a HTTP+JSON", func(t *testing.T) {
				for _, way := range hostileWays(t, rest) {
					t.Run(way.name, func(t *testing.T) { hostileRows(t, rest, way, true) })
				}
			})
		}
	}
	// The protected rows once more through the real binary, its doors
	// on one port.
	t.Run("protected, the binary", hostileAuthBinary)
}

// hostileRows are TestHostileDoors' rows, for door d served way's way;
// second is a door's second binding (A2A's HTTP+JSON), which skips the
// rows whose refusal comes before the door routes a request (a path it
// does not serve, a web page's Host or Origin): they answer in the
// door's first shape whatever the path.
func hostileRows(t *testing.T, d doors.Door, way hostileWay, second bool) {
	spec := d.Probe
	beforeRouting := func(t *testing.T) {
		if second {
			t.Skip("refused before the door routes it: in the door's first binding's shape, that binding's row")
		}
	}
	// on serves d the way the rows are run, its listener on ip.
	on := func(t *testing.T, ip, method, head string, agent *hostileAgent) hostileServed {
		t.Helper()
		return hostileServeWay(t, way, ip, d.Name, method, head, agent)
	}
	t.Run("protected", func(t *testing.T) { hostileAuthRows(t, d, way) })
	t.Run("body over the limit", func(t *testing.T) {
		agent := newHostileAgent(t)
		base := on(t, "127.0.0.1", "hold", "limits: {request_bytes: 1KiB}\n", agent).url
		_, resp := send(t, spec.Request(base, "hold", false), 1<<20, nil)
		if body := readAll(t, resp); resp.StatusCode != http.StatusRequestEntityTooLarge || !spec.Refusal(body) {
			t.Errorf("a 1 MiB body, unsent, over a 1 KiB limit = %d %q, want 413 in the door's shape", resp.StatusCode, body)
		}
	})
	t.Run("busy", func(t *testing.T) {
		agent := newHostileAgent(t)
		base := on(t, "127.0.0.1", "hold", "limits: {concurrency: 1, queue: 0}\n", agent).url
		held := spec.Request(base, "hold", false)
		body := whole(held)
		write(t, held, len(body), body) // answered when the test ends
		agent.waitHeld(t, 1)
		_, resp := send(t, spec.Request(base, "hold", false), 1<<20, nil)
		if body := readAll(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !spec.Refusal(body) {
			t.Errorf("a call while the one slot is held, its 1 MiB body unsent = %d %q, want 503 in the door's shape", resp.StatusCode, body)
		}
	})
	t.Run("caller leaves mid-stream", func(t *testing.T) {
		agent := newHostileAgent(t)
		base := on(t, "127.0.0.1", "stream_hold", "", agent).url
		conn, resp := call(t, spec.Request(base, "stream_hold", true))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream = %d %q", resp.StatusCode, readAll(t, resp))
		}
		checkServerTiming(t, "the stream's head", resp, "queue", "connect", "agent")
		agent.waitHeld(t, 1)
		conn.Close()
		select {
		case <-agent.left:
		case <-time.After(hostileBound):
			t.Errorf("the agent's request still open %v after its caller left", hostileBound)
		}
	})
	t.Run("a task of another caller", func(t *testing.T) {
		if spec.Owned == nil {
			t.Skip("the door keeps nothing of a call for its caller")
		}
		agent := newHostileAgent(t)
		base := on(t, "127.0.0.1", "stream_hold", "", agent).url
		req := spec.Request(base, "stream_hold", true)
		req.Header.Set("Authorization", "Bearer owner")
		conn, resp := call(t, req)
		defer conn.Close() // the stream's end: its caller leaves
		agent.waitHeld(t, 1)
		first, err := bufio.NewReader(resp.Body).ReadString('\n')
		if resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("the owner's stream = %d, first line %q (%v)", resp.StatusCode, first, err)
		}
		for _, other := range []string{"Bearer other", ""} {
			if _, resp := call(t, spec.Owned(base, []byte(first), other)); !spec.Refusal(readAll(t, resp)) {
				t.Errorf("the owner's task asked for with Authorization %q = %d, want refused in the door's shape", other, resp.StatusCode)
			}
		}
		if _, resp := call(t, spec.Owned(base, []byte(first), "Bearer owner")); resp.StatusCode != http.StatusOK || spec.Refusal(readAll(t, resp)) {
			t.Errorf("the owner's task asked for by its owner = %d, refused; want it answered", resp.StatusCode)
		}
	})
	t.Run("agent cut mid-record", func(t *testing.T) {
		agent := newHostileAgent(t)
		base := on(t, "127.0.0.1", "cut", "", agent).url
		_, resp := call(t, spec.Request(base, "cut", true))
		body := readAll(t, resp)
		errs, err := spec.Errors(body)
		if resp.StatusCode != http.StatusOK || err != nil || len(errs) != 1 {
			t.Errorf("a stream cut mid-record = %d %q: failures %q (%v), want exactly one in the door's shape", resp.StatusCode, body, errs, err)
		}
	})
	t.Run("drain", func(t *testing.T) {
		agent := newHostileAgent(t)
		srv := on(t, "127.0.0.1", "stream_hold", hostileDrain, agent)
		base, drain := srv.url, srv.drain
		_, resp := call(t, spec.Request(base, "stream_hold", true))
		agent.waitHeld(t, 1)
		drain()
		body := readAll(t, resp)
		errs, err := spec.Errors(body)
		if resp.StatusCode != http.StatusOK || err != nil || len(errs) != 1 || !strings.Contains(errs[0], "shutting down") {
			t.Errorf("a stream in flight at drain = %d %q: failures %q (%v), want one saying the sidecar is shutting down", resp.StatusCode, body, errs, err)
		}
	})
	t.Run("drain, unary", func(t *testing.T) {
		agent := newHostileAgent(t)
		srv := on(t, "127.0.0.1", "hold", hostileDrain, agent)
		base, drain := srv.url, srv.drain
		req := spec.Request(base, "hold", false)
		body := whole(req)
		conn := write(t, req, len(body), body)
		agent.waitHeld(t, 1)
		drain()
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			t.Fatalf("a unary call in flight at drain: reading the answer: %v", err)
		}
		if body := readAll(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !spec.Refusal(body) || !strings.Contains(string(body), "shutting down") {
			t.Errorf("a unary call in flight at drain = %d %q, want 503 in the door's shape saying the sidecar is shutting down", resp.StatusCode, body)
		}
		// It had a connection, and the agent never answered.
		checkServerTiming(t, "a unary call ended at drain", resp, "queue", "connect")
	})
	t.Run("refused by the door, logged", func(t *testing.T) {
		beforeRouting(t)
		agent := newHostileAgent(t)
		srv := on(t, "127.0.0.1", "hold", "", agent)
		path, owner, refusal := srv.root+"/no/such/path", d.Name, spec.Refusal
		if way.mount == "/" {
			// Mounted at "/", a door claims its routes only: a path under
			// a tree it claims (OpenAI's /v1/…) is its 404; a door that
			// claims no tree (AgentCore's /invocations and /ping) has no
			// path of its own to refuse, and this row cannot hold for it
			// as written: a path it does not serve is the platform's, so
			// the row asks that the platform answers it, in its shape.
			owner, refusal = config.ProtocolAgentPlatform, probeOf(config.ProtocolAgentPlatform).Refusal
			for _, c := range srv.claims {
				if c.Tree {
					path, owner, refusal = srv.listener+c.Path+"/no/such/path", d.Name, spec.Refusal
					break
				}
			}
		}
		req, _ := http.NewRequest(http.MethodGet, path, http.NoBody)
		_, resp := call(t, req)
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusNotFound || !refusal(body) {
			t.Errorf("GET %s, a path %s does not serve = %d %q, want 404 in its shape", path, owner, resp.StatusCode, body)
		}
		if way.mount != "" && way.mount != "/" && owner == d.Name && !strings.Contains(string(body), "(paths under the mount "+way.mount+")") {
			t.Errorf("GET %s, mounted = %q, want the 404 to say its paths are under the mount %s", path, body, way.mount)
		}
		var lines []map[string]any
		for _, l := range srv.logs.FilterMessage("call").All() {
			lines = append(lines, l.ContextMap())
		}
		if len(lines) != 1 || lines[0]["protocol"] != owner || lines[0]["status"] != int64(http.StatusNotFound) ||
			lines[0]["reason"] != "NOT_FOUND" || lines[0]["route"] != "" {
			t.Errorf("the 404 logged %v, want one call line of protocol %s, status 404, reason NOT_FOUND, no route", lines, owner)
		}
	})
	t.Run("a web page's requests", func(t *testing.T) {
		beforeRouting(t)
		// The guard every door shares (proxy/internal/hostcheck), applied by the
		// Server before the door routes: on a loopback connection a Host other than
		// a loopback name (DNS rebinding) and a POST with another site's Origin are
		// refused 403 in the door's shape, one call line, the body unread, the agent
		// never called. A loopback name with any port or none is served: kubectl
		// port-forward and ssh -L reach the listener with Host localhost:<the
		// tunnel's port>.
		agent := newHostileAgent(t)
		srv := on(t, "127.0.0.1", "query", "trusted_hosts: [agents.example.com]\n", agent)
		base, logs := srv.url, srv.logs
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.listener, "http://"))
		refused := []struct {
			name, host, origin string
		}{
			{"a rebinding Host", "rebind.test:" + port, ""},
			{"a rebinding Host with its own Origin", "rebind.test:" + port, "http://rebind.test:" + port},
			{"a foreign Origin", "", "https://evil.example"},
			{"another local site's Origin", "", "http://127.0.0.1:1"},
			{"a null Origin", "", "null"},
		}
		for _, tt := range refused {
			logs.TakeAll()
			req := spec.Request(base, "query", false)
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			_, resp := send(t, req, 1<<20, nil) // the body never sent: answered unread
			body := readAll(t, resp)
			if resp.StatusCode != http.StatusForbidden || !spec.Refusal(body) {
				t.Errorf("%s = %d %q, want 403 in the door's shape", tt.name, resp.StatusCode, body)
			}
			var lines []map[string]any
			for _, l := range logs.FilterMessage("call").All() {
				lines = append(lines, l.ContextMap())
			}
			if len(lines) != 1 || lines[0]["protocol"] != d.Name || lines[0]["status"] != int64(http.StatusForbidden) ||
				lines[0]["reason"] != "PERMISSION_DENIED" || lines[0]["route"] != "" {
				t.Errorf("%s logged %v, want one call line of protocol %s, status 403, reason PERMISSION_DENIED, no route", tt.name, lines, d.Name)
			}
		}
		if n := agent.calls.Load(); n != 0 {
			t.Errorf("the agent ran %d calls of refused requests, want 0", n)
		}
		passed := []struct {
			name, host, origin string
		}{
			{"localhost", "localhost:" + port, ""},
			{"a tunnel's port", "localhost:" + strconv.Itoa(otherPort(port)), ""},
			{"a tunnel's port and its page's Origin", "localhost:" + strconv.Itoa(otherPort(port)), "http://localhost:" + strconv.Itoa(otherPort(port))},
			{"a loopback IP with another port", "127.0.0.1:1", ""},
			{"localhost, no port", "localhost", ""},
			{"127.0.0.1, no port", "127.0.0.1", ""},
			{"[::1], no port", "[::1]", ""},
			{"its own Origin", "", srv.listener},
			{"a trusted Host", "agents.example.com", ""},
			{"a trusted Host with its port and Origin", "agents.example.com:443", "https://agents.example.com"},
		}
		for _, tt := range passed {
			req := spec.Request(base, "query", false)
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if _, resp := call(t, req); resp.StatusCode != http.StatusOK {
				t.Errorf("%s = %d %q, want 200", tt.name, resp.StatusCode, readAll(t, resp))
			}
		}
		if n := agent.calls.Load(); n != int32(len(passed)) {
			t.Errorf("the agent ran %d calls, want %d", n, len(passed))
		}
	})
	t.Run("any Host off loopback", func(t *testing.T) {
		ips := nonLoopbackIPs(t)
		if len(ips) == 0 {
			t.Skip("this machine has no non-loopback IPv4 address to dial: the Host check off loopback is not exercised here")
		}
		everywhere, known := originEverywhere[d.Name]
		if !known {
			t.Fatalf("door %s: say in originEverywhere whether it holds Origin off loopback", d.Name)
		}
		agent := newHostileAgent(t)
		srv := on(t, ips[0], "query", "trusted_hosts: [agents.example.com]\n", agent)
		base := srv.url
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.listener, "http://"))
		req := spec.Request(base, "query", false)
		req.Host = "agents.example.com"
		if _, resp := call(t, req); resp.StatusCode != http.StatusOK {
			t.Errorf("Host agents.example.com on a connection to %s = %d %q, want 200: only a loopback connection checks the Host", ips[0], resp.StatusCode, readAll(t, resp))
		}
		// A page rebound to this address: its Origin is the Host. A door that holds
		// Origin everywhere refuses it; the runtimes' doors let it through (their
		// front end may pass on its page's Origin).
		want := http.StatusOK
		if everywhere {
			want = http.StatusForbidden
		}
		for _, tt := range []struct{ name, host, origin string }{
			{"a rebinding page", "rebind.test:" + port, "http://rebind.test:" + port},
			{"a page of this address", ips[0] + ":" + port, srv.listener},
		} {
			req := spec.Request(base, "query", false)
			req.Host = tt.host
			req.Header.Set("Origin", tt.origin)
			var resp *http.Response
			if everywhere {
				_, resp = send(t, req, 1<<20, nil) // refused unread: the body never sent
			} else {
				_, resp = call(t, req)
			}
			if body := readAll(t, resp); resp.StatusCode != want || want != http.StatusOK && !spec.Refusal(body) {
				t.Errorf("%s off loopback (Host %s, Origin %s) = %d %q, want %d", tt.name, tt.host, tt.origin, resp.StatusCode, body, want)
			}
		}
		for _, tt := range []struct{ name, host, origin string }{
			{"a trusted name's page", "", "https://agents.example.com"},
			{"a tunnel's page (ssh -L to this address)", "localhost:9000", "http://localhost:9000"},
		} {
			req := spec.Request(base, "query", false)
			if tt.host != "" {
				req.Host = tt.host
			}
			req.Header.Set("Origin", tt.origin)
			if _, resp := call(t, req); resp.StatusCode != http.StatusOK {
				t.Errorf("%s off loopback = %d %q, want 200", tt.name, resp.StatusCode, readAll(t, resp))
			}
		}
	})
	t.Run("a body not declared JSON", func(t *testing.T) {
		// A page can POST text/plain, a form or a body of no type to any address
		// without a CORS preflight. A door that takes only JSON refuses it 415 in
		// its shape, unread (its 1 MiB body is never sent) and without a slot (the
		// one slot is held), one call line; the runtimes' doors take any type, as
		// their platforms send.
		only, known := jsonDoors[d.Name]
		if !known {
			t.Fatalf("door %s: say in jsonDoors whether it takes only a JSON body", d.Name)
		}
		types := []string{"text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}
		agent := newHostileAgent(t)
		if !only {
			base := on(t, "127.0.0.1", "query", "", agent).url
			for _, ct := range types {
				req := spec.Request(base, "query", false)
				req.Header.Del("Content-Type")
				if ct != "" {
					req.Header.Set("Content-Type", ct)
				}
				if _, resp := call(t, req); resp.StatusCode != http.StatusOK {
					t.Errorf("Content-Type %q = %d %q, want 200: the door takes any type", ct, resp.StatusCode, readAll(t, resp))
				}
			}
			return
		}
		srv := on(t, "127.0.0.1", "hold", "limits: {concurrency: 1, queue: 0}\n", agent)
		base, logs := srv.url, srv.logs
		held := spec.Request(base, "hold", false)
		body := whole(held)
		write(t, held, len(body), body) // answered when the test ends
		agent.waitHeld(t, 1)
		for _, ct := range types {
			logs.TakeAll()
			req := spec.Request(base, "hold", false)
			req.Header.Del("Content-Type")
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			_, resp := send(t, req, 1<<20, nil)
			body := readAll(t, resp)
			if resp.StatusCode != http.StatusUnsupportedMediaType || !spec.Refusal(body) {
				t.Errorf("Content-Type %q, the one slot held, the body unsent = %d %q, want 415 in the door's shape", ct, resp.StatusCode, body)
			}
			var lines []map[string]any
			for _, l := range logs.FilterMessage("call").All() {
				lines = append(lines, l.ContextMap())
			}
			if len(lines) != 1 || lines[0]["protocol"] != d.Name || lines[0]["status"] != int64(http.StatusUnsupportedMediaType) ||
				lines[0]["reason"] != "UNSUPPORTED_MEDIA_TYPE" || lines[0]["route"] == "" {
				t.Errorf("Content-Type %q logged %v, want one call line of protocol %s, status 415, reason UNSUPPORTED_MEDIA_TYPE, the route's", ct, lines, d.Name)
			}
		}
		if n := agent.calls.Load(); n != 1 {
			t.Errorf("the agent got %d calls, want only the held one", n)
		}
	})
	t.Run("headers and ids capped", func(t *testing.T) {
		agent := newHostileAgent(t)
		base := on(t, "127.0.0.1", "hold", "limits: {header_bytes: 4KiB}\n", agent).url
		req := spec.Request(base, "hold", false)
		req.Header.Set("X-Agent-Session-Id", strings.Repeat("s", 64<<10))
		_, resp := call(t, req)
		if readAll(t, resp); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a 64 KiB header over a 4 KiB limit = %d, want 431", resp.StatusCode)
		}
		if spec.LongID == nil {
			return
		}
		_, resp = call(t, spec.LongID(base, "hold", 64<<10))
		if body := readAll(t, resp); !spec.Refusal(body) || agent.held.Load() != 0 {
			t.Errorf("a 64 KiB id = %d %q (agent called: %v), want refused in the door's shape", resp.StatusCode, body, agent.held.Load() != 0)
		}
	})
}

// a2aREST is the A2A door called through its HTTP+JSON binding: POST
// /message:send or /message:stream in 1.0; its refusals a
// google.rpc.Status, a stream's failures a failed task's status update.
var a2aREST = core.Probe{
	Section: core.TargetSection,
	Request: func(base, _ string, stream bool) *http.Request {
		path := "/message:send"
		if stream {
			path = "/message:stream"
		}
		r := core.JSONRequest(base+path, `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`)
		r.Header.Set("A2A-Version", "1.0")
		return r
	},
	Refusal: func(body []byte) bool {
		var v struct {
			Error *struct {
				Code    int
				Status  string
				Message string
			}
		}
		return json.Unmarshal(body, &v) == nil && v.Error != nil && v.Error.Code >= 400 && v.Error.Status != "" && v.Error.Message != ""
	},
	Errors: func(body []byte) ([]string, error) {
		return core.SSEErrors(body, func(data []byte) (string, bool) {
			var v struct {
				StatusUpdate struct {
					Status struct {
						State   string
						Message struct{ Parts []struct{ Text string } }
					}
				}
			}
			json.Unmarshal(data, &v)
			var text string
			for _, p := range v.StatusUpdate.Status.Message.Parts {
				text += p.Text
			}
			return text, v.StatusUpdate.Status.State == "TASK_STATE_FAILED"
		})
	},
	LongID: func(base, _ string, n int) *http.Request {
		r := core.JSONRequest(base+"/message:send", fmt.Sprintf(`{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":"hi"}]}}`, strings.Repeat("i", n)))
		r.Header.Set("A2A-Version", "1.0")
		return r
	},
	// GET /tasks/{id} of the task the stream's first event names.
	Owned: func(base string, first []byte, auth string) *http.Request {
		var v struct{ Task struct{ ID string } }
		json.Unmarshal(bytes.TrimPrefix(bytes.TrimSpace(first), []byte("data: ")), &v)
		r, _ := http.NewRequest(http.MethodGet, base+"/tasks/"+v.Task.ID, http.NoBody)
		r.Header.Set("A2A-Version", "1.0")
		r.Header.Set("Authorization", auth)
		return r
	},
}

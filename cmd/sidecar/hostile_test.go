package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// hostileAgent is the agent behind every door of the table: "query"
// answers {"text":"answered"} at once, "hold"
// answers when the test ends, "stream_hold" sends a record and waits for
// its caller to go (telling left), "cut" drops the connection in the
// middle of its second record.
type hostileAgent struct {
	url   string
	calls atomic.Int32 // every request it got
	held  atomic.Int32
	left  chan struct{}
}

const hostileMethods = `
methods:
  query: {}
  hold: {}
  stream_hold: {mode: stream}
  cut: {mode: stream}
`

func newHostileAgent(t *testing.T) *hostileAgent {
	a := &hostileAgent{left: make(chan struct{}, 1)}
	ended := t.Context()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/query":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"text":"answered"}`)
		case "/hold":
			a.held.Add(1)
			select {
			case <-r.Context().Done():
			case <-ended.Done():
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"held":true}`)
		case "/stream_hold":
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"n\":1}\n")
			http.NewResponseController(w).Flush()
			a.held.Add(1)
			select {
			case <-r.Context().Done():
				a.left <- struct{}{}
			case <-ended.Done():
			}
		case "/cut":
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":1}\n{\"i\":")
			http.NewResponseController(w).Flush()
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

// waitHeld waits for the agent to hold n calls, failing after a bound no
// working sidecar comes near.
func (a *hostileAgent) waitHeld(t *testing.T, n int32) {
	t.Helper()
	for deadline := time.Now().Add(hostileBound); a.held.Load() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the agent holds %d calls after %v, want %d", a.held.Load(), hostileBound, n)
		}
	}
}

// hostileBound is how long an answer that must come at once may take
// before the test fails: generous, so a loaded machine never fails it,
// and short of the sidecar's own timeouts (60s for a request to arrive),
// so an answer that waits for the body that never comes fails it.
const hostileBound = 15 * time.Second

// hostileDrain is the shutdown section of the tests that drain with a
// call in flight: its last second (endWindow) is for ending the call,
// time enough for its failure to be written on a loaded machine (the
// default 500ms drain's 125ms was not, under -race).
const hostileDrain = "shutdown: {drain: 4s, agent_grace: 1s}\n"

// probeOf is the Probe of the registered door protocol.
func probeOf(protocol string) core.Probe {
	for _, d := range doors.All {
		if d.Name == protocol {
			return d.Probe
		}
	}
	return core.Probe{}
}

// probeSection is the protocols section of the door protocol as
// hostileSidecar writes it (its Probe's, calling method), parsed; nil for
// agent_platform.
func probeSection(t *testing.T, protocol, method string) *config.Door {
	t.Helper()
	section := probeOf(protocol).Section
	if section == nil {
		return nil
	}
	yaml := "upstream: {url: \"http://127.0.0.1:1\"}\n" + hostileMethods + "protocols:\n  " + protocol + ": " + section("127.0.0.1:2", method) + "\n"
	cfg, err := config.Parse("sidecar.yaml", []byte(yaml), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Protocols.Door(protocol)
}

// hostileSidecar serves cfg's doors in process (serve, as run does) in
// front of agent with door protocol calling method; it returns the door's
// base URL and a func that starts the drain, as SIGTERM does.
func hostileSidecar(t *testing.T, protocol, method, head string, agent *hostileAgent) (string, func()) {
	t.Helper()
	base, drain, _ := hostileServe(t, protocol, method, head, agent)
	return base, drain
}

// hostileServe is hostileSidecar, with the sidecar's log lines (those of
// Info and above) kept for the test to read.
func hostileServe(t *testing.T, protocol, method, head string, agent *hostileAgent) (string, func(), *observer.ObservedLogs) {
	t.Helper()
	return hostileServeOn(t, "127.0.0.1", protocol, method, head, agent)
}

// hostileServeOn is hostileServe with the door listening on the IP
// address ip.
func hostileServeOn(t *testing.T, ip, protocol, method, head string, agent *hostileAgent) (string, func(), *observer.ObservedLogs) {
	t.Helper()
	observed, logs := observer.New(zap.InfoLevel)
	logger := zaptest.NewLogger(t, zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, observed) })))
	yaml := "upstream: {url: \"" + agent.url + "\"}\n" + head + hostileMethods
	if !strings.Contains(head, "shutdown:") {
		yaml += "shutdown: {drain: 500ms, agent_grace: 1s}\n"
	}
	door := false
	if section := probeOf(protocol).Section; section != nil {
		door = true
		yaml += "protocols:\n  " + protocol + ": " + section(net.JoinHostPort(ip, "0"), method) + "\n"
	}
	cfg, err := config.Parse("sidecar.yaml", []byte(yaml), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	contract := "127.0.0.1:0"
	if !door {
		contract = net.JoinHostPort(ip, "0")
	}
	ln, err := net.Listen("tcp", contract)
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cfg, ln, logger, agentIO{env: []string{}}, defaultServerLimits)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(cfg.Shutdown.Budget() + hostileBound):
			t.Errorf("serve still running %v after its context ended", cfg.Shutdown.Budget()+hostileBound)
		}
	})
	// Every listener is open before the first says "listening"; a door's
	// address is in its own line.
	for deadline := time.Now().Add(hostileBound); ; time.Sleep(5 * time.Millisecond) {
		if a := listened(logs, protocol); a != "" {
			if door {
				addr = a
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s door did not log listening after %v", protocol, hostileBound)
		}
	}
	return "http://" + addr, cancel, logs
}

// listened is the address the "listening" line of protocol names, or "".
func listened(logs *observer.ObservedLogs, protocol string) string {
	for _, e := range logs.FilterMessage("listening").All() {
		if e.ContextMap()["protocol"] == protocol {
			a, _ := e.ContextMap()["addr"].(string)
			return a
		}
	}
	return ""
}

// write writes req's head on a new connection with Content-Length n and
// then body (which may be shorter: the rest never comes). The connection
// fails the test past hostileBound.
func write(t *testing.T, req *http.Request, n int, body []byte) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(hostileBound))
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", req.Method, req.URL.RequestURI(), req.Host) // NewRequest's: the URL's
	req.Header.Write(&head)
	fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", n)
	if _, err := conn.Write(append(head.Bytes(), body...)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// send writes req as write does and reads the answer's head.
func send(t *testing.T, req *http.Request, n int, body []byte) (net.Conn, *http.Response) {
	t.Helper()
	conn := write(t, req, n, body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL, err)
	}
	return conn, resp
}

// whole is req's body, read.
func whole(req *http.Request) []byte {
	body, _ := io.ReadAll(req.Body)
	return body
}

// call sends req whole.
func call(t *testing.T, req *http.Request) (net.Conn, *http.Response) {
	t.Helper()
	body := whole(req)
	return send(t, req, len(body), body)
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v (read %q)", err, b)
	}
	return b
}

// checkServerTiming checks that resp carries Server-Timing with the
// entries names, in order, each with a dur.
func checkServerTiming(t *testing.T, what string, resp *http.Response, names ...string) {
	t.Helper()
	v := resp.Header.Get("Server-Timing")
	var got []string
	for _, e := range strings.Split(v, ", ") {
		name, dur, _ := strings.Cut(e, ";dur=")
		if _, err := strconv.ParseFloat(dur, 64); err != nil {
			t.Errorf("%s: Server-Timing %q: entry %q has no dur", what, v, e)
		}
		got = append(got, name)
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s: Server-Timing %q, want the entries %v", what, v, names)
	}
}

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
// against the same hostile callers and agents: a body over
// limits.request_bytes and a call while busy are refused in the door's
// shape before their body is read (none is ever sent); a caller leaving
// mid-stream ends the agent's request; an agent cut mid-record gives
// exactly one failure in the door's shape; a stream or unary call in
// flight at drain gets the door's shutting-down failure; a path the door
// does not serve is its 404 and one call log line of its protocol;
// headers past limits.header_bytes are refused, and ids in a body past
// their cap. A
// stream's head and a failure carry the Server-Timing of the phases the
// call reached.
//
// A door with a second binding is called through each: A2A's HTTP+JSON
// (a2aREST) too, but for the rows whose refusal comes before the door
// routes a request (a path it does not serve, a web page's Host or
// Origin), which answer in the door's first shape whatever the path.
func TestHostileDoors(t *testing.T) {
	type binding struct {
		name string
		spec core.Probe
		rest bool // a second binding: no rows of refusals before routing
	}
	var bindings []binding
	for _, d := range doors.All {
		bindings = append(bindings, binding{d.Name, d.Probe, false})
		if d.Name == "a2a" {
			bindings = append(bindings, binding{"a2a HTTP+JSON", a2aREST, true})
		}
	}
	for _, b := range bindings {
		d := struct{ Name string }{"a2a"}
		if !b.rest {
			d.Name = b.name
		}
		spec := b.spec
		if spec.Request == nil || spec.Refusal == nil || spec.Errors == nil {
			t.Errorf("door %s is registered without a Probe (its Protocol's Request, Refusal and Errors): the hostile-input table cannot call it", d.Name)
			continue
		}
		beforeRouting := func(t *testing.T) {
			if b.rest {
				t.Skip("refused before the door routes it: in the door's JSON-RPC shape, the a2a row's")
			}
		}
		t.Run(b.name, func(t *testing.T) {
			t.Run("body over the limit", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, _ := hostileSidecar(t, d.Name, "hold", "limits: {request_bytes: 1KiB}\n", agent)
				_, resp := send(t, spec.Request(base, "hold", false), 1<<20, nil)
				if body := readAll(t, resp); resp.StatusCode != http.StatusRequestEntityTooLarge || !spec.Refusal(body) {
					t.Errorf("a 1 MiB body, unsent, over a 1 KiB limit = %d %q, want 413 in the door's shape", resp.StatusCode, body)
				}
			})
			t.Run("busy", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, _ := hostileSidecar(t, d.Name, "hold", "limits: {concurrency: 1, queue: 0}\n", agent)
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
				base, _ := hostileSidecar(t, d.Name, "stream_hold", "", agent)
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
			t.Run("agent cut mid-record", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, _ := hostileSidecar(t, d.Name, "cut", "", agent)
				_, resp := call(t, spec.Request(base, "cut", true))
				body := readAll(t, resp)
				errs, err := spec.Errors(body)
				if resp.StatusCode != http.StatusOK || err != nil || len(errs) != 1 {
					t.Errorf("a stream cut mid-record = %d %q: failures %q (%v), want exactly one in the door's shape", resp.StatusCode, body, errs, err)
				}
			})
			t.Run("drain", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, drain := hostileSidecar(t, d.Name, "stream_hold", hostileDrain, agent)
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
				base, drain := hostileSidecar(t, d.Name, "hold", hostileDrain, agent)
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
				base, _, logs := hostileServe(t, d.Name, "hold", "", agent)
				req, _ := http.NewRequest(http.MethodGet, base+"/no/such/path", http.NoBody)
				_, resp := call(t, req)
				body := readAll(t, resp)
				if resp.StatusCode != http.StatusNotFound || !spec.Refusal(body) {
					t.Errorf("a path the door does not serve = %d %q, want 404 in the door's shape", resp.StatusCode, body)
				}
				var lines []map[string]any
				for _, l := range logs.FilterMessage("call").All() {
					lines = append(lines, l.ContextMap())
				}
				if len(lines) != 1 || lines[0]["protocol"] != d.Name || lines[0]["status"] != int64(http.StatusNotFound) ||
					lines[0]["reason"] != "NOT_FOUND" || lines[0]["route"] != "" {
					t.Errorf("the 404 logged %v, want one call line of protocol %s, status 404, reason NOT_FOUND, no route", lines, d.Name)
				}
			})
			t.Run("a web page's requests", func(t *testing.T) {
				beforeRouting(t)
				// The guard every door shares (proxy/internal/hostcheck),
				// applied by the Server before the door routes: on a
				// loopback connection a Host other than a loopback name
				// (DNS rebinding) and a POST with another site's Origin
				// are refused 403 in the door's shape, one call line, the
				// body unread, the agent never called. A loopback name
				// with any port or none is served: kubectl port-forward
				// and ssh -L reach the listener with Host localhost:<the
				// tunnel's port>.
				agent := newHostileAgent(t)
				base, _, logs := hostileServe(t, d.Name, "query", "trusted_hosts: [agents.example.com]\n", agent)
				_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
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
					{"its own Origin", "", base},
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
				base, _, _ := hostileServeOn(t, ips[0], d.Name, "query", "trusted_hosts: [agents.example.com]\n", agent)
				_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
				req := spec.Request(base, "query", false)
				req.Host = "agents.example.com"
				if _, resp := call(t, req); resp.StatusCode != http.StatusOK {
					t.Errorf("Host agents.example.com on a connection to %s = %d %q, want 200: only a loopback connection checks the Host", ips[0], resp.StatusCode, readAll(t, resp))
				}
				// A page rebound to this address: its Origin is the Host.
				// A door that holds Origin everywhere refuses it; the
				// runtimes' doors let it through (their front end may pass
				// on its page's Origin).
				want := http.StatusOK
				if everywhere {
					want = http.StatusForbidden
				}
				for _, tt := range []struct{ name, host, origin string }{
					{"a rebinding page", "rebind.test:" + port, "http://rebind.test:" + port},
					{"a page of this address", ips[0] + ":" + port, base},
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
				// A page can POST text/plain, a form or a body of no type
				// to any address without a CORS preflight. A door that
				// takes only JSON refuses it 415 in its shape, unread
				// (its 1 MiB body is never sent) and without a slot (the
				// one slot is held), one call line; the runtimes' doors
				// take any type, as their platforms send.
				only, known := jsonDoors[d.Name]
				if !known {
					t.Fatalf("door %s: say in jsonDoors whether it takes only a JSON body", d.Name)
				}
				types := []string{"text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}
				agent := newHostileAgent(t)
				if !only {
					base, _ := hostileSidecar(t, d.Name, "query", "", agent)
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
				base, _, logs := hostileServe(t, d.Name, "hold", "limits: {concurrency: 1, queue: 0}\n", agent)
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
				base, _ := hostileSidecar(t, d.Name, "hold", "limits: {header_bytes: 4KiB}\n", agent)
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
		})
	}
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
}

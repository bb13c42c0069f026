package main

import (
	"bufio"
	"bytes"
	"context"
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
				select {
				case a.left <- struct{}{}:
				default: // told already: a test holding several streams reads none
				}
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
	return doorNamed(protocol).Probe
}

// probeSection is the protocols section of the door protocol as
// hostileSidecar writes it (its Probe's, calling method, on a listener of
// its own), parsed; nil for agent_platform.
func probeSection(t *testing.T, protocol, method string) *config.Door {
	t.Helper()
	section := probeOf(protocol).Section
	if section == nil {
		return nil
	}
	cfg, err := config.Parse("sidecar.yaml", []byte(probeYAML(protocol, section(core.At{Listen: "127.0.0.1:2"}, method))), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Protocols.Door(protocol)
}

// probeYAML is a config of the hostile methods with protocol's section.
func probeYAML(protocol, section string) string {
	return "upstream: {url: \"http://127.0.0.1:1\"}\n" + hostileMethods + "protocols:\n  " + protocol + ": " + section + "\n"
}

// hostileWay is where the table serves a door: on a listener of its own
// (mount ""), or mounted on the platform's listener under mount; its
// name, a subtest's, has no "/" (-run splits there).
type hostileWay struct {
	name  string
	mount string
}

var ownListener = hostileWay{name: "own listener"}

// hostileWays are the ways TestHostileDoors serves d, found from its
// registration alone: on a listener of its own; mounted under /d; and
// mounted at "/" when config takes it there (its Kind declares Routes
// that leave the platform's paths alone). agent_platform is served its
// own way only: it is the listener the others mount on.
func hostileWays(t *testing.T, d doors.Door) []hostileWay {
	t.Helper()
	if d.Probe.Section == nil {
		return []hostileWay{ownListener}
	}
	ways := []hostileWay{ownListener, {name: "mounted under a path", mount: "/d"}}
	_, err := config.Parse("sidecar.yaml", []byte(probeYAML(d.Name, d.Probe.Section(core.At{Mount: "/"}, "query"))), doors.Kinds(doors.All)...)
	if err != nil {
		// A2A's JSON-RPC endpoint and MCP's (mounted, its endpoint is the
		// mount) are "/" itself, the platform's probe: validate refuses
		// them there, and so the table cannot serve them there.
		if !strings.Contains(err.Error(), "protocols."+d.Name+".mount") {
			t.Errorf("door %s mounted at \"/\": %v, want served, or refused by validate for its mount", d.Name, err)
		}
		t.Logf("door %s is not tried mounted at \"/\": validate refuses it there: %v", d.Name, err)
		return ways
	}
	return append(ways, hostileWay{name: "mounted at the root", mount: "/"})
}

// hostileServed is a sidecar served for the table, and where its door is.
type hostileServed struct {
	// listener is the listener the door is served on, http://host:port:
	// its own, or the platform's when it is mounted.
	listener string
	// root is where the door's own paths start: the listener, then its
	// mount (at "/", the listener).
	root string
	// url is the door's URL (doors.Door.URL), what its Probe calls.
	url string
	// claims are the paths the door claims of the platform's listener
	// when it is mounted (config.Config.Claims).
	claims []config.Claim
	drain  func()
	logs   *observer.ObservedLogs
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
	s := hostileServeWay(t, ownListener, ip, protocol, method, head, agent)
	return s.listener, s.drain, s.logs
}

// hostileServeWay serves the door protocol the way way says, its
// listener (the platform's when mounted) on the IP address ip.
func hostileServeWay(t *testing.T, way hostileWay, ip, protocol, method, head string, agent *hostileAgent) hostileServed {
	t.Helper()
	yaml := "upstream: {url: \"" + agent.url + "\"}\n" + head + hostileMethods
	if !strings.Contains(head, "shutdown:") {
		yaml += "shutdown: {drain: 500ms, agent_grace: 1s}\n"
	}
	ownDoor := false // the door has a listener of its own
	if section := probeOf(protocol).Section; section != nil {
		at := core.At{Listen: net.JoinHostPort(ip, "0"), Mount: way.mount}
		ownDoor = way.mount == ""
		yaml += "protocols:\n  " + protocol + ": " + section(at, method) + "\n"
	}
	contract := net.JoinHostPort(ip, "0")
	if ownDoor {
		contract = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", contract)
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	cfg, cancel, logs := serveYAML(t, yaml, ln)
	// Every listener is open before the first says "listening"; a door's
	// address is in its own line, a mounted door's is the platform's.
	for deadline := time.Now().Add(hostileBound); ; time.Sleep(5 * time.Millisecond) {
		if a, mount := listened(logs, protocol); a != "" {
			if mount != way.mount {
				t.Fatalf("the %s door logged listening with mount %q, want %q", protocol, mount, way.mount)
			}
			if ownDoor {
				addr = a
			} else if a != addr {
				t.Fatalf("the %s door logged listening on %s, want the platform's %s", protocol, a, addr)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s door did not log listening after %v", protocol, hostileBound)
		}
	}
	served := hostileServed{listener: "http://" + addr, drain: cancel, logs: logs}
	served.root = served.listener
	if way.mount != "/" {
		served.root += way.mount
	}
	door := cfg.Protocols.Door(protocol)
	served.url = doorNamed(protocol).URL(served.listener, door)
	if door != nil {
		served.claims = cfg.Claims(door)
	}
	return served
}

// serveYAML serves the config yaml in process (serve, as run does), the
// platform's listener on ln, until the test ends; it returns the config,
// a func that starts the drain, as SIGTERM does, and the sidecar's log
// lines (those of Info and above).
func serveYAML(t *testing.T, yaml string, ln net.Listener) (*config.Config, func(), *observer.ObservedLogs) {
	t.Helper()
	cfg, err := config.Parse("sidecar.yaml", []byte(yaml), doors.Kinds(doors.All)...)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	logger := zaptest.NewLogger(t, zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, observed) })))
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
	return cfg, cancel, logs
}

// doorNamed is the registered door protocol.
func doorNamed(protocol string) doors.Door {
	for _, d := range doors.All {
		if d.Name == protocol {
			return d
		}
	}
	return doors.Door{}
}

// listened is the address the "listening" line of protocol names, or "",
// and the mount it names ("" for a listener of its own).
func listened(logs *observer.ObservedLogs, protocol string) (addr, mount string) {
	for _, e := range logs.FilterMessage("listening").All() {
		if e.ContextMap()["protocol"] == protocol {
			addr, _ = e.ContextMap()["addr"].(string)
			mount, _ = e.ContextMap()["mount"].(string)
			return addr, mount
		}
	}
	return "", ""
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

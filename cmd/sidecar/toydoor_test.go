package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// toyProtocol is a door written in this file alone, registered as a
// door's package registers itself: its config.Kind (TargetKind: listen or
// mount, and method; mounted at "/" it claims routes), its Options, its
// New (newToyDoor) and its Probe. Its one call route is POST /ask, whose
// body is the method's input; GET /up is its health route. Nothing
// outside this file names it.
func toyProtocol(name string, routes ...string) core.Protocol[toyOptions] {
	return core.Protocol[toyOptions]{
		Kind: config.TargetKind(name, ":9100", routes...),
		Options: func(door *config.Door, _ core.Host) toyOptions {
			return toyOptions{name: name, method: door.Options.(*config.Target).Method}
		},
		Probe: core.Probe{
			Section: core.TargetSection,
			Request: func(base, _ string, _ bool) *http.Request { return core.JSONRequest(base+"/ask", `{"q":1}`) },
			Refusal: func(body []byte) bool { return strings.HasPrefix(string(body), "toy refused ") },
			Errors:  func([]byte) ([]string, error) { return nil, errors.New("the toy door does not stream") },
		},
	}
}

type toyOptions struct{ name, method string }

// toyDoor answers "toy out <output>", refuses "toy refused <REASON>: <message>".
type toyDoor struct{ toyOptions }

func newToyDoor(_ *config.Config, o toyOptions) (*toyDoor, error) { return &toyDoor{o}, nil }

func (d *toyDoor) Protocol() string { return d.name }

func (d *toyDoor) Handler(call func(route string, stream bool) http.Handler, health http.Handler, refuse core.Refuse) http.Handler {
	ask := call("/ask", false)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ask" && r.Method == http.MethodPost:
			ask.ServeHTTP(w, r)
		case r.URL.Path == "/up":
			health.ServeHTTP(w, r)
		default:
			refuse(w, r, "", core.NoRoute(r.URL.Path, "POST /ask and GET /up"))
		}
	})
}

func (d *toyDoor) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	m := cfg.Lookup(d.method, false)
	c := core.Call{Method: m, Name: d.method, Input: core.Input{Raw: json.RawMessage(body)}, Header: r.Header, Route: route}
	return core.Exchange{Call: c, Writer: d}, nil
}

func (d *toyDoor) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	return fmt.Fprintf(w, "toy out %s\n", out)
}

func (d *toyDoor) Encoder(http.ResponseWriter) core.Encoder { return nil } // never streams

func (d *toyDoor) WriteError(w http.ResponseWriter, f core.Failure) {
	w.WriteHeader(f.Status)
	fmt.Fprintf(w, "toy refused %s: %s\n", f.Reason, f.Message)
}

// toyAgent answers every unary call {"text":"answered"}, counting them.
type toyAgent struct{ calls atomic.Int32 }

func (a *toyAgent) Unary(context.Context, core.Call) (json.RawMessage, error) {
	a.calls.Add(1)
	return json.RawMessage(`{"text":"answered"}`), nil
}

func (a *toyAgent) Stream(context.Context, core.Call) (core.Records, error) {
	return nil, errors.New("the toy agent does not stream")
}

// TestToyDoorMounts: a door registered only in a list, as a door's
// package registers itself, mounts with no edit outside its package:
// config decodes its mount and checks what it claims against the
// platform's paths and the other doors' (a collision named with both
// owners and its line), and the program's door building (openDoorsOf:
// doors.Build, mountDoors, proxy.Mounted) serves it on the platform's
// listener, under a path and at "/", beside MCP under /mcp: its calls
// answered in its own shape and logged with its protocol, its 404s its
// own under its mount, every other path the platform's.
func TestToyDoorMounts(t *testing.T) {
	list := append(append([]doors.Door{}, doors.All...), doors.Register(toyProtocol("toy", "/ask"), newToyDoor))
	head := "upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {query: {}}\n"

	for _, tt := range []struct{ name, mount, root string }{
		{"under a path", "/t", "/t"},
		{"at the root", "/", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("sidecar.yaml", []byte(head+"protocols:\n  toy: {mount: \""+tt.mount+"\", method: query}\n  mcp: {mount: /mcp}\n"), doors.Kinds(list)...)
			if err != nil {
				t.Fatal(err)
			}
			agent := &toyAgent{}
			listener, logs := serveToy(t, cfg, list, agent)
			do := func(method, path, body string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(method, listener+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				_, resp := call(t, req)
				return resp.StatusCode, string(readAll(t, resp))
			}
			for _, c := range []struct {
				method, path, body string
				status             int
				want, protocol     string
			}{
				{"POST", tt.root + "/ask", `{"q":1}`, 200, "toy out {\"text\":\"answered\"}\n", "toy"},
				{"POST", "/api/reasoning_engine", `{"class_method":"query","input":{}}`, 200, `{"output":{"text":"answered"}}`, "agent_platform"},
				{"GET", "/healthz", "", 200, `"status":"ok"`, ""},
				{"GET", "/mcp", "", 405, `"jsonrpc":"2.0"`, "mcp"},
			} {
				logs.TakeAll()
				if status, body := do(c.method, c.path, c.body); status != c.status || !strings.Contains(body, c.want) {
					t.Errorf("%s %s = %d %q, want %d with %q", c.method, c.path, status, body, c.status, c.want)
				}
				if c.protocol == "" {
					continue
				}
				if l := callLine(t, logs); l["protocol"] != c.protocol {
					t.Errorf("%s %s logged %v, want one call line of protocol %s", c.method, c.path, l, c.protocol)
				}
			}
			// A path the toy does not serve: under its mount, its own 404
			// saying so; at "/", where it claims /ask only, the platform's.
			status, body := do("GET", tt.root+"/nope", "")
			if tt.root != "" && (status != 404 || body != "toy refused NOT_FOUND: no route \"/nope\"; the sidecar serves POST /ask and GET /up (paths under the mount /t)\n") {
				t.Errorf("GET /t/nope = %d %q, want the toy's 404 under its mount", status, body)
			}
			if tt.root == "" && (status != 404 || !strings.Contains(body, `"detail"`)) {
				t.Errorf("GET /nope = %d %q, want the platform's 404", status, body)
			}
			if n := agent.calls.Load(); n != 2 {
				t.Errorf("the agent got %d calls, want 2 (the toy's and the platform's)", n)
			}
		})
	}

	// What the toy claims is checked against every other owner of the
	// platform's listener, by the Routes its registration declares.
	more := append(append([]doors.Door{}, list...),
		doors.Register(toyProtocol("ping", "/health"), newToyDoor),
		doors.Register(toyProtocol("echo", "/ask"), newToyDoor))
	for _, tt := range []struct{ name, section, want string }{
		{"under the contract", "  toy: {mount: /api/toy, method: query}",
			`sidecar.yaml:4: protocols.toy.mount: "/api/toy" claims /api/toy/…, which the platform's contract (/api/…) serves`},
		{"on a platform probe", "  toy: {mount: /healthz, method: query}",
			`sidecar.yaml:4: protocols.toy.mount: "/healthz" claims /healthz/…, which the platform's health probe /healthz serves`},
		{"a route of the platform's at the root", "  ping: {mount: /, method: query}",
			`sidecar.yaml:4: protocols.ping.mount: "/" claims /health, which the platform's health probe /health serves`},
		{"two doors' routes at the root", "  toy: {mount: /, method: query}\n  openai: {mount: /, method: query}\n  echo: {mount: /, method: query}",
			`sidecar.yaml:6: protocols.echo.mount: "/" claims /ask, which protocols.toy.mount "/" (line 4) serves`},
		{"two doors under one path", "  toy: {mount: /x, method: query}\n  mcp: {mount: /x/mcp}",
			`sidecar.yaml:5: protocols.mcp.mount: "/x/mcp" claims /x/mcp/…, which protocols.toy.mount "/x" (line 4) serves`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("sidecar.yaml", []byte(head+"protocols:\n"+tt.section+"\n"), doors.Kinds(more)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want %q", err, tt.want)
			}
		})
	}
}

// serveToy serves cfg's doors of list as serve does (openDoorsOf), the
// platform's listener on loopback, in front of agent; it returns the
// platform's listener's URL and the log lines.
func serveToy(t *testing.T, cfg *config.Config, list []doors.Door, agent core.Agent) (string, *observer.ObservedLogs) {
	t.Helper()
	observed, logs := observer.New(zap.InfoLevel)
	logger := zaptest.NewLogger(t, zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, observed) })))
	s := &proxy.Server{Config: cfg, Agent: agent, Logger: logger, Protocols: doors.Names(list)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served, err := openDoorsOf(list, cfg, s, ln, nil, logger, defaultServerLimits)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, len(served))
	for _, d := range served {
		go func() { errc <- d.srv.Serve(d.ln) }()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hostileBound)
		defer cancel()
		for _, d := range served {
			if err := d.srv.Shutdown(ctx); err != nil {
				t.Errorf("shutting down the %s door's server: %v", d.protocol, err)
			}
		}
		for range served {
			<-errc
		}
	})
	return "http://" + ln.Addr().String(), logs
}

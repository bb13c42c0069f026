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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// doorSpec is what the hostile-input table needs of a registered door:
// how to call it and how to read its failures. Each door of doors.All
// has one (TestHostileDoors fails for a door without), so a new door
// gets the whole table by registering and saying these.
type doorSpec struct {
	// section is the door's protocols section, listening on listen, its
	// calls going to method; "" for agent_platform, whose requests name
	// their method.
	section func(listen, method string) string
	// request is a call of method, which streams or not, with a small
	// input.
	request func(base, method string, stream bool) *http.Request
	// refusal reports whether body, answered before the first byte, is
	// the door's error shape.
	refusal func(body []byte) bool
	// errors are the failures in a stream's body, in the door's shape:
	// each one's text.
	errors func(body []byte) ([]string, error)
	// longID, for a door that takes ids in its body, is a call of method
	// whose id is n bytes long; nil when its ids come only in headers
	// (capped with every header by limits.header_bytes).
	longID func(base, method string, n int) *http.Request
}

var doorSpecs = map[string]doorSpec{
	"agent_platform": {
		request: func(base, method string, stream bool) *http.Request {
			route := "/api/reasoning_engine"
			if stream {
				route = "/api/stream_reasoning_engine"
			}
			return jsonRequest(base+route, fmt.Sprintf(`{"class_method":%q,"input":{"q":1}}`, method))
		},
		refusal: func(body []byte) bool {
			var v struct{ Detail *string }
			return json.Unmarshal(body, &v) == nil && v.Detail != nil
		},
		errors: func(body []byte) ([]string, error) {
			var errs []string
			for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
				var v struct{ Error json.RawMessage }
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					return nil, fmt.Errorf("line %q: %v", line, err)
				}
				if v.Error != nil {
					errs = append(errs, string(v.Error))
				}
			}
			return errs, nil
		},
	},
	"agentcore": {
		section: targetSection,
		request: func(base, _ string, _ bool) *http.Request { return jsonRequest(base+"/invocations", `{"q":1}`) },
		refusal: func(body []byte) bool {
			var v struct{ Error *string }
			return json.Unmarshal(body, &v) == nil && v.Error != nil
		},
		errors: func(body []byte) ([]string, error) {
			return sseErrors(body, func(data []byte) (string, bool) {
				var v struct {
					Error     string
					ErrorType string `json:"error_type"`
				}
				json.Unmarshal(data, &v)
				return v.Error, v.ErrorType != ""
			})
		},
	},
	"foundry": {
		section: targetSection,
		request: func(base, _ string, _ bool) *http.Request { return jsonRequest(base+"/invocations", `{"q":1}`) },
		refusal: func(body []byte) bool { _, ok := foundryError(body); return ok },
		errors:  func(body []byte) ([]string, error) { return sseErrors(body, foundryError) },
	},
	"a2a": {
		section: targetSection,
		request: func(base, _ string, stream bool) *http.Request {
			return jsonRequest(base+"/", a2aMessage(`1`, stream))
		},
		refusal: func(body []byte) bool { _, ok := rpcError(body); return ok },
		errors: func(body []byte) ([]string, error) {
			return sseErrors(body, func(data []byte) (string, bool) {
				if msg, ok := rpcError(data); ok {
					return msg, true
				}
				var v struct {
					Result struct {
						Status struct {
							State   string
							Message struct{ Parts []struct{ Text string } }
						}
					}
				}
				json.Unmarshal(data, &v)
				var text string
				for _, p := range v.Result.Status.Message.Parts {
					text += p.Text
				}
				return text, v.Result.Status.State == "failed"
			})
		},
		longID: func(base, _ string, n int) *http.Request {
			return jsonRequest(base+"/", a2aMessage(fmt.Sprintf("%q", strings.Repeat("i", n)), false))
		},
	},
}

func targetSection(listen, method string) string {
	return fmt.Sprintf("{listen: %q, method: %s}", listen, method)
}

func jsonRequest(url, body string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

func a2aMessage(id string, stream bool) string {
	method := "message/send"
	if stream {
		method = "message/stream"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`, id, method)
}

// foundryError is Foundry's {"error": {"code", "message"}}.
func foundryError(body []byte) (string, bool) {
	var v struct {
		Error *struct{ Code, Message string }
	}
	if json.Unmarshal(body, &v) != nil || v.Error == nil || v.Error.Code == "" {
		return "", false
	}
	return v.Error.Message, true
}

// rpcError is a JSON-RPC error response's message.
func rpcError(body []byte) (string, bool) {
	var v struct {
		JSONRPC string
		Error   *struct {
			Code    int
			Message string
		}
	}
	if json.Unmarshal(body, &v) != nil || v.JSONRPC != "2.0" || v.Error == nil || v.Error.Code == 0 {
		return "", false
	}
	return v.Error.Message, true
}

// sseErrors reads body as data events, each one JSON value, and returns
// the text of those isError says are failures.
func sseErrors(body []byte, isError func(data []byte) (string, bool)) ([]string, error) {
	var errs []string
	for _, event := range strings.Split(string(body), "\n\n") {
		if event == "" {
			continue
		}
		data, ok := strings.CutPrefix(event, "data: ")
		if !ok || !json.Valid([]byte(data)) {
			return nil, fmt.Errorf("event %q is not data: <JSON>", event)
		}
		if text, bad := isError([]byte(data)); bad {
			errs = append(errs, text)
		}
	}
	return errs, nil
}

// hostileAgent is the agent behind every door of the table: "hold"
// answers when the test ends, "stream_hold" sends a record and waits for
// its caller to go (telling left), "cut" drops the connection in the
// middle of its second record.
type hostileAgent struct {
	url  string
	held atomic.Int32
	left chan struct{}
}

const hostileMethods = `
methods:
  hold: {}
  stream_hold: {mode: stream}
  cut: {mode: stream}
`

func newHostileAgent(t *testing.T) *hostileAgent {
	a := &hostileAgent{left: make(chan struct{}, 1)}
	ended := t.Context()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
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

// hostileSidecar serves cfg's doors in process (serve, as run does) in
// front of agent with door protocol calling method; it returns the door's
// base URL and a func that starts the drain, as SIGTERM does.
func hostileSidecar(t *testing.T, protocol, method, head string, agent *hostileAgent) (string, func()) {
	t.Helper()
	yaml := "upstream: {url: \"" + agent.url + "\"}\nshutdown: {drain: 500ms, agent_grace: 1s}\n" + head + hostileMethods
	addr := ""
	if spec := doorSpecs[protocol]; spec.section != nil {
		addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		yaml += "protocols:\n  " + protocol + ": " + spec.section(addr, method) + "\n"
	}
	cfg, err := config.Parse("sidecar.yaml", []byte(yaml), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if addr == "" {
		addr = ln.Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cfg, ln, zaptest.NewLogger(t), agentIO{env: []string{}}, defaultServerLimits)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(cfg.Shutdown.Budget() + hostileBound):
			t.Errorf("serve still running %v after its context ended", cfg.Shutdown.Budget()+hostileBound)
		}
	})
	for deadline := time.Now().Add(hostileBound); ; time.Sleep(5 * time.Millisecond) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s door is not listening on %s after %v", protocol, addr, hostileBound)
		}
	}
	return "http://" + addr, cancel
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
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", req.Method, req.URL.RequestURI(), req.URL.Host)
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

// TestHostileDoors: every registered door, served as run serves it, holds
// against the same hostile callers and agents: a body over
// limits.request_bytes and a call while busy are refused in the door's
// shape before their body is read (none is ever sent); a caller leaving
// mid-stream ends the agent's request; an agent cut mid-record gives
// exactly one failure in the door's shape; a stream or unary call in
// flight at drain gets the door's shutting-down failure; headers past
// limits.header_bytes are refused, and ids in a body past their cap.
func TestHostileDoors(t *testing.T) {
	for _, d := range doors.All {
		spec, ok := doorSpecs[d.Name]
		if !ok {
			t.Errorf("door %s is registered but has no doorSpec: the hostile-input table cannot call it", d.Name)
			continue
		}
		t.Run(d.Name, func(t *testing.T) {
			t.Run("body over the limit", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, _ := hostileSidecar(t, d.Name, "hold", "limits: {request_bytes: 1KiB}\n", agent)
				_, resp := send(t, spec.request(base, "hold", false), 1<<20, nil)
				if body := readAll(t, resp); resp.StatusCode != http.StatusRequestEntityTooLarge || !spec.refusal(body) {
					t.Errorf("a 1 MiB body, unsent, over a 1 KiB limit = %d %q, want 413 in the door's shape", resp.StatusCode, body)
				}
			})
			t.Run("busy", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, _ := hostileSidecar(t, d.Name, "hold", "limits: {concurrency: 1, queue: 0}\n", agent)
				held := spec.request(base, "hold", false)
				body := whole(held)
				write(t, held, len(body), body) // answered when the test ends
				agent.waitHeld(t, 1)
				_, resp := send(t, spec.request(base, "hold", false), 1<<20, nil)
				if body := readAll(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !spec.refusal(body) {
					t.Errorf("a call while the one slot is held, its 1 MiB body unsent = %d %q, want 503 in the door's shape", resp.StatusCode, body)
				}
			})
			t.Run("caller leaves mid-stream", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, _ := hostileSidecar(t, d.Name, "stream_hold", "", agent)
				conn, resp := call(t, spec.request(base, "stream_hold", true))
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("stream = %d %q", resp.StatusCode, readAll(t, resp))
				}
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
				_, resp := call(t, spec.request(base, "cut", true))
				body := readAll(t, resp)
				errs, err := spec.errors(body)
				if resp.StatusCode != http.StatusOK || err != nil || len(errs) != 1 {
					t.Errorf("a stream cut mid-record = %d %q: failures %q (%v), want exactly one in the door's shape", resp.StatusCode, body, errs, err)
				}
			})
			t.Run("drain", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, drain := hostileSidecar(t, d.Name, "stream_hold", "", agent)
				_, resp := call(t, spec.request(base, "stream_hold", true))
				agent.waitHeld(t, 1)
				drain()
				body := readAll(t, resp)
				errs, err := spec.errors(body)
				if resp.StatusCode != http.StatusOK || err != nil || len(errs) != 1 || !strings.Contains(errs[0], "shutting down") {
					t.Errorf("a stream in flight at drain = %d %q: failures %q (%v), want one saying the sidecar is shutting down", resp.StatusCode, body, errs, err)
				}
			})
			t.Run("drain, unary", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, drain := hostileSidecar(t, d.Name, "hold", "", agent)
				req := spec.request(base, "hold", false)
				body := whole(req)
				conn := write(t, req, len(body), body)
				agent.waitHeld(t, 1)
				drain()
				resp, err := http.ReadResponse(bufio.NewReader(conn), req)
				if err != nil {
					t.Fatalf("a unary call in flight at drain: reading the answer: %v", err)
				}
				if body := readAll(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !spec.refusal(body) || !strings.Contains(string(body), "shutting down") {
					t.Errorf("a unary call in flight at drain = %d %q, want 503 in the door's shape saying the sidecar is shutting down", resp.StatusCode, body)
				}
			})
			t.Run("headers and ids capped", func(t *testing.T) {
				agent := newHostileAgent(t)
				base, _ := hostileSidecar(t, d.Name, "hold", "limits: {header_bytes: 4KiB}\n", agent)
				req := spec.request(base, "hold", false)
				req.Header.Set("X-Agent-Session-Id", strings.Repeat("s", 64<<10))
				_, resp := call(t, req)
				if readAll(t, resp); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
					t.Errorf("a 64 KiB header over a 4 KiB limit = %d, want 431", resp.StatusCode)
				}
				if spec.longID == nil {
					return
				}
				_, resp = call(t, spec.longID(base, "hold", 64<<10))
				if body := readAll(t, resp); !spec.refusal(body) || agent.held.Load() != 0 {
					t.Errorf("a 64 KiB id = %d %q (agent called: %v), want refused in the door's shape", resp.StatusCode, body, agent.held.Load() != 0)
				}
			})
		})
	}
}

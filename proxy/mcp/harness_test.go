package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
	"github.com/sidecar-dev/sidecar/upstream"
)

// Door is a proxy.Door, without importing proxy outside its tests.
var _ proxy.Door = (*Door)(nil)

// testMap is the method map the tests serve in front of testdata/mcp's
// agent.py; AGENT is its URL.
const testMap = `
upstream: {url: AGENT}
methods:
  ask:
    call: POST /ask
    description: Answers a question.
    parameters: {type: object, properties: {message: {type: string}}, required: [message]}
  story: {mode: stream, call: POST /story, reply: sse, description: Tells a story.}
  long: {mode: stream, call: POST /long, reply: sse}
  fail: {call: POST /fail}
  fail_late: {mode: stream, call: POST /fail_late, reply: sse}
`

// startAgent runs testdata/mcp/agent.py, a python3 process, on a free
// loopback port and returns its URL; the test's end kills it (by its pid).
func startAgent(t *testing.T) string {
	t.Helper()
	return doortest.StartPython(t, "testdata/mcp/agent.py")
}

// served is a sidecar serving the MCP door on a loopback listener.
type served struct {
	url     string // the MCP endpoint's URL
	base    string // the listener's
	door    *Door
	server  *proxy.Server
	logs    *observer.ObservedLogs // the server's log lines
	metrics *metrics.Metrics
}

// serve runs the sidecar with the MCP door of opts, on a loopback
// listener, in front of a new agent.py, head prepended to testMap (limits,
// …).
func serve(t *testing.T, head string, opts Options) *served {
	t.Helper()
	return serveMap(t, head+testMap, startAgent(t), opts)
}

// serveMap runs the sidecar with the MCP door of opts on methodMap, its
// AGENT agent, through the mapping stage as cmd/sidecar builds it; tune,
// when given, sets more of the Server before it serves.
func serveMap(t *testing.T, methodMap, agent string, opts Options, tune ...func(*proxy.Server)) *served {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(methodMap, "AGENT", agent)))
	if err != nil {
		t.Fatal(err)
	}
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	door, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	m := metrics.New(Name)
	s := &proxy.Server{Config: cfg, Agent: dialect.Agent{Agent: core.Mux{Plain: client}, MaxReply: cfg.Limits.ReplyBytes,
		MaxRecord: cfg.Limits.RecordBytes, Parts: cfg.Limits.Parts}, Logger: zap.New(observed), Metrics: m, Protocols: []string{Name}}
	for _, f := range tune {
		f(s)
	}
	// Run last (cleanups run in reverse): a failed test shows the server's
	// last lines, those of calls its close ended included.
	t.Cleanup(func() {
		if t.Failed() {
			all := logs.All()
			for _, e := range all[max(0, len(all)-40):] {
				t.Logf("sidecar %s: %s %v", e.Level, e.Message, e.ContextMap())
			}
		}
	})
	srv := httptest.NewServer(s.HandlerFor(door))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		door.Close()
		client.Close()
	})
	path := opts.Path
	if path == "" {
		path = DefaultPath
	}
	return &served{url: srv.URL + path, base: srv.URL, door: door, server: s, logs: logs, metrics: m}
}

// testClient is the tests' client: a call a correct door answers at once
// fails the test after hangGuard instead of hanging it.
var testClient = &http.Client{Timeout: hangGuard}

const hangGuard = 30 * time.Second

// clientFrom is a client whose connections come from the loopback
// address ip (Linux answers every 127.0.0.0/8 address): a caller on a host
// of its own, as the door tells callers apart by address.
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Timeout: hangGuard, Transport: tr}
}

// modernMeta is the _meta of a 2026-07-28 request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// post posts body to url with the headers h (name, value, …; an empty
// value is left out) besides Content-Type and the Accept MCP wants.
func post(t *testing.T, url, body string, h ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return do(t, req, h...)
}

// do sends req with the headers h and reads the whole answer.
func do(t *testing.T, req *http.Request, h ...string) (*http.Response, []byte) {
	t.Helper()
	return doWith(t, testClient, req, h...)
}

// doWith is do by client c.
func doWith(t *testing.T, c *http.Client, req *http.Request, h ...string) (*http.Response, []byte) {
	t.Helper()
	for i := 0; i+1 < len(h); i += 2 {
		if h[i+1] == "" {
			req.Header.Del(h[i])
		} else {
			req.Header.Set(h[i], h[i+1])
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// modern posts a 2026-07-28 request of method, its params (without _meta)
// params, with its headers: MCP-Protocol-Version, Mcp-Method, and Mcp-Name
// when name is not "".
func modern(t *testing.T, url, method, params, name string, h ...string) (*http.Response, []byte) {
	t.Helper()
	p := "{" + modernMeta + "}"
	if params != "" {
		p = "{" + params + "," + modernMeta + "}"
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, p)
	return post(t, url, body, append([]string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method, "Mcp-Name", name}, h...)...)
}

// rpcReply is a JSON-RPC response, its result left raw.
type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// reply decodes one JSON-RPC message.
func decode(t *testing.T, b []byte) rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil || r.JSONRPC != "2.0" {
		t.Fatalf("%q is no JSON-RPC message (%v)", b, err)
	}
	return r
}

// events reads an SSE body: each data: line's JSON-RPC message.
func events(t *testing.T, b []byte) []rpcReply {
	t.Helper()
	var out []rpcReply
	for _, ev := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("event %q is not one data: line", ev)
		}
		out = append(out, decode(t, []byte(data)))
	}
	return out
}

// initialize opens a session of version (2025 revisions) and returns its
// Mcp-Session-Id.
func initialize(t *testing.T, url, version string) string {
	t.Helper()
	resp, b := post(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, version))
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize = %d %q (session %q)", resp.StatusCode, b, id)
	}
	return id
}

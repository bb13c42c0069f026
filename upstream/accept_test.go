package upstream

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestAcceptByMode: a stream method's requests accept SSE, ndjson and
// JSON, a unary method's JSON; a method's headers.set, the top-level
// headers.set and headers.forward override the default.
func TestAcceptByMode(t *testing.T) {
	got := make(chan []string, 1)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Values("Accept")
		io.WriteString(w, "{}\n")
	}))
	defer agent.Close()
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: "+agent.URL+"}\n"+`
methods:
  unary: {}
  stream: {mode: stream}
  own: {mode: stream, headers: {set: {Accept: text/plain}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	top, err := config.Parse("test.yaml", []byte("upstream: {url: "+agent.URL+"}\nheaders: {set: {Accept: application/xml}}\nmethods: {unary: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := config.Parse("test.yaml", []byte("upstream: {url: "+agent.URL+"}\nheaders: {forward: [Accept]}\nmethods: {stream: {mode: stream}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cfg    *config.Config
		method string
		caller http.Header
		want   string
	}{
		{cfg, "unary", nil, "application/json"},
		{cfg, "stream", nil, "text/event-stream, application/x-ndjson, application/json"},
		{cfg, "own", nil, "text/plain"},
		{cfg, "stream", http.Header{"Accept": {"text/html"}}, "text/event-stream, application/x-ndjson, application/json"},
		{top, "unary", nil, "application/xml"},
		{fwd, "stream", http.Header{"Accept": {"application/x-ndjson"}}, "application/x-ndjson"},
		{fwd, "stream", nil, "text/event-stream, application/x-ndjson, application/json"},
	}
	for _, tt := range tests {
		c, err := New(tt.cfg, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		m := tt.cfg.Lookup(tt.method, tt.method != "unary")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.Call(ctx, core.Call{Method: m, Name: tt.method, Input: core.Input{Raw: []byte(`{}`)}, Header: tt.caller})
		if err != nil {
			t.Fatalf("%s: %v", tt.method, err)
		}
		io.Copy(io.Discard, resp.body)
		resp.Close()
		cancel()
		c.Close()
		if v := <-got; len(v) != 1 || v[0] != tt.want {
			t.Errorf("%s (caller's Accept %q): the agent got Accept %q, want %q", tt.method, tt.caller.Get("Accept"), v, tt.want)
		}
	}
}

// mcpModules is the node_modules of @modelcontextprotocol/sdk, which
// `make deps` installs (testdata/mcp/install.sh, into
// ${SIDECAR_CACHE:-<repo>/.cache}/mcp).
func mcpModules(t *testing.T) string {
	t.Helper()
	return deps.NPM(t, "mcp")
}

// TestAcceptMCPServer: the MCP TypeScript SDK's Streamable HTTP server
// (stateless), as the agent of a stream method whose call POSTs the
// JSON-RPC body, answers a tools/call: it refuses (406) a request that
// does not accept both JSON and SSE.
func TestAcceptMCPServer(t *testing.T) {
	modules := mcpModules(t)
	server := exec.Command("node", "../testdata/mcp/server.mjs")
	server.Env = append(os.Environ(), "NODE_PATH="+modules)
	server.Stderr = os.Stderr
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		server.Process.Kill()
		server.Wait()
	})
	ports := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ports <- strings.TrimSpace(line) // "" when it exits first
		io.Copy(io.Discard, stdout)
	}()
	var port string
	select {
	case port = <-ports:
	case <-time.After(30 * time.Second):
		t.Fatal("server.mjs did not listen within 30s")
	}
	if port == "" {
		t.Fatal("server.mjs exited before listening")
	}
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \"http://127.0.0.1:"+port+"\"}\n"+`
methods:
  mcp: {mode: stream, call: POST /mcp}
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	in := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	records, err := c.Stream(ctx, core.Call{Method: cfg.Methods[0], Name: "mcp", Input: core.Input{Raw: []byte(in)}})
	if err != nil {
		t.Fatalf("tools/call through the sidecar: %v", err)
	}
	defer records.Close()
	var got []string
	for records.Next() {
		got = append(got, string(records.Record()))
	}
	want := `{"result":{"content":[{"type":"text","text":"echo: hi"}]},"jsonrpc":"2.0","id":1}`
	if records.Err() != nil || len(got) != 1 || got[0] != want {
		t.Errorf("tools/call = %q, %v; want [%s]", got, records.Err(), want)
	}
}

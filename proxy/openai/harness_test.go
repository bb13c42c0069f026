package openai

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
	"github.com/sidecar-dev/sidecar/upstream"
)

var _ proxy.Door = (*Door)(nil)

// testMethods is the method map of testdata/openai/agent.py.
const testMethods = `
methods:
  chat: {mode: stream, call: POST /chat}
  vercel: {mode: stream, call: POST /vercel}
  fail: {mode: stream, call: POST /fail}
  unary: {call: POST /unary}
  input: {call: POST /input}
  big: {mode: stream, call: POST /big/64}
  hold: {mode: stream, call: POST /hold}
  down: {mode: stream, call: POST /down}
  ask: {mode: stream, call: POST /ask}
  ask_unary: {call: POST /ask_unary}
  replay_chat: {mode: stream, call: POST /replay/openai-chat/text}
  replay_vercel: {mode: stream, call: POST /replay/vercel-ui/text}
  replay_responses: {mode: stream, call: POST /replay/openai-responses/text}
  replay_agui: {mode: stream, call: POST /replay/ag-ui/text}
  replay_langgraph: {mode: stream, call: POST /replay/langgraph/text}
  parts: {mode: stream, call: POST /parts}
  parts_unary: {call: POST /parts}
  echo_parts: {mode: stream, call: POST /echo_parts}
  big_part: {mode: stream, call: POST /big_part/4096}
`

// startAgent runs testdata/openai/agent.py and returns its URL; the
// process is killed when the test ends.
func startAgent(t *testing.T) string {
	t.Helper()
	return doortest.StartPython(t, "testdata/openai/agent.py")
}

// sidecar is a proxy.Server as the program builds it (the mapping stage
// in front of the agent's client) in front of agent, its config head (the
// limits) then testMethods.
type sidecar struct {
	*proxy.Server
	cfg  *config.Config
	logs *observer.ObservedLogs
}

func newSidecar(t *testing.T, agent, head string) *sidecar {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \""+agent+"\"}\n"+head+testMethods))
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	logger := zap.New(observed)
	client, err := upstream.New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	agentOf := dialect.Agent{Agent: core.Mux{Plain: client}, MaxReply: cfg.Limits.ReplyBytes, MaxRecord: cfg.Limits.RecordBytes, Parts: cfg.Limits.Parts}
	return &sidecar{Server: &proxy.Server{Config: cfg, Agent: agentOf, Logger: logger}, cfg: cfg, logs: logs}
}

// serve serves the door of opts on a loopback listener of its own and
// returns its base URL.
func (s *sidecar) serve(t *testing.T, opts Options) string {
	t.Helper()
	d, err := New(s.cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.HandlerFor(d))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// post sends body to url with the headers (name, value, …) and returns
// the answer with its body read.
func post(t *testing.T, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	return do(t, http.MethodPost, url, body, header...)
}

func do(t *testing.T, method, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp, string(b)
}

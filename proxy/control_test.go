package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/proxy/a2a"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/mcp"
	"github.com/sidecar-dev/sidecar/proxy/openai"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/upstream"
)

// TestControlRecordIsNoText: a stream that ends as many Node SSE servers
// end theirs (event: done, data: {"done":true}) answers "Hello world" on
// the OpenAI, MCP and A2A doors, never {"done":true}: a record that came
// as an SSE event named other than message, passed through unmapped, is a
// control record and carries no text into an answer (core.Control). The
// contract passes it on, as the agent wrote it.
func TestControlRecordIsNoText(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"text\":\"Hello\"}\n\ndata: {\"text\":\" world\"}\n\nevent: done\ndata: {\"done\":true}\n\n")
	}))
	defer agent.Close()
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \""+agent.URL+"\"}\nmethods:\n  stream_query: {mode: stream, call: POST /chat}\n"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s := &Server{Config: cfg, Agent: dialect.Agent{Agent: core.Mux{Plain: client}, MaxReply: cfg.Limits.ReplyBytes, MaxRecord: cfg.Limits.RecordBytes}}
	serve := func(d Door) string {
		srv := httptest.NewServer(s.HandlerFor(d))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	oai, err := openai.New(cfg, openai.Options{Method: "stream_query", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mcp.New(cfg, mcp.Options{Methods: []string{"stream_query"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a, err := a2a.New(cfg, a2a.Options{Method: "stream_query", Card: a2a.CardInfo{Name: "n", Description: "d"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	p, err := platform.New(cfg, platform.Options{})
	if err != nil {
		t.Fatal(err)
	}

	post := func(url, body string, h ...string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	answers := map[string]string{
		"openai stream": post(serve(oai)+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`),
		"openai whole":  post(serve(oai)+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`),
		"mcp": post(serve(m)+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stream_query","arguments":{},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "stream_query"),
		"a2a stream": post(serve(a)+"/", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`),
		"a2a":        post(serve(a)+"/", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`),
	}
	for door, answer := range answers {
		if strings.Contains(answer, "done") || !strings.Contains(strings.ReplaceAll(answer, `","text":"`, ""), "Hello") {
			t.Errorf("%s answered %s, want Hello world and no {\"done\":true}", door, answer)
		}
	}
	if got := post(serve(p)+"/api/stream_reasoning_engine", `{"class_method":"stream_query","input":{}}`); !strings.Contains(got, `{"done":true}`) {
		t.Errorf("the contract answered %s, want the record passed on", got)
	}
}

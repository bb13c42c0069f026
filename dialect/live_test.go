package dialect

import (
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/producers"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/upstream"
)

// liveMaps are the method maps that put a sidecar in front of each live
// producer (AGENT: its URL): stream_query calls it in its own protocol and
// emits ADK events, the dialect detected from the reply.
var liveMaps = []struct {
	name, script, yaml string
	want               produced
}{
	{"vercel-ui", "vercel.mjs", `upstream: {url: "AGENT"}
adk: {app: weather_agent}
methods:
  stream_query:
    mode: stream
    call: POST /api/chat/tool
    body: {id: chat-1, trigger: submit-message, messages: [{id: m1, role: user, parts: [{type: text, text: "{input.message}"}]}]}
    dialect: auto
    emit: adk
`, captured["vercel-ui/tool"]},
	{"langgraph", "langgraph.mjs", `upstream: {url: "AGENT"}
adk: {app: weather_agent}
methods:
  stream_query:
    mode: stream
    call: POST /runs/stream
    body: {assistant_id: tool, input: {messages: [{role: user, content: "{input.message}"}]}, stream_mode: [messages-tuple, updates]}
    dialect: auto
    emit: adk
`, captured["langgraph/tool"]},
	{"a2a 1.0", "a2a.mjs", `upstream: {url: "AGENT"}
adk: {app: weather_agent}
methods:
  stream_query:
    mode: stream
    call: POST /
    body: {jsonrpc: "2.0", id: 1, method: SendStreamingMessage, params: {message: {role: ROLE_USER, messageId: m1, parts: [{text: "{input.message}"}]}}}
    headers: {set: {A2A-Version: "1.0"}}
    dialect: auto
    emit: adk
`, captured["a2a/stream-v1"]},
	{"a2a 0.3", "a2a.mjs", `upstream: {url: "AGENT"}
adk: {app: weather_agent}
methods:
  stream_query:
    mode: stream
    call: POST /
    body: {jsonrpc: "2.0", id: 1, method: message/stream, params: {message: {kind: message, role: user, messageId: m1, parts: [{kind: text, text: "{input.message}"}]}}}
    dialect: a2a
    emit: adk
`, captured["a2a/stream"]},
	{"openai-agents", "openai-agents.mjs", `upstream: {url: "AGENT"}
adk: {app: weather_agent}
methods:
  stream_query:
    mode: stream
    call: POST /tool
    body: {input: "{input.message}"}
    dialect: auto
    emit: adk
`, captured["openai-agents/tool"]},
}

// liveSidecar serves yaml as cmd/sidecar assembles a sidecar: the
// platform door, the mapping stage around the Mux around the HTTP client.
func liveSidecar(t *testing.T, yaml string) string {
	t.Helper()
	cfg, err := config.Parse("sidecar.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	mapped := Agent{Agent: core.Mux{Plain: client}, Author: cfg.ADK.App, SnakeKeys: cfg.ADK.Keys == "snake", MaxReply: cfg.Limits.ReplyBytes}
	s := &proxy.Server{Config: cfg, Agent: mapped, Logger: zap.NewNop()}
	srv := httptest.NewServer(s.HandlerFor(platform.Door{}))
	t.Cleanup(func() { srv.Close(); client.Close() })
	return srv.URL
}

// TestLiveProducers: a sidecar in front of the live Vercel AI SDK,
// LangGraph, A2A (1.0 and 0.3) and OpenAI Agents SDK producers answers stream_query with
// emit adk in ADK events whose text is the producer's text, with its tool
// call and result (the "Done means").
func TestLiveProducers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the node producers")
	}
	bases := map[string]string{}
	for _, m := range liveMaps {
		if bases[m.script] == "" {
			bases[m.script] = producers.Start(t, m.script) // skips without node and npm
		}
	}
	for _, m := range liveMaps {
		t.Run(m.name, func(t *testing.T) {
			url := liveSidecar(t, strings.ReplaceAll(m.yaml, "AGENT", bases[m.script]))
			out := call(t, url, core.RouteStream, "stream_query")
			checkADK(t, m.want, strings.Split(strings.TrimSpace(out), "\n"), "weather_agent")
		})
	}
}

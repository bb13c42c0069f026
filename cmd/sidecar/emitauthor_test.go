package main

import (
	"strings"
	"testing"
	"time"
)

// TestADKAppWithoutPreset: adk.app without the ADK preset names the author
// of emit: adk events and nothing more. In front of an agent that serves
// no /list-apps the sidecar is ready as soon as the agent is, and calls
// are answered (here a stream no dialect places, passed through).
func TestADKAppWithoutPreset(t *testing.T) {
	cfg := "upstream: {url: " + agentUpstream(t, false) + ", ready: {path: /health}}\n" +
		"adk: {app: weather}\n" +
		"methods:\n  stream_query: {mode: stream, call: POST /sse, emit: adk}\n"
	t.Cleanup(testClient.CloseIdleConnections)
	p := startProc(t, cfg, nil, "--", "python3", "agent.py")
	p.waitHealth(200)
	lines := collectLines(t, p.openStream("stream_query", `{"n":2}`), 20*time.Second)
	if got := strings.Join(lines, "\n"); got != `{"i":0,"text":"tok0"}`+"\n"+`{"i":1,"text":"tok1"}` {
		t.Errorf("stream_query = %q, want the agent's two records", lines)
	}
}

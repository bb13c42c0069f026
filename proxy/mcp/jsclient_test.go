package mcp

import (
	"testing"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// The lines every client prints the same, whatever its revision.
const (
	wantTools = `{"step":"tools","tools":[["ask","Answers a question.","object",["message"]],["story","Tells a story.","object",[]],` +
		`["long","","object",[]],["fail","","object",[]],["fail_late","","object",[]]]}`
	wantAsk   = `{"step":"ask","text":"{\"answer\":\"you asked: what is up\",\"words\":3}","structured":{"answer":"you asked: what is up","words":3},"isError":false}`
	wantStory = `{"step":"story","text":"once upon a time the end ","progress":[[1,"once "],[2,"upon "],[3,"a "],[4,"time "],[5,"the "],[6,"end "]],"isError":false}`
	wantFail  = `{"step":"fail","isError":true,"text":"`
)

// TestSDK1Client: the MCP TypeScript SDK 1.x client (Client and
// StreamableHTTPClientTransport) initializes a 2025-11-25 session, lists
// the tools, calls a unary tool (text and structuredContent), a streaming
// one with onprogress (a progress per text record of the agent's OpenAI
// stream, then the whole text), tools that fail (isError with the agent's
// message, before and after the first byte), an unknown tool (a JSON-RPC
// error), and ends its session, against the sidecar in front of a python3
// agent.
func TestSDK1Client(t *testing.T) {
	s := serve(t, "", Options{})
	got := deps.Node(t, "mcp", "client.mjs", s.url)
	deps.MatchLines(t, got, []string{
		`{"step":"connect","version":"2025-11-25","session":true,"server":"sidecar","tools":true}`,
		wantTools, wantAsk, wantStory,
		wantFail + `the model is overloaded"}`,
		`{"step":"fail_late","isError":true,"text":"the model is overloaded"}`,
		`{"step":"unknown tool","code":-32602,"message":"MCP error -32602: Unknown tool \"nope\"`,
		`{"step":"terminate","session":null}`,
	})
	if n := s.door.sessions.len(); n != 0 {
		t.Errorf("%d sessions after the client ended its own, want 0", n)
	}
}

// TestSDK2Client: the MCP TypeScript client 2.x, in each of its modes:
// "auto" and "pin" speak 2026-07-28 (server/discover, then every request
// stateless), its default initializes a 2025-11-25 session; each lists
// the tools and calls them as the 1.x client does.
func TestSDK2Client(t *testing.T) {
	s := serve(t, "", Options{})
	for _, tt := range []struct{ mode, version string }{
		{"auto", "2026-07-28"}, {"pin", "2026-07-28"}, {"legacy", "2025-11-25"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			got := deps.Node(t, "mcp2", "client.mjs", s.url, tt.mode)
			deps.MatchLines(t, got, []string{
				`{"step":"connect","version":"` + tt.version + `","server":"sidecar","tools":true}`,
				wantTools, wantAsk, wantStory,
				wantFail + `the model is overloaded"}`,
				`{"step":"unknown tool","code":-32602,"message":"Unknown tool \"nope\"`,
			})
		})
	}
}

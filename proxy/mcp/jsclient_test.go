package mcp

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// runNode runs testdata/<set>/client.mjs with args, the set's node_modules
// as `make deps` installed them, and returns its lines.
func runNode(t *testing.T, set string, args ...string) []string {
	t.Helper()
	return runScript(t, set, "client.mjs", args...)
}

// runScript runs testdata/<set>/<script> with args, as runNode does.
func runScript(t *testing.T, set, script string, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run the MCP SDK's client")
	}
	modules := deps.NPM(t, set)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"../../testdata/" + set + "/" + script}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s/%s %v: %v\n%s\n%s", set, script, args, err, out, stderr.String())
	}
	t.Logf("%s/%s %v:\n%s", set, script, args, out)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// match compares the client's lines with want, each a prefix of its line.
func match(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the client printed %d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s…", i+1, got[i], want[i])
		}
	}
}

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
	got := runNode(t, "mcp", s.url)
	match(t, got, []string{
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
			got := runNode(t, "mcp2", s.url, tt.mode)
			match(t, got, []string{
				`{"step":"connect","version":"` + tt.version + `","server":"sidecar","tools":true}`,
				wantTools, wantAsk, wantStory,
				wantFail + `the model is overloaded"}`,
				`{"step":"unknown tool","code":-32602,"message":"Unknown tool \"nope\"`,
			})
		})
	}
}

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// TestOnePort's clients, one function per door: each takes the door's
// URL through the one port (or the passthrough), and way ("port",
// "passthrough") names its held streams' keys.

// platformCall: `sidecar call`, the platform's way, a unary method and
// a held stream through the contract's routes.
func platformCall(t *testing.T, agent, base, way string) {
	out, err := exec.Command(binary, "call", "--url", base, "ask", "message=how are you").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `{"answer":"you asked: how are you","words":3}`) {
		t.Errorf("sidecar call ask = %q, %v, want the agent's answer", out, err)
	}
	key := "platform-" + way
	cmd := exec.Command(binary, "call", "--url", base, "--stream", "story", "message=hold-"+key)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	held := readHeld(t, stdout, agent, key, "once ")
	if err := cmd.Wait(); err != nil {
		t.Errorf("sidecar call --stream story: %v\n%s", err, stderr.String())
	}
	wantReleased(t, "sidecar call --stream story", held)
	if !strings.HasPrefix(held, `{"text":"once "}`+"\n") {
		t.Errorf("sidecar call --stream story = %q, want the story's text lines", held)
	}
}

// platformREST: the platform's own Node client, @google-cloud/aiplatform,
// against sidecar dev's REST API (dev, its URL), which calls the
// contract listener the doors share: :query, an error, and :streamQuery
// read as the lines come.
func platformREST(t *testing.T, agent, dev string) {
	protos := deps.NPM(t, "aiplatform")
	modules, ok := strings.CutSuffix(protos, filepath.FromSlash("/@google-cloud/aiplatform/build/protos/protos.json"))
	if !ok {
		t.Fatalf("testdata/aiplatform/install.sh printed %q", protos)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run @google-cloud/aiplatform's client")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "../../testdata/aiplatform/client.js", dev[strings.LastIndex(dev, ":")+1:], agent)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.js: %v\n%s\n%s", err, out, stderr.String())
	}
	t.Logf("client.js:\n%s", out)
	steps := map[string]struct {
		Output map[string]any
		Error  *struct {
			Code    int
			Message string
		}
		Lines []struct{ Data string }
	}{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var s struct{ Step string }
		json.Unmarshal([]byte(line), &s)
		step := steps[s.Step]
		if err := json.Unmarshal([]byte(line), &step); err != nil {
			t.Fatalf("client.js printed %q", line)
		}
		steps[s.Step] = step
	}
	if in, _ := steps["query"].Output["input"].(map[string]any); in["message"] != "hi" || in["n"] != float64(2) {
		t.Errorf("client.js query: %+v, want the input back", steps["query"])
	}
	// A container error: FAILED_PRECONDITION (gRPC code 9) with its body.
	if e := steps["query_error"].Error; e == nil || e.Code != 9 || !strings.Contains(e.Message, `{"detail":"the model is overloaded"}`) {
		t.Errorf("client.js query_error: %+v, want FAILED_PRECONDITION and the agent's detail", e)
	}
	s := steps["stream"]
	if s.Error != nil || len(s.Lines) != 3 {
		t.Fatalf("client.js stream: %+v, want 3 lines", s)
	}
	for i, l := range s.Lines {
		if want := fmt.Sprintf(`{"n":%d,"text":"line %d"}`, i, i); l.Data != want {
			t.Errorf("client.js stream line %d = %q, want %q", i, l.Data, want)
		}
	}
}

// a2aClients: @a2a-js/sdk as an A2A 1.0 and a 0.3 client (the card at
// url/.well-known/agent-card.json, sends, streams, gets the task), then
// a held message/stream.
func a2aClients(t *testing.T, agent, url, way string) {
	// The card advertises the URL it was fetched under: the mount's on
	// the port (its Host, then the mount), the passthrough's through it
	// (protocols.a2a.url: the contract listener cannot know it).
	resp, err := testClient.Get(url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct{ URL string }
	err = json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if err != nil || card.URL != url {
		t.Errorf("the card at %s/.well-known/agent-card.json advertises %q (%v), want %s", url, card.URL, err, url)
	}
	const text = `"text":"once upon a time hi `
	stream := `"events":["task TASK_STATE_SUBMITTED","statusUpdate TASK_STATE_WORKING","artifactUpdate","artifactUpdate","artifactUpdate","artifactUpdate","artifactUpdate",`
	deps.MatchLines(t, deps.Node(t, "a2a", "client.mjs", url), []string{
		`{"step":"card","name":"Story agent","streaming":true,"interfaces":["JSONRPC 1.0","JSONRPC 0.3","HTTP+JSON 1.0","HTTP+JSON 0.3"]}`,
		`{"step":"version","version":"1.0"}`,
		`{"step":"1.0 send","state":"TASK_STATE_COMPLETED",` + text,
		`{"step":"1.0 stream",` + stream,
		`{"step":"1.0 get","state":"TASK_STATE_COMPLETED","same":true}`,
		`{"step":"1.0 cancel","error":"`,
		`{"step":"version","version":"0.3`,
		`{"step":"0.3 send","state":"TASK_STATE_COMPLETED",` + text,
		`{"step":"0.3 stream",` + stream,
		`{"step":"0.3 get","state":"TASK_STATE_COMPLETED","same":true}`,
		`{"step":"0.3 cancel","error":"`,
	})
	key := "a2a-" + way
	held := postHeld(t, url, `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hold-`+key+`"}]}}}`,
		agent, key, `"once "`)
	wantReleased(t, "A2A message/stream", held)
}

// The MCP clients' lines, as proxy/mcp's tests want them of its agent,
// which doors.py answers alike.
const (
	mcpTools = `{"step":"tools","tools":[["ask","Answers a question.","object",["message"]],["story","Tells a story.","object",[]],` +
		`["long","","object",[]],["fail","","object",[]],["fail_late","","object",[]]]}`
	mcpAsk   = `{"step":"ask","text":"{\"answer\":\"you asked: what is up\",\"words\":3}","structured":{"answer":"you asked: what is up","words":3},"isError":false}`
	mcpStory = `{"step":"story","text":"once upon a time the end ","progress":[[1,"once "],[2,"upon "],[3,"a "],[4,"time "],[5,"the "],[6,"end "]],"isError":false}`
	mcpFail  = `{"step":"fail","isError":true,"text":"the model is overloaded"}`
)

// mcpSDK1: the MCP TypeScript SDK 1.x client, a 2025-11-25 session.
func mcpSDK1(t *testing.T, url string) {
	deps.MatchLines(t, deps.Node(t, "mcp", "client.mjs", url), []string{
		`{"step":"connect","version":"2025-11-25","session":true,"server":"sidecar","tools":true}`,
		mcpTools, mcpAsk, mcpStory, mcpFail,
		`{"step":"fail_late","isError":true,"text":"the model is overloaded"}`,
		`{"step":"unknown tool","code":-32602,"message":"MCP error -32602: Unknown tool \"nope\"`,
		`{"step":"terminate","session":null}`,
	})
}

// mcpClient2: the MCP TypeScript client 2.x in mode (auto, pin: 2026-07-28;
// legacy: a 2025-11-25 session).
func mcpClient2(t *testing.T, url, mode string) {
	version := "2026-07-28"
	if mode == "legacy" {
		version = "2025-11-25"
	}
	deps.MatchLines(t, deps.Node(t, "mcp2", "client.mjs", url, mode), []string{
		`{"step":"connect","version":"` + version + `","server":"sidecar","tools":true}`,
		mcpTools, mcpAsk, mcpStory, mcpFail,
		`{"step":"unknown tool","code":-32602,"message":"Unknown tool \"nope\"`,
	})
}

// mcpGoSDK: the Go MCP SDK's client of version ("": its default,
// 2026-07-28) lists the tools, calls ask, and story held: its progress
// handler lets the agent go on at the first word.
func mcpGoSDK(t *testing.T, agent, url, version, way string) {
	key := "mcp-go-" + way + "-" + cmp.Or(version, "default")
	var once sync.Once
	released := make(chan error, 1)
	client := gomcp.NewClient(&gomcp.Implementation{Name: "sidecar-test", Version: "1.0.0"}, &gomcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *gomcp.ProgressNotificationClientRequest) {
			once.Do(func() {
				resp, err := testClient.Post(agent+"/release/"+key, "application/json", nil)
				if err == nil {
					resp.Body.Close()
				}
				released <- err
			})
		}})
	ctx, cancel := context.WithTimeout(t.Context(), streamClient.Timeout)
	defer cancel()
	transport := &gomcp.StreamableClientTransport{Endpoint: url, HTTPClient: streamClient, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := client.Connect(ctx, transport, &gomcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if init := cs.InitializeResult(); init.ServerInfo == nil || init.ServerInfo.Name != "sidecar" || init.Capabilities.Tools == nil {
		t.Errorf("connected with %+v, want the sidecar's info and tools", init)
	}
	text := mcpGoCalls(ctx, t, cs, key)
	wantReleased(t, "story", text)
	if !strings.HasPrefix(text, "once ") || !strings.HasSuffix(text, " upon a time hold-"+key+" ") {
		t.Errorf("story = %q", text)
	}
	// The agent went on, so the handler posted the release: its error
	// follows (maybe after the result: the SDK runs handlers on
	// goroutines of its own).
	if strings.Contains(text, "once released ") {
		if err := <-released; err != nil {
			t.Errorf("releasing the agent's stream: %v", err)
		}
	}
}

// mcpGoCalls runs a session's calls through cs: tools/list (the agent's
// five tools), ask, and story held until the client's progress handler
// releases the agent (the handler is the caller's); it returns the
// story's text.
func mcpGoCalls(ctx context.Context, t *testing.T, cs *gomcp.ClientSession, key string) string {
	t.Helper()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, " "); got != "ask story long fail fail_late" {
		t.Errorf("tools = %s", got)
	}
	ask, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "what is up"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := ask.Content[0].(*gomcp.TextContent).Text; ask.IsError || text != `{"answer":"you asked: what is up","words":3}` {
		t.Errorf("ask = %q (isError %v)", text, ask.IsError)
	}
	params := &gomcp.CallToolParams{Name: "story", Arguments: map[string]any{"message": "hold-" + key}}
	params.SetProgressToken(key)
	story, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if story.IsError {
		t.Errorf("story is an error: %+v", story.Content)
	}
	return story.Content[0].(*gomcp.TextContent).Text
}

// openaiClients: the openai npm client and the Vercel AI SDK with base
// as their base URL (they get base/v1), then a held chat stream.
func openaiClients(t *testing.T, agent, base, way string) {
	deps.MatchLines(t, deps.Node(t, "openai", "client.mjs", base), []string{
		`{"step":"models.list","ids":["agent model sidecar"]}`,
		`{"step":"chat","object":"chat.completion","model":"agent","role":"assistant","content":"echo: hi","reasoning":"thinking","finish":"stop","id":true}`,
		`{"step":"chat stream","role":"assistant","content":"echo: hi","reasoning":"thinking","finish":"stop","chunks":5}`,
		`{"step":"chat stream, include_usage","content":"echo: hi","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"empty":1}`,
		`{"step":"responses","object":"response","status":"completed","text":"echo: hi"}`,
		`{"step":"responses stream","types":["response.created","response.in_progress","response.output_item.added","response.content_part.added","response.output_text.delta","response.output_text.done","response.content_part.done","response.output_item.done","response.completed"],"text":"echo: hi","ordered":true}`,
		`{"step":"responses.stream helper","status":"completed","text":"echo: hi"}`,
		`{"step":"unknown model","threw":"NotFoundError","status":404,`,
		`{"step":"ai generateText","text":"echo: hi","reasoning":"thinking","finish":"stop"}`,
		`{"step":"ai streamText","deltas":["echo: ","hi"],"reasoning":"thinking","finish":"stop"}`,
	})
	key := "openai-" + way
	held := postHeld(t, base+"/v1/chat/completions", fmt.Sprintf(`{"model":"agent","stream":true,"messages":[{"role":"user","content":%q}]}`, "hold-"+key),
		agent, key, `"content":"echo: "`)
	wantReleased(t, "POST /v1/chat/completions", held)
}

// agentcoreCalls: AgentCore's runtime asks GET /ping, then a caller
// streams a held POST /invocations.
func agentcoreCalls(t *testing.T, agent, base, way string) {
	resp, err := testClient.Get(base + "/ping")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"Healthy`) {
		t.Errorf("GET /ping = %d %q, want 200 and the runtime's status", resp.StatusCode, b)
	}
	key := "agentcore-" + way
	held := postHeld(t, base+"/invocations", `{"message":"hold-`+key+`"}`, agent, key, "once ")
	wantReleased(t, "agentcore /invocations", held)
}

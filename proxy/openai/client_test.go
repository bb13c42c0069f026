package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// TestClients: the real clients, end to end against the agent process
// through the sidecar: the openai npm client (models.list, chat
// completions with and without stream, responses.create with and without
// stream and its stream helper, a wrong key, an unknown model, an agent
// failing mid-stream in both APIs) and the Vercel AI SDK's
// OpenAI-compatible provider (generateText, streamText, a failure).
func TestClients(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run the clients")
	}
	modules := deps.NPM(t, "openai")
	s := newSidecar(t, startAgent(t), "")
	ok := s.serve(t, Options{Method: "chat", Model: "agent"})
	fail := s.serve(t, Options{Method: "fail", Model: "agent"})
	keyed := s.serve(t, Options{Method: "unary", Model: "agent", APIKey: "sekret", KeySet: true})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "../../testdata/openai/client.mjs", ok, fail, keyed)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	t.Logf("client.mjs:\n%s", out)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("client.mjs printed %q", line)
		}
		got = append(got, line)
	}
	want := []string{
		`{"step":"models.list","ids":["agent model sidecar"]}`,
		`{"step":"chat","object":"chat.completion","model":"agent","role":"assistant","content":"echo: hi","reasoning":"thinking","finish":"stop","id":true}`,
		`{"step":"chat stream","role":"assistant","content":"echo: hi","reasoning":"thinking","finish":"stop","chunks":5}`,
		`{"step":"chat stream, include_usage","content":"echo: hi","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"empty":1}`,
		`{"step":"chat stream, agent fails","content":"partial ","threw":"APIError","message":"the model is overloaded"}`,
		`{"step":"responses","object":"response","status":"completed","text":"echo: hi"}`,
		`{"step":"responses stream","types":["response.created","response.in_progress","response.output_item.added","response.content_part.added","response.output_text.delta","response.output_text.done","response.content_part.done","response.output_item.done","response.completed"],"text":"echo: hi","ordered":true}`,
		`{"step":"responses.stream helper","status":"completed","text":"echo: hi"}`,
		`{"step":"responses stream, agent fails","text":"partial ","last":"response.failed","status":"failed","error":"the model is overloaded"}`,
		`{"step":"wrong key","threw":"AuthenticationError","status":401,`,
		`{"step":"right key","content":"echo: hi"}`,
		`{"step":"unknown model","threw":"NotFoundError","status":404,`,
		`{"step":"ai generateText","text":"echo: hi","reasoning":"thinking","finish":"stop"}`,
		`{"step":"ai streamText","deltas":["echo: ","hi"],"reasoning":"thinking","finish":"stop"}`,
		`{"step":"ai streamText, agent fails","text":"partial ","error":"the model is overloaded"}`,
	}
	if len(got) != len(want) {
		t.Fatalf("client.mjs printed %d lines, want %d:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s…", i+1, got[i], want[i])
		}
	}
}

// TestClientParts: the openai npm client sends an image (a data URL) and
// audio through chat completions, and an image and a PDF through the
// Responses API, with and without stream, to an agent process that
// echoes its input's parts back: chat's content has them as Markdown
// data URLs, and the Responses image_generation_call item's result
// decodes to the bytes sent (the stream helper's final response and the
// streamed output_item.done both).
func TestClientParts(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run the clients")
	}
	modules := deps.NPM(t, "openai")
	s := newSidecar(t, startAgent(t), "")
	url := s.serve(t, Options{Method: "echo_parts", Model: "agent"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "../../testdata/openai/parts.mjs", url)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parts.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	want := []string{
		`{"step":"chat, an image and audio","head":"got 2 parts","parts":true}`,
		`{"step":"chat stream, an image and audio","head":"got 2 parts","parts":true}`,
		`{"step":"responses, an image and a file","status":"completed","types":["message","image_generation_call"],"text":"got 2 parts[r.pdf](data:application/pdf;base64,…)","pdf":true,"image":true}`,
		`{"step":"responses stream, an image and a file","events":["response.output_item.added","response.image_generation_call.in_progress","response.image_generation_call.generating","response.image_generation_call.completed","response.output_item.done"],"streamed":true,"status":"completed","types":["message","image_generation_call"],"text":"got 2 parts[r.pdf](data:application/pdf;base64,…)","pdf":true,"image":true}`,
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(want) {
		t.Fatalf("parts.mjs printed %d lines, want %d:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
}

package openai

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

// TestClientsQuestion: an agent's question read by the openai npm
// client. OpenAI's API has no pause: the question is the assistant's
// text (its message, and for a url question the link after a blank
// line), finish_reason stop, never the input_required record as JSON; the
// answer is the next user turn, which reaches the agent as any message
// does, with the ids that tell it apart (completion_id,
// previous_response_id).
func TestClientsQuestion(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run the clients")
	}
	modules := deps.NPM(t, "openai")
	s := newSidecar(t, startAgent(t), "")
	askURL := s.serve(t, Options{Method: "ask", Model: "agent"})
	unaryURL := s.serve(t, Options{Method: "ask_unary", Model: "agent"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "../../testdata/openai/ask.mjs", askURL, unaryURL)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ask.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	const asked = `Let me check. Sign in to pick the account.\n\nhttps://example.com/pick`
	want := []string{
		`{"step":"chat","content":"` + asked + `","finish":"stop"}`,
		`{"step":"chat stream","content":"` + asked + `","finish":"stop"}`,
		`{"step":"responses","text":"` + asked + `","status":"completed","next":"answered: savings after [\"previous_response_id\", \"response_id\"]"}`,
		`{"step":"chat answered","content":"answered: savings after [\"completion_id\"]"}`,
		`{"step":"chat, a unary method","content":"Which account?","finish":"stop"}`,
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ask.mjs printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

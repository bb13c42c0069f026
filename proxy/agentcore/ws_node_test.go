package agentcore

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// startNodeAgent runs testdata/ws/agent.mjs, the `ws` package's server,
// and returns its URL and the lines it prints after "listening".
func startNodeAgent(t *testing.T) (*wsAgent, <-chan string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	modules := deps.NPM(t, "ws")
	cmd := exec.Command("node", filepath.Join(deps.Repo(), "testdata", "ws", "agent.mjs"), "0")
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	select {
	case l := <-lines:
		port, ok := strings.CutPrefix(l, "listening ")
		if !ok {
			t.Fatalf("agent.mjs said %q, want listening <port>", l)
		}
		return &wsAgent{URL: "http://127.0.0.1:" + port}, lines
	case <-time.After(30 * time.Second):
		t.Fatal("agent.mjs did not listen")
		return nil, nil
	}
}

// TestWSNode: the `ws` npm package as the caller and as the agent, through
// AgentCore's /ws: text and binary frames come back as they went, the
// agent's close code and reason reach the caller, the caller's reach the
// agent's side, and the session header reaches the agent's upgrade.
func TestWSNode(t *testing.T) {
	agent, said := startNodeAgent(t)
	url, _, _ := wsSidecar(t, agent, "", "converse")
	echoes := []string{`text {"say":"héllo"}`, "binary 000102ff"}
	for _, tt := range []struct {
		how  string
		want string
	}{
		{"", "close 4000 agent done"},
		{"leave", "close 1000 caller done"},
	} {
		got := deps.Node(t, "ws", "client.mjs", wsURL(url), tt.how)
		if want := append(slices.Clone(echoes), tt.want); !slices.Equal(got, want) {
			t.Errorf("client.mjs %s printed %q, want %q", tt.how, got, want)
		}
		select {
		case l := <-said:
			if l != "upgrade "+strings.Repeat("s", 33) {
				t.Errorf("agent.mjs said %q, want the upgrade with the session id", l)
			}
		case <-time.After(10 * time.Second):
			t.Error("agent.mjs saw no upgrade")
		}
	}
}

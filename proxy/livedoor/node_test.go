package livedoor

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

// startNodeAgent runs testdata/ws/agent.mjs, the `ws` package's server
// (GET /live echoes every frame), and returns its URL.
func startNodeAgent(t *testing.T) string {
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
		return "http://127.0.0.1:" + port
	case <-time.After(30 * time.Second):
		t.Fatal("agent.mjs did not listen")
		return ""
	}
}

// TestPlatformFramingNode: the `ws` npm package as the caller, sending the
// platform's frames as the Python SDK's json.dumps writes them, and as
// the agent, mounted on the platform's port: the setup's input and the
// bidi_stream_input's contents reach the agent byte for byte (its echo
// shows it), each wrapped in bidiStreamOutput; the caller's close ends
// it. An unknown class_method is closed 1008 naming it.
func TestPlatformFramingNode(t *testing.T) {
	agent := startNodeAgent(t)
	url, _, _ := liveSidecar(t, agent, "", `{mount: /live, method: talk}`)
	got := deps.Node(t, "ws", "platform.mjs", url)
	want := []string{
		`text {"bidiStreamOutput":{"query": "hello"}}`,
		`text {"bidiStreamOutput":{"query": "héllo again", "n": [1, 2]}}`,
		`close 1000 caller done`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("platform.mjs printed %q, want %q", got, want)
	}
	got = deps.Node(t, "ws", "platform.mjs", url, "nope")
	if want := []string{`close 1008 class_method "nope" is not a bidi method of the map`}; !slices.Equal(got, want) {
		t.Errorf("platform.mjs nope printed %q, want %q", got, want)
	}
}

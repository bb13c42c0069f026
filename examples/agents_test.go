package examples

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// syncBuffer is an agent's stderr, read while the agent writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// buildNode compiles examples/node/src with the tsc of the cache's
// testdata/node set (the versions its package-lock.json pins) into a
// temporary folder standing for its dist/, and returns the agent's
// command line.
func buildNode(t *testing.T) []string {
	t.Helper()
	modules := deps.NPM(t, "node")
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tsc := exec.CommandContext(ctx, "node", filepath.Join(modules, "typescript", "bin", "tsc"),
		"-p", filepath.Join("node", "tsconfig.json"), "--outDir", out, "--typeRoots", filepath.Join(modules, "@types"))
	if b, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, b)
	}
	return []string{"node", filepath.Join(out, "agent.js")}
}

// TestAgentsLogNoProbes: each example agent logs its calls on stderr but
// not the sidecar's GET /health probes (one a second under `make run`,
// which would bury them).
func TestAgentsLogNoProbes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		build func(t *testing.T) []string
	}{
		{"python", func(t *testing.T) []string { return []string{"python3", filepath.Join("python", "agent.py")} }},
		{"node", buildNode},
	} {
		t.Run(tt.name, func(t *testing.T) {
			argv := tt.build(t)
			if _, err := exec.LookPath(argv[0]); err != nil {
				t.Fatalf("%s not found: run `make deps`", argv[0])
			}
			// A Unix socket: no port to collide with another test's.
			sock := filepath.Join(t.TempDir(), "agent.sock")
			var stderr syncBuffer
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "AGENT_SOCKET="+sock)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-done
			})
			client := &http.Client{Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "unix", sock)
				},
			}}
			defer client.CloseIdleConnections()
			get := func(method, path, body string) (int, string, error) {
				req, _ := http.NewRequest(method, "http://agent"+path, strings.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					return 0, "", err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b), err
			}

			// Up when its first probe answers (what the sidecar waits for).
			deadline := time.Now().Add(30 * time.Second)
			for {
				code, _, err := get("GET", "/health", "")
				if err == nil && code == 200 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("GET /health: %d %v after 30s; stderr:\n%s", code, err, stderr.String())
				}
				select {
				case err := <-done:
					done <- err
					t.Fatalf("the agent exited (%v); stderr:\n%s", err, stderr.String())
				case <-time.After(50 * time.Millisecond):
				}
			}
			for range 5 {
				if code, body, err := get("GET", "/health", ""); err != nil || code != 200 {
					t.Fatalf("GET /health = %d %q %v", code, body, err)
				}
			}
			if code, body, err := get("POST", "/query", `{"message": "hi"}`); err != nil || code != 200 || !strings.Contains(body, "Echo: hi") {
				t.Fatalf("POST /query = %d %q %v", code, body, err)
			}
			if code, _, err := get("GET", "/nowhere", ""); err != nil || code != 404 {
				t.Fatalf("GET /nowhere = %d %v", code, err)
			}

			// SIGTERM: the agent stops, its log complete.
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				done <- err
				if err != nil {
					t.Errorf("exit after SIGTERM: %v, want 0", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the agent still runs 30s after SIGTERM; stderr:\n%s", stderr.String())
			}
			log := stderr.String()
			if strings.Contains(log, "/health") {
				t.Errorf("stderr logs the health probes, want them quiet:\n%s", log)
			}
			for _, want := range []string{"POST /query", "GET /nowhere", "stopped"} {
				if !strings.Contains(log, want) {
					t.Errorf("stderr has no %q, want every other request logged:\n%s", want, log)
				}
			}
		})
	}
}

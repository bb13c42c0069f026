package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/imagetest"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// TestInitImages builds the Node, Python and Go Dockerfiles init writes as
// far as this machine allows, without a Docker engine, and runs them as
// the container would. The Node agent is examples/node's in the layout the
// Dockerfile expects (package.json, package-lock.json, tsconfig.json,
// src/agent.ts), the Python one testdata/agents/agent.py, the Go one a
// module of its own (goAgent):
//
//   - imagetest builds each stage in a folder standing for its root: the
//     COPYs (from the build context, from an earlier stage, the sidecar
//     from its image, for which the binary under test stands), then each
//     RUN with sh -c, npm and Go offline. `npm ci` is not run (no test
//     installs): the cache's node_modules for examples/node stands for it.
//     The user's creation (groupadd, useradd) needs root and is not run;
//   - the last stage's ENTRYPOINT (`sidecar`, found in the image's
//     /usr/local/bin) and CMD, $PORT=0 as a platform sets it: a unary and
//     a streaming call through the contract and through the door init
//     mounted, then SIGTERM and exit 0.
func TestInitImages(t *testing.T) {
	tests := []struct {
		lang, agent, query, stream, door string
		copied                           map[string]string // the build context's files, from the repository's
		written                          map[string]string // the build context's files, by their text
		modules                          string            // the node_modules npm ci stands for
		unary, streamed                  string            // in the contract's answers
	}{{
		lang: "node", agent: "node dist/agent.js", query: "/query", stream: "/stream", door: "openai",
		copied: map[string]string{"package.json": "examples/node/package.json",
			"package-lock.json": "examples/node/package-lock.json", "src/agent.ts": "examples/node/src/agent.ts"},
		written: map[string]string{"tsconfig.json": `{"compilerOptions": {"target": "ES2022", "module": "commonjs", "moduleResolution": "node", "types": ["node"],
  "strict": true, "rootDir": "src", "outDir": "dist", "skipLibCheck": true}, "include": ["src"]}` + "\n"},
		modules: "node",
		unary:   `{"output":{"text":"Echo: hi"}}`, streamed: `{"text":"hi "}`,
	}, {
		lang: "python", agent: "python3 agent.py", query: "/echo", stream: "/sse", door: "mcp",
		copied: map[string]string{"agent.py": "testdata/agents/agent.py"},
		unary:  `"path":"/echo","body":{"message":"hi"}`, streamed: `"text":"tok2"`,
	}, {
		lang: "go", agent: "go run ./cmd/agent --verbose", query: "/query", stream: "/stream", door: "a2a",
		written: map[string]string{"go.mod": "module example.com/agent\n\ngo 1.26\n", "cmd/agent/main.go": goAgent},
		unary:   `{"output":{"text":"Echo: hi"}}`, streamed: `{"text":"tok1"}`,
	}}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			var modules string
			if tt.modules != "" {
				modules = deps.NPM(t, tt.modules)
			}
			ctxDir := t.TempDir()
			for name, from := range tt.copied {
				b, err := os.ReadFile(filepath.Join("..", "..", from))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(ctxDir, name), string(b))
			}
			for name, text := range tt.written {
				writeFile(t, filepath.Join(ctxDir, name), text)
			}
			// The agent on a Unix socket: no port to collide with.
			upstream := agentUpstream(t, true)
			if _, stderr, code := runInitIn(t, ctxDir, "--agent", tt.agent, "--url", upstream, "--query", tt.query,
				"--stream", tt.stream, "--doors", tt.door, "--docker"); code != 0 {
				t.Fatalf("sidecar init = exit %d:\n%s", code, stderr)
			}
			d, err := imagetest.Read(filepath.Join(ctxDir, "Dockerfile"))
			if err != nil {
				t.Fatal(err)
			}
			builder := imagetest.Builder{Context: ctxDir, Dir: t.TempDir(), NodeModules: modules,
				Images: map[string]map[string]string{sidecarImage: {"/sidecar": binary}}}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			t.Cleanup(cancel) // after the image's Stop, which it bounds
			img, err := builder.Build(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if len(img.Entrypoint) == 0 || img.Entrypoint[0] != "sidecar" {
				t.Fatalf("ENTRYPOINT %q: want the sidecar", img.Entrypoint)
			}
			if _, err := os.Lstat(img.Path("/usr/local/bin/sidecar")); err != nil {
				t.Fatalf("the image has no /usr/local/bin/sidecar: want COPY --from=%s /sidecar /usr/local/bin/sidecar", sidecarImage)
			}
			image := imagetest.Start(ctx, t, img)
			base := image.URL
			t.Cleanup(func() {
				if err := image.Stop(); err != nil {
					t.Errorf("the image after SIGTERM: %v, want exit 0", err)
				}
			})

			r := post(t, base+"/api/reasoning_engine", `{"class_method": "query", "input": {"message": "hi"}}`)
			if r.status != http.StatusOK || !strings.Contains(r.body, tt.unary) {
				t.Errorf("the image's query = %d %s, want 200 with %s", r.status, r.body, tt.unary)
			}
			r = post(t, base+"/api/stream_reasoning_engine", `{"class_method": "stream_query", "input": {"message": "hi"}}`)
			if r.status != http.StatusOK || !strings.Contains(r.body, tt.streamed) {
				t.Errorf("the image's stream_query = %d %s, want 200 with %s", r.status, r.body, tt.streamed)
			}
			cfg, err := config.Load(img.Path("sidecar.yaml"), doors.Kinds(doors.All)...)
			if err != nil {
				t.Fatal(err)
			}
			door := doorNamed(tt.door)
			resp, err := testClient.Do(door.Probe.Request(door.URL(base, cfg.Protocols.Door(tt.door)), "stream_query", true))
			if err != nil {
				t.Fatal(err)
			}
			b := readAll(t, resp)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "hi") && !strings.Contains(string(b), "tok") {
				t.Errorf("the image's %s door = %d %s, want 200 with the agent's answer", tt.door, resp.StatusCode, b)
			}
			testClient.CloseIdleConnections()
		})
	}
}

// goAgent is a Go agent for TestInitImages: on $AGENT_SOCKET, POST /query
// echoes the message, POST /stream answers two JSON lines. It refuses to
// start without --verbose, the argument the image's CMD must pass on.
const goAgent = `package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] != "--verbose" {
		log.Fatalf("want the one argument --verbose, got %q", os.Args[1:])
	}
	http.HandleFunc("POST /query", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Message string }
		json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"text": "Echo: " + in.Message})
	})
	http.HandleFunc("POST /stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprint(w, "{\"text\":\"tok0\"}\n{\"text\":\"tok1\"}\n")
	})
	ln, err := net.Listen("unix", os.Getenv("AGENT_SOCKET"))
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.Serve(ln, nil))
}
`

// writeFile writes text to path, making its folder.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

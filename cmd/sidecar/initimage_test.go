package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// TestInitImages builds the Node, Python and Go Dockerfiles init writes as
// far as this machine allows, without a Docker engine, and runs them as
// the container would. The Node agent is examples/node's in the layout the
// Dockerfile expects (package.json, package-lock.json, tsconfig.json,
// src/agent.ts), the Python one testdata/agents/agent.py, the Go one a
// module of its own (goAgent):
//
//   - each stage in a folder standing for its WORKDIR: the COPYs (from the
//     build context, from an earlier stage, the sidecar from its image),
//     then each RUN with sh -c, npm offline. `npm ci` is not run (no test
//     installs): the cache's node_modules for examples/node stands for it.
//     The user's creation (groupadd, useradd) needs root and is not run;
//   - the last stage's ENTRYPOINT and CMD, `sidecar` the binary under
//     test, $PORT=0 as a platform sets it: a unary and a streaming call
//     through the contract and through the door init mounted.
func TestInitImages(t *testing.T) {
	tests := []struct {
		lang, agent, query, stream, door string
		context                          func(t *testing.T, dir string)
		modules                          string // the node_modules npm ci stands for
		unary, streamed                  string // in the contract's answers
	}{{
		lang: "node", agent: "node dist/agent.js", query: "/query", stream: "/stream", door: "openai",
		context: func(t *testing.T, dir string) {
			for _, f := range []string{"package.json", "package-lock.json"} {
				copyInto(t, filepath.Join("..", "..", "examples", "node", f), dir, true)
			}
			copyInto(t, filepath.Join("..", "..", "examples", "node", "agent.ts"), filepath.Join(dir, "src", "agent.ts"), false)
			tsconfig := `{"compilerOptions": {"target": "ES2022", "module": "commonjs", "moduleResolution": "node", "types": ["node"],
  "strict": true, "rootDir": "src", "outDir": "dist", "skipLibCheck": true}, "include": ["src"]}` + "\n"
			if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(tsconfig), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		modules: "node",
		unary:   `{"output":{"text":"Echo: hi"}}`, streamed: `{"text":"hi "}`,
	}, {
		lang: "python", agent: "python3 agent.py", query: "/echo", stream: "/sse", door: "mcp",
		context: func(t *testing.T, dir string) {
			copyInto(t, filepath.Join("..", "..", "testdata", "agents", "agent.py"), dir, true)
		},
		unary: `"path":"/echo","body":{"message":"hi"}`, streamed: `"text":"tok2"`,
	}, {
		lang: "go", agent: "go run ./cmd/agent --verbose", query: "/query", stream: "/stream", door: "a2a",
		context: func(t *testing.T, dir string) {
			files := map[string]string{"go.mod": "module example.com/agent\n\ngo 1.26\n", "cmd/agent/main.go": goAgent}
			for name, text := range files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		},
		unary: `{"output":{"text":"Echo: hi"}}`, streamed: `{"text":"tok1"}`,
	}}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			var modules string
			if tt.modules != "" {
				modules = deps.NPM(t, tt.modules)
			}
			ctxDir := t.TempDir()
			tt.context(t, ctxDir)
			// The agent on a Unix socket: no port to collide with.
			upstream := agentUpstream(t, true)
			if _, stderr, code := runInitIn(t, ctxDir, "--agent", tt.agent, "--url", upstream, "--query", tt.query,
				"--stream", tt.stream, "--doors", tt.door, "--docker"); code != 0 {
				t.Fatalf("sidecar init = exit %d:\n%s", code, stderr)
			}
			df, err := os.ReadFile(filepath.Join(ctxDir, "Dockerfile"))
			if err != nil {
				t.Fatal(err)
			}
			final, argv, env := buildImage(t, ctxDir, string(df), modules)
			base := startImage(t, final, argv, env)

			r := post(t, base+"/api/reasoning_engine", `{"class_method": "query", "input": {"message": "hi"}}`)
			if r.status != http.StatusOK || !strings.Contains(r.body, tt.unary) {
				t.Errorf("the image's query = %d %s, want 200 with %s", r.status, r.body, tt.unary)
			}
			r = post(t, base+"/api/stream_reasoning_engine", `{"class_method": "stream_query", "input": {"message": "hi"}}`)
			if r.status != http.StatusOK || !strings.Contains(r.body, tt.streamed) {
				t.Errorf("the image's stream_query = %d %s, want 200 with %s", r.status, r.body, tt.streamed)
			}
			cfg, err := config.Load(filepath.Join(final, "sidecar.yaml"), doors.Kinds(doors.All)...)
			if err != nil {
				t.Fatal(err)
			}
			d := doorNamed(tt.door)
			resp, err := testClient.Do(d.Probe.Request(d.URL(base, cfg.Protocols.Door(tt.door)), "stream_query", true))
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

// buildImage builds the Dockerfile text on the build context ctxDir as
// TestInitImages says, and returns the last stage's WORKDIR folder, its
// ENTRYPOINT and CMD (`sidecar` the binary under test) and its ENV. Each
// stage has a folder standing for its root: absolute paths of COPY, and
// the /out/ a RUN writes to, are under it.
func buildImage(t *testing.T, ctxDir, text, modules string) (dir string, argv, env []string) {
	t.Helper()
	work := t.TempDir()
	type stageDir struct {
		name, root, workdir string
		env                 []string
	}
	// at is the stage's path p: absolute, or relative to its WORKDIR.
	at := func(s *stageDir, p string) string {
		if filepath.IsAbs(p) {
			return filepath.Join(s.root, p)
		}
		return filepath.Join(s.root, s.workdir, p)
	}
	out := regexp.MustCompile(`(^|\s)/out/`)
	var stages []*stageDir
	var cur *stageDir
	var entrypoint, cmd []string
	for i, in := range parseDockerfile(t, text) {
		if in.op != "FROM" && cur == nil {
			t.Fatalf("%s %s before the first FROM", in.op, in.args)
		}
		switch in.op {
		case "FROM":
			_, name, _ := strings.Cut(in.args, " AS ")
			cur = &stageDir{name: name, workdir: "/", root: filepath.Join(work, fmt.Sprintf("stage%d", i))}
			cur.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(work, "home"),
				"npm_config_cache=" + filepath.Join(work, "npm-cache"), "npm_config_offline=true", "npm_config_update_notifier=false",
				"GOCACHE=" + goEnv(t, "GOCACHE"), "GOMODCACHE=" + goEnv(t, "GOMODCACHE"), "GOPROXY=off", "GOTOOLCHAIN=local"}
			stages = append(stages, cur)
		case "WORKDIR":
			cur.workdir = in.args
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				if !strings.HasPrefix(kv, "HOME=") { // the user's home: not created here
					cur.env = append(cur.env, kv)
				}
			}
		case "COPY":
			fields := strings.Fields(in.args)
			from := ""
			if f, ok := strings.CutPrefix(fields[0], "--from="); ok {
				from, fields = f, fields[1:]
			}
			srcs, dest := fields[:len(fields)-1], fields[len(fields)-1]
			if from == sidecarImage {
				if !slices.Equal(srcs, []string{"/sidecar"}) || dest != "/usr/local/bin/sidecar" {
					t.Errorf("COPY %s: want the sidecar's /sidecar to /usr/local/bin/sidecar", in.args)
				}
				continue
			}
			source := func(src string) string { return filepath.Join(ctxDir, src) }
			if from != "" {
				var s *stageDir
				for _, st := range stages {
					if st.name == from {
						s = st
					}
				}
				if s == nil {
					t.Fatalf("COPY %s: no stage %s", in.args, from)
				}
				source = func(src string) string { return at(s, src) }
			}
			toDir := strings.HasSuffix(dest, "/") || dest == "." || len(srcs) > 1
			for _, src := range srcs {
				matched, _ := filepath.Glob(source(src))
				if len(matched) == 0 && !strings.Contains(src, "*") {
					where := "the build context"
					if from != "" {
						where = "stage " + from
					}
					t.Fatalf("COPY %s: no %s in %s", in.args, src, where)
				}
				for _, m := range matched {
					if src == "." {
						m += "/." // the folder's contents, as COPY . copies them
					}
					copyInto(t, m, at(cur, dest), toDir)
				}
			}
		case "RUN":
			switch {
			case strings.HasPrefix(in.args, "groupadd "):
				continue // the user: needs root
			case strings.HasPrefix(in.args, "npm ci"):
				if modules == "" {
					t.Fatalf("RUN %s: no node_modules stands for it", in.args)
				}
				copyInto(t, modules, at(cur, "node_modules"), false)
				continue
			}
			if err := os.MkdirAll(at(cur, "."), 0o755); err != nil {
				t.Fatal(err)
			}
			run := exec.Command("sh", "-c", out.ReplaceAllString(in.args, "${1}"+filepath.Join(cur.root, "out")+"/"))
			run.Dir, run.Env = at(cur, "."), cur.env
			if out, err := run.CombinedOutput(); err != nil {
				t.Fatalf("RUN %s: %v\n%s", in.args, err, out)
			}
		case "ENTRYPOINT", "CMD":
			var words []string
			if err := json.Unmarshal([]byte(in.args), &words); err != nil {
				t.Fatalf("%s %s: not the exec form: %v", in.op, in.args, err)
			}
			if in.op == "ENTRYPOINT" {
				entrypoint = words
			} else {
				cmd = words
			}
		}
	}
	if len(entrypoint) == 0 || entrypoint[0] != "sidecar" {
		t.Fatalf("ENTRYPOINT %q: want the sidecar", entrypoint)
	}
	argv = append(append([]string{binary}, entrypoint[1:]...), cmd...)
	return at(cur, "."), argv, cur.env
}

// goEnv is `go env name`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// startImage runs argv in dir as a container runs its entrypoint, $PORT=0,
// and returns the sidecar's URL once the agent is ready. The test's
// cleanup stops it with SIGTERM, and expects it to exit 0.
func startImage(t *testing.T, dir string, argv, env []string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(env, "PORT=0")
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		t.Fatal(err)
	}
	var log syncLog
	addr := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			log.add(sc.Text())
			var e struct{ Message, Protocol, Addr string }
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Message == "listening" && e.Protocol == "agent_platform" {
				addr <- e.Addr
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { <-read; exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Errorf("the image after SIGTERM: %v, want exit 0", err)
		}
		out.Close()
		if t.Failed() {
			t.Logf("the image's output:\n%s", log.String())
		}
	})
	var base string
	select {
	case a := <-addr: // [::]:N: every interface, as $PORT has it
		base = "http://127.0.0.1:" + a[strings.LastIndex(a, ":")+1:]
	case <-read:
		t.Fatalf("the image exited before listening:\n%s", log.String())
	case <-time.After(time.Minute):
		t.Fatalf("the image not listening after a minute:\n%s", log.String())
	}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := testClient.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-read:
			t.Fatalf("the image exited before its agent was ready:\n%s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the image's agent not ready after a minute:\n%s", log.String())
		}
	}
}

// copyInto copies the file or folder src to dest, or into dest when
// destIsDir (COPY's rule: a dest ending in "/", ".", or several sources).
func copyInto(t *testing.T, src, dest string, destIsDir bool) {
	t.Helper()
	if destIsDir {
		dest = filepath.Join(dest, filepath.Base(src))
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, dest).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v\n%s", src, dest, err, out)
	}
}

// syncLog is the lines a process wrote, read while it runs.
type syncLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *syncLog) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

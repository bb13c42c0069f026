package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// stageDir is a stage's filesystem as far as a test builds it: its
// WORKDIR is a folder of its own; absolute paths elsewhere (the sidecar's
// /sidecar, the config's /etc/sidecar.yaml) are the caller's to map.
type stageDir struct {
	workdir string // the stage's WORKDIR, e.g. /app
	dir     string // the folder standing for it
	env     []string
}

// path is where the stage's path p (relative to WORKDIR, or absolute
// under it) is in the folder; ok is false for a path outside WORKDIR.
func (s *stageDir) path(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return filepath.Join(s.dir, p), true
	}
	rel, err := filepath.Rel(s.workdir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.Join(s.dir, rel), true
}

// copyInto copies the file or folder src to dest, which is a folder when
// it ends in "/" or is "." (Docker's COPY rule).
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

// npmCI is the build stage's `npm ci`: the RUN the test does not run.
var npmCI = regexp.MustCompile(`^npm ci(\s|$)`)

// TestNodeExampleImage builds deploy/examples/Dockerfile.node as far as
// this machine allows, without a Docker engine, and runs it as the
// container would:
//
//   - the build stage in a folder standing for its WORKDIR: the context
//     files it COPYs (none of them left out by the context's
//     .dockerignore), then each RUN with sh -c in an environment of the
//     stage's ENVs, npm offline. Its `npm ci` alone is not run (no test
//     installs): the cache's node_modules stands for it, which
//     testdata/node/install.sh installed with `npm ci` from the same
//     package.json and package-lock.json;
//   - the final stage's COPYs, from the context and from the build stage,
//     into a folder of its own; its RUN (the user's creation, which
//     TestExampleDockerfiles checks) is not run;
//   - its ENTRYPOINT and CMD (with deploy/image-check.sh, the sidecar
//     it built: SIDECAR_IMAGE_CHECK_BINARY), the sidecar starting the built agent over a
//     Unix socket, $PORT set as the platform does: /healthz, one unary
//     call, one stream, SIGTERM and exit 0, and the agent logged no
//     health probe.
func TestNodeExampleImage(t *testing.T) {
	modules := deps.NPM(t, "node")
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: run `make deps`", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	work := t.TempDir()
	ctxDir := filepath.Join("..", "examples", "node")
	ignore := readIgnore(t, filepath.Join(ctxDir, ".dockerignore"))

	d := readDockerfile(t, filepath.Join("examples", "Dockerfile.node"))
	if len(d.stages) != 3 || d.stages[1].name != "build" {
		t.Fatalf("want three stages: sidecar, build and the final one")
	}
	build := &stageDir{workdir: "/", dir: filepath.Join(work, "build"), env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(work, "home"),
		"npm_config_cache=" + filepath.Join(work, "npm-cache"), "npm_config_offline=true",
		"npm_config_update_notifier=false",
	}}
	var ranCI, ranBuild bool
	for _, in := range d.stages[1].instrs {
		switch in.cmd {
		case "WORKDIR":
			build.workdir = in.args
		case "ENV":
			build.env = append(build.env, strings.Fields(in.args)...)
		case "ARG":
		case "COPY":
			c := copies(&stage{instrs: []instr{in}})[0]
			dest, ok := build.path(c.dest)
			if c.from != "" || !ok {
				t.Fatalf("line %d: COPY %s: want context files into the WORKDIR", in.line, in.args)
			}
			for _, src := range c.srcs {
				names, err := sources(ctxDir, src)
				if err != nil {
					t.Fatalf("line %d: %v", in.line, err)
				}
				for _, name := range names {
					if dockerignored(ignore, name) {
						t.Errorf("line %d: COPY %s: the context's .dockerignore leaves %s out", in.line, src, name)
					}
					copyInto(t, filepath.Join(ctxDir, name), dest, strings.HasSuffix(c.dest, "/") || c.dest == "." || len(c.srcs) > 1 || len(names) > 1)
				}
			}
		case "RUN":
			if npmCI.MatchString(in.args) {
				copyInto(t, modules, filepath.Join(build.dir, "node_modules"), false)
				ranCI = true
				continue
			}
			cmd := exec.CommandContext(ctx, "sh", "-c", in.args)
			cmd.Dir, cmd.Env = build.dir, build.env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("line %d: RUN %s: %v\n%s", in.line, in.args, err, out)
			}
			ranBuild = ranBuild || strings.Contains(in.args, "build") || strings.Contains(in.args, "tsc")
		default:
			t.Fatalf("line %d: %s in the build stage: this test does not know it", in.line, in.cmd)
		}
	}
	if !ranCI || !ranBuild {
		t.Fatalf("the build stage RUNs npm ci: %v, a build (tsc): %v; want both", ranCI, ranBuild)
	}

	final := &stageDir{workdir: "/", dir: filepath.Join(work, "final")}
	conf := filepath.Join(work, "sidecar.yaml")
	sock := filepath.Join(work, "agent.sock")
	var sidecar bool
	for _, in := range d.stages[2].instrs {
		switch in.cmd {
		case "WORKDIR":
			final.workdir = in.args
		case "COPY":
			c := copies(&stage{instrs: []instr{in}})[0]
			switch {
			case c.from == "sidecar":
				sidecar = true // the binary this test builds, below
			case c.dest == "/etc/sidecar.yaml":
				// The image's config, the agent on a Unix socket of this test.
				b, err := os.ReadFile(filepath.Join(ctxDir, c.srcs[0]))
				if err != nil {
					t.Fatal(err)
				}
				b = regexp.MustCompile(`(?m)^(\s*url:).*$`).ReplaceAll(b, []byte("${1} unix://"+sock))
				if err := os.WriteFile(conf, b, 0o644); err != nil {
					t.Fatal(err)
				}
			default:
				dest, ok := final.path(c.dest)
				if !ok {
					t.Fatalf("line %d: COPY %s: outside the WORKDIR", in.line, in.args)
				}
				from := &stageDir{workdir: "/", dir: ctxDir}
				if c.from == "build" {
					from = build
				} else if c.from != "" {
					t.Fatalf("line %d: COPY --from=%s", in.line, c.from)
				}
				for _, src := range c.srcs {
					p, ok := from.path(src)
					if !ok {
						t.Fatalf("line %d: COPY %s: outside the build stage's WORKDIR", in.line, src)
					}
					if c.from == "" && dockerignored(ignore, src) {
						t.Errorf("line %d: COPY %s: the context's .dockerignore leaves it out", in.line, src)
					}
					copyInto(t, p, dest, strings.HasSuffix(c.dest, "/") || c.dest == "." || len(c.srcs) > 1)
				}
			}
		}
	}
	if !sidecar {
		t.Fatal("the final stage copies no /sidecar from the sidecar stage")
	}
	if _, err := os.Stat(filepath.Join(final.dir, "node_modules", "typescript")); err == nil {
		t.Error("the final stage ships typescript: the build stage's devDependencies were not dropped")
	}

	// The sidecar: deploy/image-check.sh's, built as the image's Dockerfile
	// builds it, or one built here.
	bin := os.Getenv("SIDECAR_IMAGE_CHECK_BINARY")
	if bin == "" {
		bin = filepath.Join(work, "sidecar")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/sidecar").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	var argv []string
	for _, a := range append(jsonForm(t, d.stages[2].one(t, "ENTRYPOINT")), jsonForm(t, d.stages[2].one(t, "CMD"))...) {
		switch a {
		case "/sidecar":
			a = bin
		case "/etc/sidecar.yaml":
			a = conf
		}
		argv = append(argv, a)
	}
	out := runImage(t, ctx, final.dir, argv, os.Getenv("PATH"))
	// The sidecar probed the agent's /health before it was ready: the
	// agent logs its calls, not those probes.
	if strings.Contains(out, "/health ") || !strings.Contains(out, "agent: POST /query 200") {
		t.Errorf("the agent's log: want POST /query and no health probe:\n%s", out)
	}
}

// runImage runs argv (an image's ENTRYPOINT and CMD) in dir with $PORT=0,
// as the platform starts it, and PATH path, and calls it: /healthz, query,
// stream_query, then SIGTERM. It returns what the image logged.
func runImage(t *testing.T, ctx context.Context, dir string, argv []string, path string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir(), "PORT=0"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The log, read to its end; the sidecar's listening line gives its port.
	var (
		mu   sync.Mutex
		log  strings.Builder
		addr = make(chan string, 1)
		read = make(chan struct{})
	)
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			var e struct{ Message, Protocol, Addr string }
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Message == "listening" && e.Protocol == "agent_platform" {
				addr <- e.Addr
			}
		}
	}()
	logged := func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			<-read
			cmd.Wait()
		}
	}()

	var base string
	select {
	case a := <-addr:
		base = "http://127.0.0.1:" + a[strings.LastIndex(a, ":")+1:]
	case <-read:
		t.Fatalf("the image exited before listening:\n%s", logged())
	case <-ctx.Done():
		t.Fatalf("the image is not listening after the test's deadline:\n%s", logged())
	}
	call := func(path, body string) (int, string) {
		t.Helper()
		method := "GET"
		if body != "" {
			method = "POST"
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, logged())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for code, body := call("/healthz", ""); code != 200; code, body = call("/healthz", "") {
		select {
		case <-ctx.Done():
			t.Fatalf("/healthz = %d %s at the test's deadline:\n%s", code, body, logged())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if code, body := call("/api/reasoning_engine", `{"class_method": "query", "input": {"message": "hi"}}`); code != 200 || strings.TrimSpace(body) != `{"output":{"text":"Echo: hi"}}` {
		t.Errorf("query = %d %s", code, body)
	}
	if code, body := call("/api/stream_reasoning_engine", `{"class_method": "stream_query", "input": {"message": "one two"}}`); code != 200 || body != "{\"text\":\"one \"}\n{\"text\":\"two \"}\n" {
		t.Errorf("stream_query = %d %q", code, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-read:
	case <-ctx.Done():
		t.Fatalf("the image still runs at the test's deadline, after SIGTERM:\n%s", logged())
	}
	exited = true
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v, want 0\n%s", err, logged())
	}
	return logged()
}

// readIgnore is a .dockerignore's patterns (none when there is no file).
func readIgnore(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	return patterns
}

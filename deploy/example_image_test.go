package deploy

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/imagetest"
)

// TestNodeExampleImage builds deploy/examples/Dockerfile.node as far as
// this machine allows, without a Docker engine, and runs it as the
// container would:
//
//   - imagetest builds each stage in a folder standing for its root: the
//     context files it COPYs (none of them left out by the context's
//     .dockerignore), then each RUN with sh -c in an environment of the
//     stage's ENVs, npm offline. `npm ci` alone is not run (no test
//     installs): the cache's node_modules stands for it, which
//     testdata/node/install.sh installed with `npm ci` from the same
//     package.json and package-lock.json. The final stage's COPYs come
//     from the context, the build stage and the sidecar's image, for which
//     the sidecar built here stands (deploy/image-check.sh's:
//     SIDECAR_IMAGE_CHECK_BINARY); its RUN (the user's creation, which
//     TestExampleDockerfiles checks) is not run;
//   - its ENTRYPOINT and CMD, the sidecar starting the built agent over a
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
	t.Cleanup(cancel) // after the image's cleanup, which it bounds
	work := t.TempDir()

	d, err := imagetest.Read(filepath.Join("examples", "Dockerfile.node"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Stages) != 3 || d.Stages[1].Name != "build" {
		t.Fatalf("want three stages: sidecar, build and the final one")
	}
	var ranCI, ranBuild bool
	npmCI := regexp.MustCompile(`^npm ci(\s|$)`)
	for _, in := range d.Stages[1].All("RUN") {
		ranCI = ranCI || npmCI.MatchString(in.Args)
		ranBuild = ranBuild || strings.Contains(in.Args, "build") || strings.Contains(in.Args, "tsc")
	}
	if !ranCI || !ranBuild {
		t.Fatalf("the build stage RUNs npm ci: %v, a build (tsc): %v; want both", ranCI, ranBuild)
	}
	for _, in := range d.Stages[1].All("COPY") {
		if strings.Contains(in.Args, "--from=") {
			t.Fatalf("line %d: COPY %s in the build stage: want context files", in.Line, in.Args)
		}
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
	b := imagetest.Builder{Context: filepath.Join("..", "examples", "node"), Dir: filepath.Join(work, "image"), NodeModules: modules,
		Images: map[string]map[string]string{d.Args["SIDECAR_IMAGE"]: {"/sidecar": bin}}}
	img, err := b.Build(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(img.Path("/sidecar")); err != nil {
		t.Fatal("the final stage copies no /sidecar from the sidecar stage")
	}
	if _, err := os.Stat(img.Path("node_modules/typescript")); err == nil {
		t.Error("the final stage ships typescript: the build stage's devDependencies were not dropped")
	}
	// The image's config, the agent on a Unix socket of this test.
	sock := filepath.Join(work, "agent.sock")
	replaceInFile(t, img.Path("/etc/sidecar.yaml"), regexp.MustCompile(`(?m)^(\s*url:).*$`), "${1} unix://"+sock)

	out := runImage(t, ctx, img)
	// The sidecar probed the agent's /health before it was ready: the
	// agent logs its calls, not those probes.
	if strings.Contains(out, "/health ") || !strings.Contains(out, "agent: POST /query 200") {
		t.Errorf("the agent's log: want POST /query and no health probe:\n%s", out)
	}
}

// replaceInFile replaces re's matches in the file at path by repl
// (regexp.ReplaceAll's template), and fails the test if there are none.
func replaceInFile(t *testing.T, path string, re *regexp.Regexp, repl string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !re.Match(b) {
		t.Fatalf("%s: nothing matches %s", path, re)
	}
	if err := os.WriteFile(path, re.ReplaceAll(b, []byte(repl)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runImage starts the image as the platform does, $PORT=0, and calls it:
// /healthz, query, stream_query, then SIGTERM. It returns what the image
// logged.
func runImage(t *testing.T, ctx context.Context, img *imagetest.Image) string {
	t.Helper()
	p := imagetest.Start(ctx, t, img)
	call := func(path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("/api/reasoning_engine", `{"class_method": "query", "input": {"message": "hi"}}`); code != 200 || strings.TrimSpace(body) != `{"output":{"text":"Echo: hi"}}` {
		t.Errorf("query = %d %s, want 200 {\"output\":{\"text\":\"Echo: hi\"}}", code, body)
	}
	if code, body := call("/api/stream_reasoning_engine", `{"class_method": "stream_query", "input": {"message": "one two"}}`); code != 200 || body != "{\"text\":\"one \"}\n{\"text\":\"two \"}\n" {
		t.Errorf("stream_query = %d %q, want 200 with the records one, two", code, body)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v, want 0", err)
	}
	return p.Log()
}

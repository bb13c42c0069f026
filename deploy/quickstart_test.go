package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/imagetest"
	"github.com/sidecar-dev/sidecar/internal/testports"
)

// sidecarImage is where the quickstarts' Dockerfiles copy the sidecar
// from: the image the project publishes.
const sidecarImage = "ghcr.io/sidecar-dev/sidecar:latest"

// quickstartImage is what an examples/quickstart agent's image runs.
type quickstartImage struct {
	dir   string
	agent []string // the final stage's CMD
	build []string // the build stage's RUNs begin so, in order (nil: no build stage)
}

// TestQuickstartDockerfiles holds each examples/quickstart agent's
// Dockerfile (the one its docs/quickstart-*.md page shows) to the pattern
// for an agent image, as far as a machine without a Docker engine can:
// the final stage copies the sidecar from sidecarImage to
// /usr/local/bin/sidecar and the agent's sidecar.yaml to /etc/sidecar.yaml
// (which docs' tests validate and run, doors included), runs the sidecar as ENTRYPOINT with the config and
// "--", the agent as CMD, as a numeric non-root user with a home, and
// exposes the sidecar's port; every file copied from the context is there
// and not left out by its .dockerignore; a COPY --from names an earlier
// stage or the sidecar's image; a build stage does what the agent's
// language builds with.
func TestQuickstartDockerfiles(t *testing.T) {
	tests := []quickstartImage{
		{"node", []string{"node", "dist/agent.js"}, []string{"npm ci", "npm run build"}},
		{"node-http", []string{"node", "dist/agent.js"}, []string{"npm ci", "npm run build"}},
		{"python-fastapi", []string{"python3", "agent.py"}, nil},
		{"python-stdlib", []string{"python3", "agent.py"}, nil},
		{"go", []string{"/agent"}, []string{"CGO_ENABLED=0 go build"}},
	}
	dirs, err := os.ReadDir("../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !slices.ContainsFunc(tests, func(tt quickstartImage) bool { return tt.dir == d.Name() }) {
			t.Errorf("examples/quickstart/%s: its Dockerfile is not checked here: add it to the table", d.Name())
		}
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			ctx := filepath.Join("..", "examples", "quickstart", tt.dir)
			d := readDockerfile(t, filepath.Join(ctx, "Dockerfile"))
			if len(d.stages) != 1+min(len(tt.build), 1) {
				t.Fatalf("%d stages, want %d", len(d.stages), 1+min(len(tt.build), 1))
			}
			ignore, err := imagetest.ReadIgnore(filepath.Join(ctx, ".dockerignore"))
			if err != nil {
				t.Fatal(err)
			}
			contextCopy := func(c copyInstr) {
				for _, src := range c.srcs {
					if _, err := os.Stat(filepath.Join(ctx, src)); err != nil {
						t.Errorf("line %d: COPY %s: not in the build context examples/quickstart/%s", c.line, src, tt.dir)
					}
					if imagetest.Ignored(ignore, src) {
						t.Errorf("line %d: COPY %s: the context's .dockerignore leaves it out", c.line, src)
					}
				}
			}
			stages := map[string]bool{}
			for i, s := range d.stages {
				if i < len(d.stages)-1 && tt.build != nil {
					checkBuildStage(t, ctx, s, tt.build)
				}
				for _, c := range copies(s) {
					switch {
					case c.from == "":
						contextCopy(c)
					case c.from == sidecarImage && i == len(d.stages)-1:
					case !stages[c.from]:
						t.Errorf("line %d: COPY --from=%s: no earlier stage of that name (the sidecar comes from %s)", c.line, c.from, sidecarImage)
					}
				}
				stages[s.name] = s.name != ""
			}

			final := d.stages[len(d.stages)-1]
			var sidecar, conf bool
			for _, c := range copies(final) {
				sidecar = sidecar || c.from == sidecarImage && reflect.DeepEqual(c.srcs, []string{"/sidecar"}) && c.dest == "/usr/local/bin/sidecar"
				conf = conf || c.from == "" && reflect.DeepEqual(c.srcs, []string{"sidecar.yaml"}) && c.dest == "/etc/sidecar.yaml"
			}
			if !sidecar || !conf {
				t.Errorf("want COPY --from=%s /sidecar /usr/local/bin/sidecar and COPY sidecar.yaml /etc/sidecar.yaml", sidecarImage)
			}
			want := []string{"/usr/local/bin/sidecar", "--config", "/etc/sidecar.yaml", "--"}
			if ep := jsonForm(t, final.one(t, "ENTRYPOINT")); !reflect.DeepEqual(ep, want) {
				t.Errorf("ENTRYPOINT %q, want %q", ep, want)
			}
			if cmd := jsonForm(t, final.one(t, "CMD")); !reflect.DeepEqual(cmd, tt.agent) {
				t.Errorf("CMD %q, want %q", cmd, tt.agent)
			}
			checkNonRootUser(t, final)
			checkUserHome(t, final)
			if port := defaultListenPort(t); final.one(t, "EXPOSE").args != port {
				t.Errorf("EXPOSE %s, want %s", final.one(t, "EXPOSE").args, port)
			}
		})
	}
}

// checkBuildStage holds a quickstart's build stage to its language's
// build: the RUNs begin as runs says, in order; Go's builder is the Go of
// the agent's own go.mod; Node's copies the lock file its `npm ci` needs.
func checkBuildStage(t *testing.T, ctx string, s *stage, runs []string) {
	t.Helper()
	if s.name != "build" {
		t.Errorf("the build stage is named %q, want build", s.name)
	}
	var got []string
	for _, in := range s.all("RUN") {
		got = append(got, in.args)
	}
	for i, w := range runs {
		if i >= len(got) || !strings.HasPrefix(got[i], w) {
			t.Errorf("build stage RUNs %q, want %q in order", got, runs)
			break
		}
	}
	switch {
	case strings.HasPrefix(s.base, "golang:"):
		mod, err := os.ReadFile(filepath.Join(ctx, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
		if m == nil || s.base != "golang:"+string(m[1]) {
			t.Errorf("builder FROM %s, want golang:<the go line of the agent's go.mod>", s.base)
		}
	case strings.HasPrefix(s.base, "node:"):
		var lock bool
		for _, c := range copies(s) {
			lock = lock || slices.Contains(c.srcs, "package-lock.json")
		}
		if !lock {
			t.Error("the build stage copies no package-lock.json, which npm ci installs from")
		}
	}
}

// debianPython is the interpreter Debian's python3-* packages install
// modules for, which `make deps` installs the FastAPI agent's with: the
// python3 first on PATH may be another (pyenv's, a virtual environment's).
const debianPython = "/usr/bin/python3"

// TestQuickstartImages builds each examples/quickstart image as far as
// this machine allows, without a Docker engine, and runs it as the
// container would, as TestNodeExampleImage does the Node example's:
//
//   - imagetest builds each stage in a folder standing for its root: the
//     context files it COPYs, then each RUN with sh -c in an environment
//     of the stage's ENVs. `npm ci` is not run (no test installs): the
//     node_modules testdata/quickstart-<name>/install.sh installed from
//     the same package.json and package-lock.json stands for it; nor are
//     pip's install, for which Debian's python3-fastapi and
//     python3-uvicorn stand, and the user's creation;
//   - its ENTRYPOINT and CMD, the sidecar built here standing for the one
//     copied from the published image and the agent on a free port: the
//     same calls, and SIGTERM, as the Node example's image.
func TestQuickstartImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the agents")
	}
	bin := filepath.Join(t.TempDir(), "sidecar")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/sidecar").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, dir := range []string{"node", "node-http", "python-fastapi", "python-stdlib", "go"} {
		t.Run(dir, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			t.Cleanup(cancel) // after the image's cleanup, which it bounds
			runQuickstartImage(t, ctx, dir, bin)
		})
	}
}

// runQuickstartImage builds examples/quickstart/name's image with
// imagetest and runs it, bin standing for the sidecar's image.
func runQuickstartImage(t *testing.T, ctx context.Context, name, bin string) {
	work := t.TempDir()
	ctxDir := filepath.Join("..", "examples", "quickstart", name)
	d, err := imagetest.Read(filepath.Join(ctxDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	b := imagetest.Builder{Context: ctxDir, Dir: filepath.Join(work, "image"),
		Images: map[string]map[string]string{sidecarImage: {"/sidecar": bin}}}
	if name == "python-fastapi" {
		b.Path = pythonWith(t, work, os.Getenv("PATH"), "fastapi", "uvicorn")
	}
	for _, s := range d.Stages {
		for _, in := range s.All("RUN") {
			if strings.HasPrefix(in.Args, "npm ci") {
				b.NodeModules = deps.NPM(t, "quickstart-"+name)
			}
		}
	}
	img, err := b.Build(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	// The image's config, the agent on a free port of this test.
	replaceInFile(t, img.Path("/etc/sidecar.yaml"), regexp.MustCompile(`127\.0\.0\.1:8000`), "127.0.0.1:"+strconv.Itoa(testports.Free(t)))
	runImage(t, ctx, img)
}

// pythonWith returns path, with a folder of work holding a python3 first
// when the python3 on path does not import modules but Debian's does.
func pythonWith(t *testing.T, work, path string, modules ...string) string {
	t.Helper()
	script := "import " + strings.Join(modules, ", ")
	if exec.Command("python3", "-c", script).Run() == nil {
		return path
	}
	if exec.Command(debianPython, "-c", script).Run() != nil {
		t.Fatalf("python3 cannot %s: run make deps", script)
	}
	dir := filepath.Join(work, "python")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(debianPython, filepath.Join(dir, "python3")); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + path
}

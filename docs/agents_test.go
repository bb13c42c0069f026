package docs

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/internal/testports"
)

// A page that brings its own agent (the quickstarts) says which below a
// line `<!-- doctest: agent: DIR… -->`, each DIR an agent's directory from
// the repository's root. Its blocks up to the next such line belong to
// those agents: every code block but the sh ones is a whole file of one of
// them (the yaml one the sidecar.yaml of each), and the sh blocks run
// against each agent in turn, as runAgent says. Agents that share a page's
// commands serve the same routes the same way (a framework and the
// standard library).

// agentBlocks are the sh blocks of some agents' part of a page, in order.
type agentBlocks struct {
	page   string
	dirs   []string
	blocks []block
}

// agentNeeds is what an agent needs beyond its directory and the page's
// own commands, which the tests cannot run (they install nothing):
// node_modules from an npm package set `make deps` installed (npm), or a
// python3 that imports some modules (python), which `make deps` installs
// from Debian.
var agentNeeds = map[string]struct {
	npm    string
	python []string
}{
	"examples/quickstart/node":           {npm: "quickstart-node"},
	"examples/quickstart/node-http":      {npm: "quickstart-node-http"},
	"examples/quickstart/python-fastapi": {python: []string{"fastapi", "uvicorn"}},
	"examples/quickstart/python-stdlib":  {},
	"examples/quickstart/go":             {},
}

// debianPython is the interpreter Debian's python3-* packages install
// modules for, which `make deps` uses: the python3 first on PATH may be
// another (pyenv's, a virtual environment's).
const debianPython = "/usr/bin/python3"

// runAgent runs an agent's part of a page as a reader would, in a copy of
// its directory: the sh blocks before the one marked as the sidecar's
// start (the build steps), then that block's `sidecar dev …` command as
// it is written, but for the listeners' ports (the agent's 8000, in the
// copy's sidecar.yaml; the contract's 8080 and the dev listener's 8081,
// as --listen and --dev-listen), then every block after it against that
// sidecar. The start block's lines must be lines it printed; the other
// commands are checked as TestCommands checks the shared example's.
func runAgent(t *testing.T, page, agent string, blocks []block) {
	needs, ok := agentNeeds[agent]
	if !ok {
		t.Fatalf("%s: no agent %s in agentNeeds: say what it needs there", page, agent)
	}
	var setup, after []block
	var start *block
	for i, b := range blocks {
		switch {
		case b.mark == startedMark && start == nil:
			start = &blocks[i]
		case b.mark != "":
			t.Fatalf("%s: unknown or repeated mark <!-- doctest: %s -->", b.name(), b.mark)
		case start == nil:
			setup = append(setup, b)
		default:
			after = append(after, b)
		}
	}
	if start == nil {
		t.Fatalf("%s: no block of %s marked <!-- doctest: %s --> (its `sidecar dev` command)", page, agent, startedMark)
	}
	cmds := commands(*start)
	if len(cmds) != 1 || !strings.HasPrefix(cmds[0].text, "sidecar dev ") || strings.ContainsAny(cmds[0].text, "\\'\"$&|;<>") {
		t.Fatalf("%s: want one plain `sidecar dev …` command, got %q", start.name(), strings.Join(start.text, "\n"))
	}
	args := strings.Fields(cmds[0].text)[2:]

	path := filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH")
	if len(needs.python) > 0 {
		if dir := pythonWith(t, needs.python); dir != "" {
			path = dir + string(os.PathListSeparator) + path
		}
	}
	var modules string
	if needs.npm != "" {
		modules = deps.NPM(t, needs.npm)
	}

	for try := 1; ; try++ {
		e := &example{path: path, within: 3 * time.Minute, ports: map[string]string{
			"8000": strconv.Itoa(testports.Free(t)),
			"8080": strconv.Itoa(testports.Free(t)),
			"8081": strconv.Itoa(testports.Free(t)),
		}}
		dir := agentCopy(t, agent, e.ports["8000"], modules)
		for _, b := range setup {
			runBlock(t, e, dir, b)
		}
		if t.Failed() {
			t.FailNow() // the agent was not built
		}
		cmd := exec.Command(binary, append([]string{"dev",
			"--listen", "127.0.0.1:" + e.ports["8080"], "--dev-listen", "127.0.0.1:" + e.ports["8081"]}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(withoutEnv(os.Environ(), "PORT"), "PATH="+path)
		// Generous, as within: `go run` compiles the agent first.
		out, ok := runSidecar(t, agent+"'s sidecar", cmd, e.ports["8080"], 3*time.Minute, try < 5)
		if !ok {
			continue
		}
		e.out = out
		for _, c := range cmds {
			e.printed(t, start.page, c)
		}
		for _, b := range after {
			runBlock(t, e, dir, b)
		}
		return
	}
}

// runBlock runs an sh block's commands in dir against e, as a subtest.
func runBlock(t *testing.T, e *example, dir string, b block) {
	t.Run(b.name(), func(t *testing.T) {
		if b.skip != "" {
			t.Skip(b.skip)
		}
		for _, c := range commands(b) {
			e.check(t, dir, b.page, c)
		}
	})
}

// agentCopy copies the agent's directory into a new one, its
// sidecar.yaml's upstream moved from port 8000 to agentPort and, when
// modules is set, node_modules a link to it.
func agentCopy(t *testing.T, agent, agentPort, modules string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", agent))); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "sidecar.yaml")
	src, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("127.0.0.1:8000")) {
		t.Fatalf("%s/sidecar.yaml: no upstream on 127.0.0.1:8000 to move to a free port", agent)
	}
	if err := os.WriteFile(conf, bytes.ReplaceAll(src, []byte("127.0.0.1:8000"), []byte("127.0.0.1:"+agentPort)), 0o600); err != nil {
		t.Fatal(err)
	}
	if modules != "" {
		if err := os.RemoveAll(filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pythonWith returns "" when the python3 on PATH imports modules, else a
// directory holding a python3 that does (Debian's, where `make deps`
// installs them) to put first on PATH. Neither does: the test fails
// naming `make deps`, or under -short is skipped.
func pythonWith(t *testing.T, modules []string) string {
	t.Helper()
	script := "import " + strings.Join(modules, ", ")
	if exec.Command("python3", "-c", script).Run() == nil {
		return ""
	}
	if exec.Command(debianPython, "-c", script).Run() == nil {
		dir := t.TempDir()
		if err := os.Symlink(debianPython, filepath.Join(dir, "python3")); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	if testing.Short() {
		t.Skipf("python3 cannot %s (make deps installs them)", script)
	}
	t.Fatalf("python3 cannot %s: run make deps", script)
	return ""
}

// withoutEnv is env without the variable name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return out
}

// TestAgentBlocks: what a page shows of its own agents is theirs: every
// code block below an agent mark but the sh ones is a whole file of one of
// the agents' directories (the yaml one the sidecar.yaml of each), the
// method map the sh blocks run with is each one's sidecar.yaml, and every
// directory of examples/quickstart is some page's agent.
func TestAgentBlocks(t *testing.T) {
	shown := map[string]bool{}
	for _, page := range pages(t) {
		for _, b := range blocks(t, page) {
			text := strings.Join(b.text, "\n") + "\n"
			found := false
			for _, agent := range b.agents {
				shown[agent] = true
				files := agentFiles(t, filepath.Join("..", agent))
				switch b.lang {
				case "sh":
					if conf := strings.Join(b.config, "\n") + "\n"; b.config == nil || conf != files["sidecar.yaml"] {
						t.Errorf("%s: the method map above it is not %s/sidecar.yaml, which its commands run with", b.name(), agent)
					}
				case "yaml":
					if text != files["sidecar.yaml"] {
						t.Errorf("%s: not %s/sidecar.yaml as it is", b.name(), agent)
					}
				default:
					for _, f := range files {
						found = found || f == text
					}
				}
			}
			if b.agents != nil && b.lang != "sh" && b.lang != "yaml" && !found {
				t.Errorf("%s: the %s block is no whole file of %s", b.name(), b.lang, strings.Join(b.agents, " or "))
			}
		}
	}
	quickstarts, err := os.ReadDir("../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range quickstarts {
		if agent := "examples/quickstart/" + d.Name(); d.IsDir() && !shown[agent] {
			t.Errorf("%s: no page shows it (<!-- doctest: agent: %s -->)", agent, agent)
		}
	}
}

// agentFiles are the files of an agent's directory by their path in it,
// without what a build leaves there.
func agentFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			files[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return files
}

package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/testports"
)

// The ports the pages show, each given a port the system picks when the
// examples run. AgentCore's door is on 8080 in its pages, as the runtime
// wants it; the examples' sidecar serves the platform there too, so a
// call of 8080's /invocations or /ping goes to its AgentCore listener.
var docPorts = []string{"8000", "8080", "8081", "8088", "8090", "8091", "9000", "9090", "agentcore"}

// example is the sidecar the pages' commands run against: `sidecar dev`
// in front of examples/python/agent.py, with the A2A, AgentCore,
// Foundry, MCP and OpenAI doors on too, and the admin listener.
type example struct {
	ports map[string]string // doc port → the port it runs on
	path  string            // PATH for the commands, the sidecar first
	src   []byte            // examples/python/sidecar.yaml
	out   *syncBuffer       // what the sidecar and the agent wrote
	// within bounds each command, 30s when zero: a command that builds
	// an agent (tsc on a busy machine) is given longer.
	within time.Duration
}

// pickPorts picks a free port per doc port, all different (testports):
// the ports the pages show must be bound by the sidecar and the agent
// themselves, after this returns. startExample retries ports found taken.
func pickPorts(t *testing.T) map[string]string {
	t.Helper()
	ports := map[string]string{}
	for _, p := range docPorts {
		ports[p] = strconv.Itoa(testports.Free(t)) // never one handed out before
	}
	return ports
}

// startExample starts the examples' sidecar and waits until the agent is
// ready; the test's cleanup stops it by its pid (SIGTERM: it drains, then
// stops the agent it started). Ports found taken are retried on others.
func startExample(t *testing.T) *example {
	t.Helper()
	for try := 1; ; try++ {
		if e := tryExample(t, try < 5); e != nil {
			return e
		}
	}
}

// tryExample is startExample on one pick of ports: nil when one was taken
// and retry is set.
func tryExample(t *testing.T, retry bool) *example {
	t.Helper()
	e := &example{ports: pickPorts(t)}
	src, err := os.ReadFile("../examples/python/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e.src = src
	e.path = filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH")

	cfg := strings.Replace(string(src), "http://127.0.0.1:8000", "http://127.0.0.1:"+e.ports["8000"], 1)
	cfg += fmt.Sprintf(`admin: {listen: "127.0.0.1:%s"}
protocols:
  agentcore: {listen: "127.0.0.1:%s", method: stream_query}
  foundry: {listen: "127.0.0.1:%s", method: query}
  a2a: {listen: "127.0.0.1:%s", method: stream_query, card: {name: Price agent, description: Prices things}}
  mcp: {listen: "127.0.0.1:%s"}
  openai: {listen: "127.0.0.1:%s", method: stream_query, model: price-agent}
`, e.ports["9090"], e.ports["agentcore"], e.ports["8088"], e.ports["9000"], e.ports["8090"], e.ports["8091"])
	cfgPath := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "dev", "--config", cfgPath,
		"--listen", "127.0.0.1:"+e.ports["8080"], "--dev-listen", "127.0.0.1:"+e.ports["8081"],
		"--", "python3", "agent.py")
	cmd.Dir = "../examples/python"
	out, ok := runSidecar(t, "the examples' sidecar", cmd, e.ports["8080"], 30*time.Second, retry)
	if !ok {
		return nil
	}
	e.out = out
	return e
}

// runSidecar starts cmd, a sidecar whose platform listener is on port,
// and waits until the agent behind it is ready (the sidecar's /healthz
// answers 200); the test's cleanup stops it by its pid (SIGTERM: it
// drains, then stops the agent it started). A sidecar that exits, or an
// agent not ready within the bound, fails the test, but for a port found
// taken when retry is set: then it reports false, for a try on others.
func runSidecar(t *testing.T, name string, cmd *exec.Cmd, port string, within time.Duration, retry bool) (*syncBuffer, bool) {
	t.Helper()
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("%s did not exit 20s after SIGTERM", name)
		}
		if t.Failed() {
			t.Logf("%s:\n%s", name, out.String())
		}
	})
	deadline := time.Now().Add(within)
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for {
		select {
		case err := <-exited:
			exited <- err
			if retry && testports.InUse(out.String()) {
				return nil, false
			}
			t.Fatalf("%s exited: %v\n%s", name, err, out.String())
		default:
		}
		resp, err := client.Get("http://127.0.0.1:" + port + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return out, true
			}
		}
		if retry && testports.InUse(out.String()) { // the agent's, which it restarts
			cmd.Process.Kill()
			return nil, false
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %v: %v\n%s", name, within, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer the process's writers share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var docAddr = regexp.MustCompile(`\b(localhost|127\.0\.0\.1):(8000|8080|8081|8088|8090|8091|9000|9090)\b(/[^\s'"]*)?`)

// toRun is a command as the examples' sidecar runs it: the pages' ports
// made the ones it listens on.
func (e *example) toRun(cmd string) string {
	return docAddr.ReplaceAllStringFunc(cmd, func(s string) string {
		m := docAddr.FindStringSubmatch(s)
		port := e.ports[m[2]]
		if m[2] == "8080" && e.ports["agentcore"] != "" && (strings.HasPrefix(m[3], "/invocations") || strings.HasPrefix(m[3], "/ping")) {
			port = e.ports["agentcore"]
		}
		if port == "" {
			return s // a port this sidecar does not serve: left as shown, so the call fails
		}
		return m[1] + ":" + port + m[3]
	})
}

// asShown is output as the pages show it: the ports made the pages' again.
func (e *example) asShown(out string) string {
	for doc, port := range e.ports {
		if doc == "agentcore" {
			doc = "8080"
		}
		out = regexp.MustCompile(`\b(localhost|127\.0\.0\.1):`+port+`\b`).ReplaceAllString(out, "${1}:"+doc)
	}
	return out
}

// command is one command of an sh block and the output the page shows.
type command struct {
	line int // in the page
	text string
	want []string // nil: no output shown, only exit 0 is checked
}

var arrowNote = regexp.MustCompile(`\s{2,}←.*$`)

// commands splits an sh block into its commands: a command runs on while
// a line ends in a backslash or a quote is open; the comment lines right
// after it ("# …", "#" for an empty line) are its expected output, a
// "  ← note" at a line's end left out.
func commands(b block) []command {
	var out []command
	var cur *command
	for i := 0; i < len(b.text); i++ {
		l := b.text[i]
		switch {
		case strings.TrimSpace(l) == "":
			cur = nil
		case strings.HasPrefix(l, "#"):
			if cur == nil {
				continue // a comment of its own
			}
			w := strings.TrimPrefix(strings.TrimPrefix(l, "#"), " ")
			cur.want = append(cur.want, arrowNote.ReplaceAllString(w, ""))
		default:
			c := command{line: b.line + 1 + i, text: l}
			for (strings.HasSuffix(c.text, "\\") || openQuote(c.text)) && i+1 < len(b.text) {
				i++
				c.text += "\n" + b.text[i]
			}
			out = append(out, c)
			cur = &out[len(out)-1]
		}
	}
	return out
}

// openQuote reports whether s leaves a shell quote open. A # at a word's
// start outside quotes begins a comment, to the line's end.
func openQuote(s string) bool {
	var q rune
	prev := ' '
	for _, r := range s {
		switch {
		case q == '#':
			if r == '\n' {
				q = 0
			}
		case q == 0 && (r == '\'' || r == '"'):
			q = r
		case q == 0 && r == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			q = '#'
		case q != 0 && r == q:
			q = 0
		}
		prev = r
	}
	return q == '\'' || q == '"'
}

// TestCommands runs every sh block of the pages, command by command,
// against the examples' sidecar, in a directory holding sidecar.yaml (the
// last method map the page shows above the block, else examples/python's),
// bin/sidecar and examples/, with sidecar on PATH and PORT
// the sidecar's. A command whose output the page shows must print it
// (stdout and stderr, compared as matches does); one with none shown
// must exit 0. Blocks marked `<!-- doctest: skip: REASON -->` are skipped.
// The blocks below a `<!-- doctest: agent: DIR… -->` line run against
// each of those agents instead, as runAgent says.
func TestCommands(t *testing.T) {
	var todo []block
	var agents []agentBlocks
	for _, page := range pages(t) {
		for _, b := range blocks(t, page) {
			switch {
			case b.lang != "sh":
			case b.agents == nil:
				todo = append(todo, b)
			case len(agents) == 0 || agents[len(agents)-1].page != page || !slices.Equal(agents[len(agents)-1].dirs, b.agents):
				agents = append(agents, agentBlocks{page: page, dirs: b.agents, blocks: []block{b}})
			default:
				agents[len(agents)-1].blocks = append(agents[len(agents)-1].blocks, b)
			}
		}
	}
	if len(todo) == 0 {
		t.Fatal("no sh blocks in the pages")
	}
	for _, tool := range []string{"curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if testing.Short() {
				t.Skipf("the examples need %s (make deps installs it)", tool)
			}
			t.Fatalf("the examples need %s: run make deps", tool)
		}
	}
	e := startExample(t)
	for _, b := range todo {
		t.Run(b.name(), func(t *testing.T) {
			if b.skip != "" {
				t.Skip(b.skip)
			}
			dir := e.workdir(t, b.config)
			for _, c := range commands(b) {
				switch b.mark {
				case "":
					e.check(t, dir, b.page, c)
				case startedMark:
					e.printed(t, b.page, c)
				default:
					t.Fatalf("%s: unknown mark <!-- doctest: %s -->", b.name(), b.mark)
				}
			}
		})
	}
	for _, a := range agents {
		for _, dir := range a.dirs {
			t.Run(filepath.Base(a.page)+":"+dir, func(t *testing.T) { runAgent(t, a.page, dir, a.blocks) })
		}
	}
}

// workdir is a directory for a block's commands: sidecar.yaml (the last
// method map shown above the block on its page, else examples/python's),
// bin/sidecar and examples/.
func (e *example) workdir(t *testing.T, config []string) string {
	t.Helper()
	dir := t.TempDir()
	src := e.src
	if config != nil {
		src = []byte(strings.Join(config, "\n") + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "sidecar.yaml"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary, filepath.Join(dir, "bin", "sidecar")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (e *example) check(t *testing.T, dir, page string, c command) {
	t.Helper()
	within := e.within
	if within == 0 {
		within = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", e.toRun(c.text))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+e.path, "PORT="+e.ports["8080"])
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s:%d: %v", page, c.line, err)
	}
	got := lines(e.asShown(out.String()))
	if c.want == nil {
		if err != nil {
			t.Errorf("%s:%d: %s\n%v:\n%s", page, c.line, c.text, err, strings.Join(got, "\n"))
		}
		return
	}
	if !matches(c.want, got) {
		t.Errorf("%s:%d: %s\n%sthe page shows:\n  %s\nit prints (%v):\n  %s", page, c.line, c.text, firstDiff(c.want, got),
			strings.Join(c.want, "\n  "), exitStatus(err), strings.Join(got, "\n  "))
	}
}

// startedMark marks a block whose command is the examples' sidecar itself
// (sidecar dev in front of examples/python): each line it shows must be a
// line the running one printed.
const startedMark = "the examples' sidecar prints this"

func (e *example) printed(t *testing.T, page string, c command) {
	t.Helper()
	got := lines(e.asShown(e.out.String()))
	for _, w := range c.want {
		found := false
		for _, g := range got {
			found = found || lineMatches(w, g)
		}
		if !found {
			t.Errorf("%s:%d: %s\nthe page shows\n  %s\nwhich the examples' sidecar did not print:\n  %s", page, c.line, c.text, w, strings.Join(got, "\n  "))
		}
	}
}

// firstDiff names the first line where got leaves want, up to want's
// first "…" line.
func firstDiff(want, got []string) string {
	for i, w := range want {
		switch {
		case strings.TrimSpace(w) == "…":
			return ""
		case i >= len(got):
			return fmt.Sprintf("output line %d: missing, the page shows %q\n", i+1, w)
		case !lineMatches(w, got[i]):
			return fmt.Sprintf("output line %d: %q, the page shows %q\n", i+1, got[i], w)
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("output line %d: %q, the page shows no more\n", len(want)+1, got[len(want)])
	}
	return ""
}

func exitStatus(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

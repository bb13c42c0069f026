package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// runInitIn runs `sidecar init args…` non-interactively, its paths
// relative to dir, and returns what it printed and its exit code.
func runInitIn(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	for i, a := range args {
		if a == "--config" {
			args[i+1] = filepath.Join(dir, args[i+1])
		}
	}
	if !slices.Contains(args, "--config") {
		args = append(args, "--config", filepath.Join(dir, "sidecar.yaml"))
	}
	var out, errOut bytes.Buffer
	err := runInit(args, failingReader{t}, false, &out, &errOut)
	return out.String(), errOut.String() + exitMessage(err), exitCodeOf(err)
}

// failingReader fails the test when read: init reads stdin only when it
// is a terminal.
type failingReader struct{ t *testing.T }

func (r failingReader) Read([]byte) (int, error) {
	r.t.Errorf("sidecar init read stdin, which is no terminal")
	return 0, io.EOF
}

func exitMessage(err error) string {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.msg
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func exitCodeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	}
	return 1
}

// layout writes the files of an agent's folder, each with a line of
// content.
func layout(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// instruction is one line of a Dockerfile: its instruction, upper case,
// and the rest of the line, continuation lines joined.
type instruction struct{ op, args string }

// parseDockerfile reads a Dockerfile's instructions: comments and blank
// lines left out, lines ending in a backslash joined with the next.
func parseDockerfile(t *testing.T, text string) []instruction {
	t.Helper()
	var out []instruction
	var cur string
	for _, l := range strings.Split(text, "\n") {
		if cur == "" && (strings.HasPrefix(strings.TrimSpace(l), "#") || strings.TrimSpace(l) == "") {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cur += s
			continue
		}
		cur += l
		op, args, _ := strings.Cut(strings.TrimSpace(cur), " ")
		if op != strings.ToUpper(op) {
			t.Fatalf("Dockerfile line %q: instruction %q is not upper case", cur, op)
		}
		out = append(out, instruction{op, strings.TrimSpace(args)})
		cur = ""
	}
	if cur != "" {
		t.Fatalf("Dockerfile ends in a continuation: %q", cur)
	}
	return out
}

// TestInitLanguages: for an agent in each language, sidecar init writes a
// method map the config parser takes, with the routes and doors asked
// for; a Dockerfile whose FROM, build steps, COPY sources (each one a
// file of the language's layout), ENTRYPOINT and CMD are the language's;
// and prints the next steps. A real sidecar started on the map in front
// of a real agent (testdata/agents/agent.py) answers a unary and a
// streaming call through the contract and through a mounted door, and the
// `sidecar call` lines init printed work against it.
func TestInitLanguages(t *testing.T) {
	tests := []struct {
		lang   string
		agent  string
		files  []string // the agent's folder: every COPY source must be one
		door   string
		from   []string
		runs   []string // RUN lines the Dockerfile must have, in order
		copies []string // the sources of its COPY lines (not --from)
		cmd    string
	}{{
		lang:   "node",
		agent:  "node dist/agent.js",
		files:  []string{"package.json", "package-lock.json", "tsconfig.json", "src/agent.ts"},
		door:   "openai",
		from:   []string{"node:22-slim AS build", "node:22-slim"},
		runs:   []string{"npm ci --no-audit --no-fund", "npm run build", "npm prune --omit=dev --no-audit --no-fund"},
		copies: []string{"package.json package-lock.json", "tsconfig.json", "src", "package.json", "sidecar.yaml"},
		cmd:    `["node", "dist/agent.js"]`,
	}, {
		lang:   "python",
		agent:  "python3 agent.py",
		files:  []string{"agent.py", "requirements.txt"},
		door:   "mcp",
		from:   []string{"python:3.12-slim"},
		runs:   []string{"pip install --no-cache-dir -r requirements.txt"},
		copies: []string{"requirements.txt", "."},
		cmd:    `["python3", "agent.py"]`,
	}, {
		lang:   "go",
		agent:  "go run ./cmd/agent --verbose",
		files:  []string{"go.mod", "go.sum", "cmd/agent/main.go"},
		door:   "a2a",
		from:   []string{"golang:1 AS build", "gcr.io/distroless/static-debian12:nonroot"},
		runs:   []string{"go mod download", "go build -trimpath -o /out/agent ./cmd/agent"},
		copies: []string{"go.mod go.sum*", ".", "sidecar.yaml"},
		cmd:    `["./agent", "--verbose"]`,
	}, {
		lang:   "generic",
		agent:  "java -jar agent.jar",
		files:  []string{"agent.jar"},
		door:   "agentcore",
		from:   []string{"debian:12-slim"},
		copies: []string{"."},
		cmd:    `["java", "-jar", "agent.jar"]`,
	}}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			dir := t.TempDir()
			layout(t, dir, tt.files...)
			url := fmt.Sprintf("http://127.0.0.1:%d", agentPort(t))
			stdout, stderr, code := runInitIn(t, dir, "--agent", tt.agent, "--url", url,
				"--query", "/echo", "--stream", "/sse", "--doors", tt.door, "--docker")
			if code != 0 {
				t.Fatalf("sidecar init = exit %d, want 0:\n%s", code, stderr)
			}
			src, err := os.ReadFile(filepath.Join(dir, "sidecar.yaml"))
			if err != nil {
				t.Fatal(err)
			}

			// The method map.
			cfg, err := config.Parse("sidecar.yaml", src, doors.Kinds(doors.All)...)
			if err != nil {
				t.Fatalf("config.Parse(the written map) = %v\n%s", err, src)
			}
			if q := cfg.Lookup("query", false); q == nil || q.Name != "query" || q.Verb != "POST" || q.Path != "/echo" {
				t.Errorf("method query = %+v, want a unary POST /echo", q)
			}
			if s := cfg.Lookup("stream_query", true); s == nil || s.Name != "stream_query" || s.Verb != "POST" || s.Path != "/sse" {
				t.Errorf("method stream_query = %+v, want a streaming POST /sse", s)
			}
			if cfg.Upstream.URL != url {
				t.Errorf("upstream.url = %q, want %q", cfg.Upstream.URL, url)
			}
			door := cfg.Protocols.Door(tt.door)
			if door == nil || door.Mount == "" {
				t.Fatalf("protocols.%s = %+v, want it mounted on the platform's port", tt.door, door)
			}
			if !strings.Contains(string(src), "method map of "+languageOf(strings.Fields(tt.agent)).Article+" agent") {
				t.Errorf("the map's first lines do not name the %s agent:\n%s", tt.lang, src)
			}

			// The Dockerfile.
			df, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
			if err != nil {
				t.Fatal(err)
			}
			checkDockerfile(t, dir, string(df), tt.from, tt.runs, tt.copies, tt.cmd)

			// What it printed.
			for _, want := range []string{"sidecar dev --config " + filepath.Join(dir, "sidecar.yaml") + " -- " + tt.agent, "sidecar call query message=hello",
				doorNamed(tt.door).URL("http://127.0.0.1:8080", door)} {
				if !strings.Contains(stdout, want) {
					t.Errorf("sidecar init printed no %q:\n%s", want, stdout)
				}
			}

			// Served.
			p := startProc(t, string(src), nil, "--", "python3", "agent.py")
			t.Cleanup(testClient.CloseIdleConnections)
			r := post(t, p.base+"/api/reasoning_engine", `{"class_method": "query", "input": {"message": "hi"}}`)
			if r.status != http.StatusOK || !strings.HasPrefix(r.body, `{"output":{"method":"POST","path":"/echo","body":{"message":"hi"}`) {
				t.Errorf("contract query = %d %s, want 200 with the agent's echo as output", r.status, r.body)
			}
			r = post(t, p.base+"/api/stream_reasoning_engine", `{"class_method": "stream_query", "input": {"message": "hi"}}`)
			if r.status != http.StatusOK || !strings.Contains(r.body, "tok0") || !strings.Contains(r.body, "tok2") {
				t.Errorf("contract stream_query = %d %s, want 200 with the agent's three records", r.status, r.body)
			}
			doorURL := doorNamed(tt.door).URL(p.base, door)
			for _, stream := range []bool{false, true} {
				resp, err := testClient.Do(doorNamed(tt.door).Probe.Request(doorURL, "stream_query", stream))
				if err != nil {
					t.Fatal(err)
				}
				b := readAll(t, resp)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "tok") {
					t.Errorf("%s at %s (stream %v) = %d %s, want 200 with the agent's records", tt.door, doorURL, stream, resp.StatusCode, b)
				}
			}
			for _, line := range strings.Split(stdout, "\n") {
				if !strings.HasPrefix(strings.TrimSpace(line), "sidecar call ") {
					continue
				}
				words, err := splitCommand(strings.TrimSpace(line))
				if err != nil {
					t.Fatal(err)
				}
				var out, errOut bytes.Buffer
				err = run(context.Background(), append([]string{"call", "--url", p.base}, words[2:]...), func(string) string { return "" }, &out, &errOut)
				if err != nil || !strings.Contains(out.String(), "hello") && !strings.Contains(out.String(), "tok0") {
					t.Errorf("%s = %v %s%s, want the agent's answer", strings.TrimSpace(line), err, out.String(), errOut.String())
				}
			}
			http.DefaultClient.CloseIdleConnections() // sidecar call's
		})
	}
}

// checkDockerfile checks a written Dockerfile's instructions: its FROM
// lines, its RUN lines among them in order, the sources of its COPY lines
// (each a file or folder of dir, the build context, where it has no
// --from), the sidecar copied from its image, the ENTRYPOINT and the CMD.
func checkDockerfile(t *testing.T, dir, text string, from, runs, copies []string, cmd string) {
	t.Helper()
	var gotFrom, gotRuns, gotCopies []string
	var entrypoint, gotCmd string
	sidecarCopied := false
	for _, in := range parseDockerfile(t, text) {
		switch in.op {
		case "FROM":
			gotFrom = append(gotFrom, in.args)
		case "RUN":
			gotRuns = append(gotRuns, in.args)
		case "COPY":
			if in.args == "--from="+sidecarImage+" /sidecar /usr/local/bin/sidecar" {
				sidecarCopied = true
			}
			if strings.HasPrefix(in.args, "--") {
				continue
			}
			fields := strings.Fields(in.args)
			srcs := fields[:len(fields)-1]
			gotCopies = append(gotCopies, strings.Join(srcs, " "))
			for _, s := range srcs {
				if m, _ := filepath.Glob(filepath.Join(dir, s)); len(m) == 0 {
					t.Errorf("Dockerfile: COPY %s: no %s in the agent's folder", in.args, s)
				}
			}
		case "ENTRYPOINT":
			entrypoint = in.args
		case "CMD":
			gotCmd = in.args
		}
	}
	if !slices.Equal(gotFrom, from) {
		t.Errorf("Dockerfile FROM lines = %q, want %q", gotFrom, from)
	}
	i := 0
	for _, r := range gotRuns {
		if i < len(runs) && r == runs[i] {
			i++
		}
	}
	if i < len(runs) {
		t.Errorf("Dockerfile RUN lines = %q, want %q among them in order", gotRuns, runs)
	}
	if !slices.Equal(gotCopies, copies) {
		t.Errorf("Dockerfile COPY sources = %q, want %q", gotCopies, copies)
	}
	if !sidecarCopied {
		t.Errorf("Dockerfile does not copy the sidecar from %s:\n%s", sidecarImage, text)
	}
	if entrypoint != `["sidecar", "--"]` {
		t.Errorf("Dockerfile ENTRYPOINT %s, want [\"sidecar\", \"--\"]", entrypoint)
	}
	if gotCmd != cmd {
		t.Errorf("Dockerfile CMD %s, want %s", gotCmd, cmd)
	}
}

// TestInitNeverOverwrites: a file init would write that exists already is
// an error naming it, exit 1, and nothing is written: not the other file
// either, and the one there is left as it was.
func TestInitNeverOverwrites(t *testing.T) {
	tests := []struct {
		name     string
		existing string
		args     []string
		absent   string // the file init must not have written
	}{
		{"the map", "sidecar.yaml", []string{"--agent", "python3 agent.py", "--docker"}, "Dockerfile"},
		{"the Dockerfile", "Dockerfile", []string{"--agent", "python3 agent.py", "--docker"}, "sidecar.yaml"},
		{"the map, no Dockerfile asked", "sidecar.yaml", []string{"--agent", "python3 agent.py"}, "Dockerfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			existing := filepath.Join(dir, tt.existing)
			if err := os.WriteFile(existing, []byte("mine\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code := runInitIn(t, dir, tt.args...)
			if code != 1 || !strings.Contains(stderr, existing+" exists") || !strings.Contains(stderr, "nothing was written") {
				t.Errorf("sidecar init with %s there = exit %d %q, want 1 naming it", tt.existing, code, stderr)
			}
			if stdout != "" {
				t.Errorf("sidecar init printed %q, want nothing on stdout", stdout)
			}
			if b, _ := os.ReadFile(existing); string(b) != "mine\n" {
				t.Errorf("%s = %q after init, want it untouched", tt.existing, b)
			}
			if _, err := os.Stat(filepath.Join(dir, tt.absent)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s written (%v), want nothing written", tt.absent, err)
			}
		})
	}
}

// TestInitBadFlags: flags init cannot make a valid map or image from are
// refused, exit 2, naming the flag and what to give, and nothing is
// written.
func TestInitBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--agent", "node 'dist/agent.js"}, `--agent "node 'dist/agent.js": an unclosed ' quote`},
		{[]string{"--agent", "node\nx"}, "a control character"},
		{[]string{"--url", "ftp://127.0.0.1:8000"}, `--url "ftp://127.0.0.1:8000": want http://host:port`},
		{[]string{"--url", "http://127.0.0.1"}, "no port"},
		{[]string{"--url", "unix://agent.sock"}, "want unix:///absolute/path.sock"},
		{[]string{"--url", "http://127.0.0.1:8080"}, "does not validate"}, // the sidecar's own port
		{[]string{"--query", "query"}, `--query "query": want a path starting with /`},
		{[]string{"--stream", "/a b"}, "a space or control character"},
		{[]string{"--query", "", "--stream", ""}, "leave no method"},
		{[]string{"--doors", "mcp,grpc"}, `no door "grpc"`},
		{[]string{"--doors", "mcp,mcp"}, "mcp is listed twice"},
		{[]string{"--doors", "agentcore,foundry"}, "agentcore and foundry both serve /invocations"},
		{[]string{"--docker"}, "--docker needs --agent"},
		{[]string{"--agent", "python3 agent.py", "--docker", "--config", "my map.yaml"}, "the file's name must be plain"},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"node", "dist/agent.js"}, `unexpected argument "node" (quote the agent's command`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			_, stderr, code := runInitIn(t, dir, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("sidecar init %q = exit %d %q, want 2 with %q", tt.args, code, stderr, tt.want)
			}
			if names, _ := os.ReadDir(dir); len(names) != 0 {
				t.Errorf("sidecar init %q wrote %v, want nothing", tt.args, names)
			}
		})
	}
}

// TestInitInteractive: on a terminal, a missing --agent is asked for; the
// answer picks the language. With --agent given nothing is asked, and off
// a terminal a missing --agent leaves a map for any agent, never
// blocking.
func TestInitInteractive(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	err := runInit([]string{"--config", filepath.Join(dir, "sidecar.yaml")}, strings.NewReader("uvicorn app:app --port 8000\n"), true, &out, &errOut)
	if err != nil {
		t.Fatalf("sidecar init, answering the question = %v", err)
	}
	if !strings.Contains(errOut.String(), "The agent's command line") {
		t.Errorf("sidecar init asked %q, want the agent's command line", errOut.String())
	}
	src, _ := os.ReadFile(filepath.Join(dir, "sidecar.yaml"))
	if !strings.Contains(string(src), "method map of a Python agent, `uvicorn app:app --port 8000`") {
		t.Errorf("the map after the answer:\n%s\nwant it for the Python agent answered", src)
	}

	dir = t.TempDir()
	err = runInit([]string{"--config", filepath.Join(dir, "sidecar.yaml"), "--agent", "node dist/agent.js"}, failingReader{t}, true, &out, &errOut)
	if err != nil {
		t.Fatalf("sidecar init --agent on a terminal = %v", err)
	}

	dir = t.TempDir()
	out.Reset()
	stdout, stderr, code := runInitIn(t, dir)
	if code != 0 {
		t.Fatalf("sidecar init without --agent off a terminal = exit %d %s, want 0", code, stderr)
	}
	src, _ = os.ReadFile(filepath.Join(dir, "sidecar.yaml"))
	if _, err := config.Parse("sidecar.yaml", src, doors.Kinds(doors.All)...); err != nil {
		t.Errorf("the map for any agent does not parse: %v\n%s", err, src)
	}
	if !strings.Contains(stdout, "-- YOUR AGENT'S COMMAND") {
		t.Errorf("sidecar init without --agent printed\n%s\nwant the dev command with a place for the agent's", stdout)
	}
}

// TestInitHelp: `sidecar init --help` prints the help, which lists init
// and its flags, and names init's page.
func TestInitHelp(t *testing.T) {
	stdout, stderr, code := runCLI([]string{"init", "--help"}, nil)
	if code != 0 {
		t.Fatalf("sidecar init --help = exit %d %s", code, stderr)
	}
	for _, want := range []string{"sidecar init --agent CMD [flags]", "--doors LIST", "sidecar init: docs/cli.md"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("sidecar init --help prints no %q:\n%s", want, stdout)
		}
	}
}

func TestLanguageOf(t *testing.T) {
	tests := []struct {
		agent string
		want  language
	}{
		{"node dist/agent.js", langNode},
		{"npx tsx src/agent.ts", langNode},
		{"tsx src/agent.ts", langNode},
		{"bun run src/agent.ts", langNode},
		{"/usr/bin/node agent.js", langNode},
		{"python agent.py", langPython},
		{"python3 -m agent", langPython},
		{"python3.12 agent.py", langPython},
		{"uvicorn app:app", langPython},
		{"fastapi run app.py", langPython},
		{"go run .", langGo},
		{"./agent", langGo},
		{"bin/agent --port 8000", langGo},
		{"./agent.py", langPython},
		{"./server.js", langNode},
		{"./run.sh", langGeneric},
		{"go build", langGeneric},
		{"java -jar agent.jar", langGeneric},
		{"", langGeneric},
	}
	for _, tt := range tests {
		argv, _ := splitCommand(tt.agent)
		if got := languageOf(argv); got != tt.want {
			t.Errorf("languageOf(%q) = %s, want %s", tt.agent, got.Name, tt.want.Name)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"node dist/agent.js", []string{"node", "dist/agent.js"}},
		{"  python3   agent.py\t--x ", []string{"python3", "agent.py", "--x"}},
		{`python3 -c 'print("a b")'`, []string{"python3", "-c", `print("a b")`}},
		{`sh -c "echo \"hi\" \$HOME"`, []string{"sh", "-c", `echo "hi" $HOME`}},
		{`a\ b ''`, []string{"a b", ""}},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := splitCommand(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("splitCommand(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	// shellJoin's line splits back into its words.
	for _, tt := range tests {
		back, err := splitCommand(shellJoin(tt.want))
		if err != nil || !slices.Equal(back, tt.want) {
			t.Errorf("splitCommand(shellJoin(%q)) = %q, %v (the line %s)", tt.want, back, err, shellJoin(tt.want))
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`, `a\`} {
		if got, err := splitCommand(bad); err == nil {
			t.Errorf("splitCommand(%q) = %q, want an error", bad, got)
		}
	}
}

// TestImageCommands: what the image runs for a command of the agent's
// that runs its sources (Node) or builds it (Go).
func TestImageCommands(t *testing.T) {
	node := []struct{ agent, want string }{
		{"node dist/agent.js", "node dist/agent.js"},
		{"node --enable-source-maps dist/agent.js", "node --enable-source-maps dist/agent.js"},
		{"npx tsx src/agent.ts --x", "node dist/agent.js --x"},
		{"tsx watch src/server.mts", "node dist/server.js"},
		{"bun ./dist/main.js", "node dist/main.js"},
		{"npm start", "npm start"},
	}
	for _, tt := range node {
		argv, _ := splitCommand(tt.agent)
		if got := strings.Join(nodeImageCommand(argv), " "); got != tt.want {
			t.Errorf("nodeImageCommand(%q) = %q, want %q", tt.agent, got, tt.want)
		}
	}
	goCmds := []struct{ agent, pkg, bin, args string }{
		{"go run .", ".", "agent", ""},
		{"go run -race ./cmd/agent -v", "./cmd/agent", "agent", "-v"},
		{"go run main.go tools.go --port 8000", "main.go tools.go", "agent", "--port 8000"},
		{"go run", ".", "agent", ""},
		{"./bin/pricer --fast", ".", "pricer", "--fast"},
	}
	for _, tt := range goCmds {
		argv, _ := splitCommand(tt.agent)
		pkg, bin, args := goBuild(argv)
		if strings.Join(pkg, " ") != tt.pkg || bin != tt.bin || strings.Join(args, " ") != tt.args {
			t.Errorf("goBuild(%q) = %q, %q, %q, want %q, %q, %q", tt.agent, pkg, bin, args, tt.pkg, tt.bin, tt.args)
		}
	}
}

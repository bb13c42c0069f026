package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// TestDoorExamples: every registered door has the copy-paste example
// sidecar dev's playground lists, and it holds: its curl, run as printed
// against the door served as run serves it, is answered, not refused
// (and gets the agent's answer when it sends a message, "hi"); its
// client snippet is valid in its language, and a Python one that needs
// no SDK, or a JavaScript one whose SDK the tests install, runs and gets
// the answer too (an SDK that calls a cloud deployment cannot run here;
// a door's own test runs a snippet that can); each way the door is
// served, on its own listener and mounted (hostileWays).
func TestDoorExamples(t *testing.T) {
	for _, d := range doors.All {
		if d.Probe.Conversations {
			continue // no calls to show: the live panel is the playground's
		}
		t.Run(d.Name, func(t *testing.T) {
			if d.Example == nil {
				t.Fatalf("door %s is registered without an Example: the playground shows no way to call it", d.Name)
			}
			for _, way := range hostileWays(t, d) {
				t.Run(way.name, func(t *testing.T) { checkExample(t, d, way) })
			}
		})
	}
}

// checkExample checks door d's example for its URL served way's way.
func checkExample(t *testing.T, d doors.Door, way hostileWay) {
	agent := newHostileAgent(t)
	base := hostileServeWay(t, way, "127.0.0.1", d.Name, "query", "", agent).url
	ex := d.Example(base, probeSection(t, d.Name, "query"))
	if ex.Curl == "" || ex.Client == "" || ex.ClientLang == "" {
		t.Fatalf("Example(%q) = %+v, want a curl and a client snippet with its language", base, ex)
	}
	if !strings.Contains(ex.Curl, base) {
		t.Errorf("the curl does not call the door's URL %s:\n%s", base, ex.Curl)
	}
	// The curl, a syntax check and the client each start a process (a
	// python3, a node): three times hostileBound, for a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*hostileBound)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", ex.Curl).Output()
	if err != nil || len(out) == 0 || d.Probe.Refusal(out) {
		t.Errorf("the curl example, run: %v, printed %q, want an answer, not the door's refusal:\n%s", err, out, ex.Curl)
	}
	if strings.Contains(ex.Curl, `"hi"`) && !strings.Contains(string(out), "answered") {
		// A curl that sends the message "hi" calls the method.
		t.Errorf("the curl example printed %q, want the agent's answer:\n%s", out, ex.Curl)
	}
	checkSyntax(t, ctx, ex.ClientLang, ex.Client)
	var run *exec.Cmd
	switch {
	case ex.ClientLang == "python" && stdlibOnly(t, ctx, ex.Client):
		// It needs no SDK: it runs, against the door.
		run = exec.CommandContext(ctx, "python3", "-")
	case ex.ClientLang == "javascript" && npmSet(ex.Client) != "":
		// Its SDK is one the tests install: it runs too.
		run = exec.CommandContext(ctx, "node", "--input-type=module", "-")
		run.Env = append(os.Environ(), "NODE_PATH="+deps.NPM(t, npmSet(ex.Client)))
		run.Dir = deps.NPM(t, npmSet(ex.Client)) // ES modules resolve from the script's place, not NODE_PATH
	}
	if run != nil {
		run.Stdin = strings.NewReader(ex.Client)
		if out, err := run.CombinedOutput(); err != nil || !strings.Contains(string(out), "answered") {
			t.Errorf("the %s snippet, run: %v, printed %q, want the agent's answer:\n%s", ex.ClientLang, err, out, ex.Client)
		}
	}
}

// snippetSets are the npm package sets of testdata (make deps) a
// JavaScript snippet's SDK is in.
var snippetSets = map[string]string{"@a2a-js/sdk": "a2a"}

// npmSet is the package set every import of the JavaScript src is in,
// "" when it imports anything else.
func npmSet(src string) string {
	set := ""
	for _, line := range strings.Split(src, "\n") {
		_, from, ok := strings.Cut(line, ` from "`)
		if !strings.HasPrefix(line, "import ") || !ok {
			continue
		}
		pkg, _, _ := strings.Cut(from, `"`)
		s, known := "", false
		for prefix, name := range snippetSets {
			if pkg == prefix || strings.HasPrefix(pkg, prefix+"/") {
				s, known = name, true
			}
		}
		if !known || set != "" && s != set {
			return ""
		}
		set = s
	}
	return set
}

// checkSyntax fails the test when src is not valid lang: Python parsed
// by python3's ast, JavaScript checked by node as an ES module,
// TypeScript parsed by esbuild.
func checkSyntax(t *testing.T, ctx context.Context, lang, src string) {
	t.Helper()
	var cmd *exec.Cmd
	switch lang {
	case "python":
		cmd = exec.CommandContext(ctx, "python3", "-c", "import ast, sys; ast.parse(sys.stdin.read())")
		cmd.Stdin = strings.NewReader(src)
	case "javascript":
		file := filepath.Join(t.TempDir(), "example.mjs")
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd = exec.CommandContext(ctx, "node", "--check", file)
	case "typescript":
		// esbuild parses TypeScript (Node 20 cannot): the adk set's
		// package-lock.json pins it, with @google/adk.
		cmd = exec.CommandContext(ctx, filepath.Join(deps.NPM(t, "adk"), ".bin", "esbuild"), "--loader=ts", "--format=esm", "--log-level=error")
		cmd.Stdin = strings.NewReader(src)
	default:
		t.Errorf("client language %q: the test knows python and javascript; teach it yours", lang)
		return
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the %s snippet is not valid %s: %v %s\n%s", lang, lang, err, out, src)
	}
}

// stdlibOnly reports whether the Python src imports only modules of
// Python's standard library.
func stdlibOnly(t *testing.T, ctx context.Context, src string) bool {
	t.Helper()
	cmd := exec.CommandContext(ctx, "python3", "-c", `import ast, sys
mods = set()
for n in ast.walk(ast.parse(sys.stdin.read())):
    if isinstance(n, ast.Import):
        mods.update(a.name.split(".")[0] for a in n.names)
    elif isinstance(n, ast.ImportFrom):
        mods.add((n.module or "").split(".")[0])
print("yes" if mods <= set(sys.stdlib_module_names) else "no")`)
	cmd.Stdin = strings.NewReader(src)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reading the snippet's imports: %v", err)
	}
	return strings.TrimSpace(string(out)) == "yes"
}

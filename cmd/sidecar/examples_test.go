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
// no SDK runs and gets the answer too (an SDK that calls a cloud
// deployment cannot run here; a door's own test runs a snippet that can).
func TestDoorExamples(t *testing.T) {
	for _, d := range doors.All {
		t.Run(d.Name, func(t *testing.T) {
			if d.Example == nil {
				t.Fatalf("door %s is registered without an Example: the playground shows no way to call it", d.Name)
			}
			agent := newHostileAgent(t)
			listener, _ := hostileSidecar(t, d.Name, "query", "", agent)
			base := d.URL(listener, probeSection(t, d.Name, "query"))
			ex := d.Example(base, probeSection(t, d.Name, "query"))
			if ex.Curl == "" || ex.Client == "" || ex.ClientLang == "" {
				t.Fatalf("Example(%q) = %+v, want a curl and a client snippet with its language", base, ex)
			}
			if !strings.Contains(ex.Curl, base) {
				t.Errorf("the curl does not call the door's URL %s:\n%s", base, ex.Curl)
			}
			ctx, cancel := context.WithTimeout(context.Background(), hostileBound)
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
			if ex.ClientLang == "python" && stdlibOnly(t, ctx, ex.Client) {
				// It needs no SDK: it runs, against the door.
				cmd := exec.CommandContext(ctx, "python3", "-")
				cmd.Stdin = strings.NewReader(ex.Client)
				if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "answered") {
					t.Errorf("the python snippet, run: %v, printed %q, want the agent's answer:\n%s", err, out, ex.Client)
				}
			}
		})
	}
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

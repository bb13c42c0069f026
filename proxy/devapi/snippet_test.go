package devapi

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sidecar-dev/sidecar/config"
)

// startDev runs the sidecar binary's `sidecar dev` with the method map
// yaml (the agent already running), both listeners on loopback ports of
// its choosing, waits until its playground answers and returns the dev
// listener's URL.
func startDev(t *testing.T, yaml string) string {
	t.Helper()
	bin := buildSidecar(t)
	file := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	dev, done := startProcess(t, nil, func(line string) string {
		url, _ := strings.CutPrefix(line, "dev: the platform's REST API and the playground on ")
		if url == line {
			return ""
		}
		return url
	}, bin, "dev", "--config", file, "--listen", "127.0.0.1:0", "--dev-listen", "127.0.0.1:0")
	waitHealthy(t, dev+"/playground/methods.json", done)
	return dev
}

// platformOrigin is where the page's snippets send their calls (the
// methods.json location us-central1).
const platformOrigin = "https://us-central1-aiplatform.googleapis.com"

// TestPlaygroundNodeSnippet: the Node snippet the page shows for a call
// (Copy Node), run by node with only the platform's origin swapped for a
// real sidecar dev's dev listener, makes the call: a unary method prints
// its output as JSON, a streaming one each line the agent sent, in order.
func TestPlaygroundNodeSnippet(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed to run the page's Node snippet: apt-get install -y nodejs (make deps installs it)")
	}
	dev := startDev(t, strings.ReplaceAll(testMap, "AGENT", startAgent(t)))
	ctx := browser(t)
	run(t, ctx, "loading the playground", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#methods button[data-method="stream"]`))

	// snippet is the Node snippet the page shows for method with input.
	snippet := func(method, input string) string {
		t.Helper()
		run(t, ctx, "copying "+method+" as Node", chromedp.Click(`#methods button[data-method="`+method+`"]`),
			setInput(input), chromedp.Click(`#copy-node`))
		return evalString(t, ctx, `document.getElementById("snippet").dataset.kind + "\n" + document.getElementById("snippet").textContent`)
	}
	// runNode runs a snippet against the dev listener and returns its stdout.
	runNode := func(kindAndJS string) string {
		t.Helper()
		kind, js, _ := strings.Cut(kindAndJS, "\n")
		if kind != "node" || !strings.Contains(js, `const url = "`+platformOrigin+"/v1/projects/local/locations/us-central1/reasoningEngines/local:") ||
			!strings.Contains(js, "Authorization: `Bearer ${process.env.TOKEN}`") {
			t.Fatalf("the snippet shown (%s) does not call the platform with the token:\n%s", kind, js)
		}
		file := filepath.Join(t.TempDir(), "call.mjs")
		if err := os.WriteFile(file, []byte(strings.Replace(js, platformOrigin, dev, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", file)
		cmd.Env = append(os.Environ(), "TOKEN=not-checked-by-sidecar-dev")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node call.mjs: %v\n%s\nthe snippet:\n%s", err, stderr.String(), js)
		}
		return string(out)
	}

	// Unary: the agent's answer, {"input": …, "content_type": …}, is the output.
	out := runNode(snippet("echo", `{"message": "from node", "n": 3}`))
	var echo struct {
		Input map[string]any `json:"input"`
	}
	if err := json.Unmarshal([]byte(out), &echo); err != nil || echo.Input["message"] != "from node" || echo.Input["n"] != float64(3) {
		t.Errorf("echo's Node snippet printed %q (%v), want the output: the agent's echo of the input", out, err)
	}

	// Streaming: each line the agent sent, in order, one per line.
	out = runNode(snippet("stream", `{"lines": 3}`))
	want := `{"n":0,"text":"line 0 <&>"}` + "\n" + `{"n":1,"text":"line 1 <&>"}` + "\n" + `{"n":2,"text":"line 2 <&>"}` + "\n"
	if out != want {
		t.Errorf("stream's Node snippet printed\n%s\nwant the agent's three lines:\n%s", out, want)
	}
}

// TestPlaygroundDescriptions: each method with a description in the map
// shows it in the list and above the editor when picked; one without
// shows none. The Doors list links doors.json, every door's snippets,
// and a sidecar with no door to list shows neither.
func TestPlaygroundDescriptions(t *testing.T) {
	cfg, err := config.Parse("test.yaml", []byte(`
upstream: {url: "http://127.0.0.1:9"}
methods:
  ask: {description: "Answers one question."}
  plain: {}
  talk: {mode: stream, description: "Streams an answer, a word per record."}
`))
	if err != nil {
		t.Fatal(err)
	}
	dev := devListenerWith(t, cfg, "http://127.0.0.1:9", Options{Doors: testDoors()})
	ctx := browser(t)

	run(t, ctx, "loading the playground", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#doors button[data-door="agentcore"]`))
	if got := evalString(t, ctx, `[...document.querySelectorAll("#methods button")].map(b => b.dataset.method + ": " + (b.querySelector(".desc")?.textContent ?? "-")).join("|")`); got != "ask: Answers one question.|plain: -|talk: Streams an answer, a word per record." {
		t.Errorf("the list's descriptions = %q, want each method's from the map, none for plain", got)
	}
	shown := `(document.getElementById("method-description").hidden ? "(hidden)" : document.getElementById("method-description").textContent)`
	for _, tt := range []struct{ method, want string }{
		{"talk", "Streams an answer, a word per record."},
		{"plain", "(hidden)"},
		{"ask", "Answers one question."},
	} {
		run(t, ctx, "picking "+tt.method, chromedp.Click(`#methods button[data-method="`+tt.method+`"]`))
		if got := evalString(t, ctx, shown); got != tt.want {
			t.Errorf("%s picked: the description shown = %q, want %q", tt.method, got, tt.want)
		}
	}

	link := `(() => { const a = document.querySelector("#doors-json a"); return a && a.offsetParent !== null ? a.getAttribute("href") : "(none shown)"; })()`
	if got := evalString(t, ctx, link); got != "/playground/doors.json" {
		t.Fatalf("the doors' link = %q, want /playground/doors.json shown", got)
	}
	// The link's target is the doors' snippets.
	if got := eval[string](t, ctx, `fetch(document.querySelector("#doors-json a").href).then(r => r.json()).then(j => j.doors.map(d => d.protocol + (d.client ? "+client" : "")).join(","))`, chromedp.EvalAwaitPromise); got != "agent_platform+client,agentcore+client,other" {
		t.Errorf("the link's target lists %q, want the doors with their client snippets", got)
	}

	none := devListener(t, cfg, "http://127.0.0.1:9")
	run(t, ctx, "loading a playground with no door", chromedp.Navigate(none+"/"), chromedp.WaitVisible(`#methods button[data-method="ask"]`))
	waitJS(t, ctx, "the doors loaded", `performance.getEntriesByType("resource").some(e => e.name.endsWith("/playground/doors.json") && e.responseEnd > 0)`)
	if got := evalString(t, ctx, link); got != "(none shown)" {
		t.Errorf("with no door the doors' link shows: %q", got)
	}
}

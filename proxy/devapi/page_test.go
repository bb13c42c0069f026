package devapi

import (
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/producers"
	"github.com/sidecar-dev/sidecar/proxy/platform"
)

var screenshot = flag.String("screenshot", "", "write a PNG of the ADK conversation to this file (docs/playground.png)")

// holdingAgent answers /stream with one ADK event, then holds the second
// until release is closed (or the call ends); /broken sends one event and
// drops the connection; /fail answers 500.
func holdingAgent(t *testing.T) (url string, held <-chan struct{}, release func()) {
	h, r := make(chan struct{}, 1), make(chan struct{})
	event := func(text string) string {
		return `{"author":"agent","content":{"role":"model","parts":[{"text":"` + text + `"}]}}` + "\n"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /stream", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, event("first"))
		w.(http.Flusher).Flush()
		h <- struct{}{}
		select {
		case <-r:
		case <-req.Context().Done():
			return
		}
		io.WriteString(w, event("second"))
	})
	mux.HandleFunc("POST /broken", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, event("partial answer"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("POST /fail", func(w http.ResponseWriter, req *http.Request) {
		http.Error(w, "the agent fell over", http.StatusInternalServerError)
	})
	srv := httptest.NewServer(mux)
	rel := sync.OnceFunc(func() { close(r) })
	t.Cleanup(func() { rel(); srv.Close() })
	return srv.URL, h, rel
}

// TestPlaygroundStreamAndErrors: the page lists the map's methods, a
// streamed line is rendered (with its arrival time) while the agent still
// holds the next one, and a non-2xx reply and a final error line are each
// rendered as errors, distinctly.
func TestPlaygroundStreamAndErrors(t *testing.T) {
	agentURL, held, release := holdingAgent(t)
	contract, cfg := startSidecar(t, `upstream: {url: `+agentURL+`}
methods:
  query: {call: POST /fail}
  stream_query: {mode: stream, call: POST /stream, reply: ndjson, example: {message: hello}}
  broken: {mode: async_stream, call: POST /broken, reply: ndjson}
`)
	dev := devListener(t, cfg, contract)
	ctx := browser(t)

	run(t, ctx, "loading the playground", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#methods button[data-method="broken"]`))
	if got := evalString(t, ctx, `[...document.querySelectorAll("#methods li")].map(l => l.innerText.replace(/\s+/g, " ")).join("|")`); got != `query unary|stream_query stream|broken async_stream` {
		t.Errorf("method list = %q, want the map's three methods with their api_mode, the default as unary", got)
	}
	// Each label is the map's word, or unary for its "": the tooltip gives
	// the mode as the map takes it, which validate accepts.
	for _, badge := range strings.Split(evalString(t, ctx, `[...document.querySelectorAll("#methods .mode")].map(e => e.textContent + "=" + e.title).join("|")`), "|") {
		label, title, _ := strings.Cut(badge, "=")
		word := label
		if label == "unary" {
			word = `""`
		}
		if !strings.HasPrefix(title, "mode: "+word) {
			t.Errorf("the badge %s has the tooltip %q, want it to give the mode as the map writes it, %s", label, title, word)
		}
		if _, err := config.Parse("label.yaml", []byte("upstream: {url: \"http://127.0.0.1:9\"}\nmethods:\n  m: {mode: "+word+"}\n")); err != nil {
			t.Errorf("the page labels a mode %s (%s), which the map refuses: %v", label, word, err)
		}
	}
	// The page opens on the map's first method, not its first streaming one.
	if got := evalString(t, ctx, `document.getElementById("method-title").textContent + " " + document.getElementById("method-mode").textContent + " " + document.querySelector("#methods button.active").dataset.method`); got != `query unary query` {
		t.Errorf("opened on %q, want the map's first method: query unary query", got)
	}
	if got := evalString(t, ctx, `getComputedStyle(document.getElementById("session-bar")).display === "none" ? "hidden" : "shown"`); got != "hidden" {
		t.Errorf("session bar %s without the ADK preset", got)
	}

	// A streaming method: the first line shows while the agent holds the second.
	run(t, ctx, "picking stream_query", chromedp.Click(`#methods button[data-method="stream_query"]`))
	if got := evalString(t, ctx, `JSON.stringify(JSON.parse(document.getElementById("input").value))`); got != `{"message":"hello"}` {
		t.Errorf("editor = %s, want the method's example", got)
	}
	run(t, ctx, "running stream_query", chromedp.Click(`#run`))
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent was never called")
	}
	waitJS(t, ctx, "the first line", lastCall+`?.querySelectorAll(".raw .line").length === 1 && `+lastCall+`.querySelector(".msg.model .text").textContent === "first"`)
	if got := evalString(t, ctx, lastCall+`.dataset.state + " " + `+lastCall+`.querySelector(".raw .line .t").textContent`); !strings.HasPrefix(got, "running +") || !strings.HasSuffix(got, " ms") {
		t.Errorf("while the second line is held: state and arrival time = %q, want running and +N ms", got)
	}
	if got := evalString(t, ctx, lastCall+`.querySelector(".msg.user .text").textContent`); got != "hello" {
		t.Errorf("user message = %q, want hello", got)
	}
	release()
	waitJS(t, ctx, "the second line and the end", lastCall+`.dataset.state === "done" && `+lastCall+`.querySelectorAll(".raw .line").length === 2`)
	if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".msg.model .text")].map(e => e.textContent).join(",")`); got != "first,second" {
		t.Errorf("model messages = %q, want first,second", got)
	}
	run(t, ctx, "showing the raw lines", script(lastCall+`.querySelector("button.toggle").click()`))
	if got := evalString(t, ctx, `[".raw", ".chat"].map(s => getComputedStyle(`+lastCall+`.querySelector(s)).display === "none" ? "hidden" : "shown").join(" ") + " " + `+lastCall+`.querySelectorAll(".raw .line code")[1].textContent`); !strings.HasPrefix(got, `shown hidden {"author":"agent"`) {
		t.Errorf("raw view = %q, want the raw lines shown (the second one too) and the transcript hidden", got)
	}

	// A non-2xx reply: the sidecar's 502 becomes the platform's 400.
	run(t, ctx, "running query", chromedp.Click(`#methods button[data-method="query"]`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the HTTP error", lastCall+`.dataset.state === "error"`)
	if got := evalString(t, ctx, lastCall+`.querySelector(".error.http .label").textContent`); !strings.HasPrefix(got, "HTTP 400 · FAILED_PRECONDITION") {
		t.Errorf("HTTP error label = %q", got)
	}
	if got := evalString(t, ctx, lastCall+`.querySelector(".error.http pre").textContent`); !strings.Contains(got, "the agent fell over") {
		t.Errorf("HTTP error message = %q, want the agent's body", got)
	}

	// A final error line: the same call's earlier line, then an in-band error.
	run(t, ctx, "running broken", chromedp.Click(`#methods button[data-method="broken"]`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the error line", lastCall+`.dataset.state === "error"`)
	if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".chat > *")].map(e => e.className).join(",")`); got != "invocation,msg model,error inband" {
		t.Errorf("broken call blocks = %q, want the invocation, the model's line, then an in-band error", got)
	}
	if got := evalString(t, ctx, lastCall+`.querySelector(".error.inband .label").textContent`); !strings.HasPrefix(got, "error line in the stream") {
		t.Errorf("in-band error label = %q", got)
	}
	if n := evalString(t, ctx, `String(`+lastCall+`.querySelectorAll(".error.http").length)`); n != "0" {
		t.Errorf("the in-band error is also shown as an HTTP error")
	}

	// Each call's snippets: the Python and Node ones parse, for each api_mode.
	for _, m := range []string{"query", "stream_query", "broken"} {
		card := `[...document.querySelectorAll("#calls > article.call")].find(c => c.dataset.method === "` + m + `")`
		run(t, ctx, "copying "+m+" as Python", script(`[...`+card+`.querySelectorAll("header button")].find(b => b.textContent === "Python").click()`))
		py := evalString(t, ctx, card+`.querySelector(".snippet").textContent`)
		cmd := exec.Command("python3", "-c", "import ast, sys; ast.parse(sys.stdin.read())")
		cmd.Stdin = strings.NewReader(py)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: the Python snippet does not parse: %v %s\n%s", m, err, out, py)
		}
		if want := "remote." + m + "(**payload)"; !strings.Contains(py, want) {
			t.Errorf("%s: the Python snippet lacks %s:\n%s", m, want, py)
		}
		run(t, ctx, "copying "+m+" as Node", script(`[...`+card+`.querySelectorAll("header button")].find(b => b.textContent === "Node").click()`))
		js := evalString(t, ctx, card+`.querySelector(".snippet").textContent`)
		file := filepath.Join(t.TempDir(), "call.mjs")
		if err := os.WriteFile(file, []byte(js), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("node", "--check", file).CombinedOutput(); err != nil {
			t.Errorf("%s: the Node snippet does not parse: %v %s\n%s", m, err, out, js)
		}
		if want := `class_method: "` + m + `"`; !strings.Contains(js, want) {
			t.Errorf("%s: the Node snippet lacks %s:\n%s", m, want, js)
		}
	}

	// An invalid input is refused before Run.
	run(t, ctx, "typing bad JSON", setInput(`{"message": `))
	if got := evalString(t, ctx, `(document.getElementById("run").disabled ? "disabled " : "enabled ") + document.getElementById("input-error").textContent`); !strings.HasPrefix(got, "disabled Invalid input") {
		t.Errorf("with invalid JSON: %q, want Run disabled and the reason", got)
	}
}

// TestPlaygroundADKSession: with the ADK preset the page creates a
// session, and three turns run in it (the api server's session holds them all).
// The ADK api server is testdata/adkpy, the Python stand-in.
func TestPlaygroundADKSession(t *testing.T) {
	// It binds port 0 and logs "adkpy: listening on 127.0.0.1:PORT app=…".
	adkAddr, exited := startProcess(t, []string{"PORT=0", "ADK_SSE_DELAY_MS=30"}, func(line string) string {
		addr, ok := strings.CutPrefix(line, "adkpy: listening on ")
		addr, _, _ = strings.Cut(addr, " ")
		if !ok {
			return ""
		}
		return addr
	}, "python3", "../../testdata/adkpy/server.py")
	waitHealthy(t, "http://"+adkAddr+"/health", exited)
	contract, cfg := startSidecar(t, "upstream: {url: http://"+adkAddr+", ready: {path: /list-apps}}\npreset: adk\nadk: {app: weather}\n")
	ex := platform.Protocol.Example(contract, nil)
	dev := devListenerWith(t, cfg, contract, Options{Doors: []Door{{Protocol: "agent_platform", URL: contract, Example: &ex}}})
	ctx := browser(t)

	run(t, ctx, "loading the playground", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#session-bar`))
	// The preset's order is not the user's: the page opens on its chat.
	if got := evalString(t, ctx, `document.getElementById("method-title").textContent`); got != "stream_query" {
		t.Errorf("the ADK preset opened on %q, want stream_query", got)
	}
	if got := evalString(t, ctx, `document.getElementById("user-id").value`); got != "u1" {
		t.Errorf("user id = %q, want u1", got)
	}
	run(t, ctx, "New session", chromedp.Click(`#new-session`))
	waitJS(t, ctx, "the new session picked", `document.getElementById("session").value !== ""`)
	sid := evalString(t, ctx, `document.getElementById("session").value`)

	for _, city := range []string{"Paris", "Rome"} {
		run(t, ctx, "asking about "+city, chromedp.Click(`#methods button[data-method="stream_query"]`),
			setInput(`{"message": "`+city+`"}`), chromedp.Click(`#run`))
		waitJS(t, ctx, "the answer for "+city, lastCall+`.dataset.state === "done"`)
		want := "The weather in " + city + " is sunny."
		if got := evalString(t, ctx, lastCall+`.querySelector(".msg.model .text").textContent`); got != want {
			t.Errorf("%s: model text = %q, want %q", city, got, want)
		}
		if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".tool .label span:first-child")].map(e => e.textContent).join(",")`); got != "tool call · get_weather,tool result · get_weather" {
			t.Errorf("%s: tool blocks = %q", city, got)
		}
		// The built-in handler's call has its phases: the run's connection and head.
		if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".timeline [data-phase]")].map(b => b.dataset.phase).join(",")`); got != "queue,connect,agent,record,record,record,end" {
			t.Errorf("%s: timeline = %q, want the sidecar's three phases, a tick per event and the end", city, got)
		}
	}
	// With run_config streaming SSE, partial events grow one model message,
	// which the final event replaces.
	run(t, ctx, "asking about Oslo, streaming", setInput(`{"message": "Oslo", "run_config": {"streaming_mode": "SSE"}}`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the answer for Oslo", lastCall+`.dataset.state === "done"`)
	if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".msg.model .text")].map(e => e.textContent).join("|") + " " + `+lastCall+`.querySelectorAll(".raw .line").length`); got != "The weather in Oslo is sunny. 6" {
		t.Errorf("Oslo: model messages and raw line count = %q, want one message from 3 partial events and the final one (6 lines)", got)
	}
	if got := evalString(t, ctx, `[...document.querySelectorAll("#session option")].map(o => o.value).filter(Boolean).join(",")`); got != sid {
		t.Errorf("session picker = %q, want only %q (no session made per call)", got, sid)
	}

	// The api server's session holds both turns: the session was reused.
	resp, err := http.Post(contract+"/api/reasoning_engine", "application/json",
		strings.NewReader(`{"class_method":"get_session","input":{"user_id":"u1","session_id":"`+sid+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Output struct {
			Events json.RawMessage `json:"events"`
		} `json:"output"`
	}
	json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if all := string(got.Output.Events); !strings.Contains(all, "Paris") || !strings.Contains(all, "Rome") || !strings.Contains(all, "Oslo") {
		t.Errorf("session %s events = %s, want the three turns (Paris, Rome, Oslo)", sid, all)
	}

	// The snippets name the platform's URL shape and the SDK.
	run(t, ctx, "copy curl", chromedp.Click(`#copy-curl`))
	curl := evalString(t, ctx, `document.getElementById("snippet").textContent`)
	for _, want := range []string{`https://us-central1-aiplatform.googleapis.com/v1/projects/local/locations/us-central1/reasoningEngines/local:streamQuery?alt=sse`,
		`Authorization: Bearer $(gcloud auth print-access-token)`, `"session_id":"` + sid + `"`, `"user_id":"u1"`} {
		if !strings.Contains(curl, want) {
			t.Errorf("curl snippet lacks %q:\n%s", want, curl)
		}
	}
	run(t, ctx, "copy Python", chromedp.Click(`#copy-python`))
	py := evalString(t, ctx, `document.getElementById("snippet").textContent`)
	for _, want := range []string{`agent_engines.get("projects/local/locations/us-central1/reasoningEngines/local")`, `for event in remote.stream_query(**payload):`} {
		if !strings.Contains(py, want) {
			t.Errorf("Python snippet lacks %q:\n%s", want, py)
		}
	}

	if *screenshot != "" {
		run(t, ctx, "hiding the snippet", script(`document.getElementById("snippet").hidden = true; document.activeElement.blur(); window.scrollTo(0, 0)`))
		height := eval[int64](t, ctx, `document.querySelector("main").scrollHeight + document.querySelector("header").offsetHeight`)
		run(t, ctx, "sizing the page", chromedp.EmulateViewport(1200, height))
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPlaygroundProducers: agents built with three frameworks — the
// Vercel AI SDK, LangGraph and an A2A server (@a2a-js/sdk, 1.0) — each
// answer stream_query through the sidecar with emit: adk, and the
// playground renders each as a chat: the model's text, and the tool call
// and result where the agent makes one.
func TestPlaygroundProducers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the node producers")
	}
	for _, tc := range []struct {
		name, script, method string
		tools                string // the tool blocks, in order
	}{
		{"vercel-ui", "vercel.mjs", `
    call: POST /api/chat/tool
    body: {id: chat-1, messages: [{id: m1, role: user, parts: [{type: text, text: "{input.message}"}]}]}`,
			"tool call · get_weather,tool result · get_weather"},
		{"langgraph", "langgraph.mjs", `
    call: POST /runs/stream
    body: {assistant_id: tool, input: {messages: [{role: user, content: "{input.message}"}]}, stream_mode: [messages-tuple, updates]}`,
			"tool call · get_weather,tool result · get_weather"},
		{"a2a", "a2a.mjs", `
    call: POST /
    body: {jsonrpc: "2.0", id: 1, method: SendStreamingMessage, params: {message: {role: ROLE_USER, messageId: m1, parts: [{text: "{input.message}"}]}}}
    headers: {set: {A2A-Version: "1.0"}}`,
			""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := producers.Start(t, tc.script)
			contract, cfg := startSidecar(t, `upstream: {url: `+agent+`}
methods:
  stream_query:
    mode: stream`+tc.method+`
    emit: adk
    example: {message: "What is the weather in Paris?"}
`)
			dev := devListener(t, cfg, contract)
			ctx := browser(t)

			run(t, ctx, "running stream_query", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#methods button[data-method="stream_query"]`),
				chromedp.Click(`#methods button[data-method="stream_query"]`), chromedp.Click(`#run`))
			waitJS(t, ctx, "the answer", lastCall+`?.dataset.state === "done"`)
			if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".msg.model .text")].map(e => e.textContent).join("|")`); !strings.HasSuffix(got, "It is sunny in Paris.") {
				t.Errorf("model messages = %q, want the model's text last", got)
			}
			if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".tool .label span:first-child")].map(e => e.textContent).join(",")`); got != tc.tools {
				t.Errorf("tool blocks = %q, want %q", got, tc.tools)
			}
		})
	}
}

package devapi

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
)

// wsEchoAgent is an agent's WebSocket server at GET /live that echoes
// every frame as it came until the text "bye", which it answers by
// closing with 4000 "agent done".
func wsEchoAgent(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if string(data) == "bye" {
				c.Close(4000, "agent done")
				return
			}
			if c.Write(r.Context(), typ, data) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// devLine is the dev listener's address in sidecar dev's output.
func devLine(line string) string {
	u, ok := strings.CutPrefix(line, "dev: the platform's REST API and the playground on http://")
	if !ok {
		return ""
	}
	return u
}

// TestPlaygroundLive: the built binary's sidecar dev, with the live door
// and AgentCore's /ws mounted on the platform's port: the page lists the
// bidi method, its live panel opens either through the WebSocket
// passthrough: on AgentCore's /ws it sends the text as typed and shows
// the echo and the agent's own close; on the live door it sends the setup
// and two typed frames in the platform's framing, shows each echo as it
// comes, in order, with its direction, closes and shows the close's code
// and reason.
func TestPlaygroundLive(t *testing.T) {
	agent := wsEchoAgent(t)
	yaml := `upstream: {url: "` + agent + `"}
shutdown: {drain: 1s}
methods:
  query: {call: POST /q}
  talk: {mode: bidi, call: GET /live}
protocols:
  live: {mount: /live, method: talk}
  agentcore: {mount: /, method: query, ws: talk}
`
	file := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, done := startProcess(t, nil, devLine, buildSidecar(t), "dev", "--config", file, "--listen", "127.0.0.1:0", "--dev-listen", "127.0.0.1:0")
	dev := "http://" + addr
	waitHealthy(t, dev+through("/healthz"), done)
	ctx := browser(t)

	run(t, ctx, "loading the playground", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#methods button[data-method="talk"]`))
	run(t, ctx, "picking talk", chromedp.Click(`#methods button[data-method="talk"]`), chromedp.WaitVisible(`#live-view`))
	// The doors in the program's order: AgentCore's, then the live door.
	if got := evalString(t, ctx, `[...document.querySelectorAll("#live-door option")].map(o => o.textContent).join("|") + " " + document.getElementById("live-url").textContent`); got != "agentcore · raw frames|live · platform framing ws://"+addr+WSPassthroughPath("/ws") {
		t.Errorf("the live panel offers %q, want AgentCore's /ws then the live door, the first opened through the WebSocket passthrough", got)
	}
	if got := evalString(t, ctx, `getComputedStyle(document.getElementById("method-view")).display`); got != "none" {
		t.Errorf("the call editor is %q beside the live panel, want it hidden", got)
	}
	frames := `[...document.querySelectorAll("#live-frames li")].map(li => li.querySelector(".dir").textContent + " " + li.querySelector("code").textContent)`

	// AgentCore's /ws: frames as typed; the agent's close is shown as it
	// sent it.
	run(t, ctx, "opening /ws", chromedp.Click(`#live-open`))
	waitJS(t, ctx, "the conversation open", `!document.getElementById("live-send").disabled`)
	run(t, ctx, "sending plain text", script(`document.getElementById("live-input").value = "hello, raw"`), chromedp.Click(`#live-send`))
	waitJS(t, ctx, "its echo", frames+`.includes("← hello, raw")`)
	run(t, ctx, "sending bye", script(`document.getElementById("live-input").value = "bye"`), chromedp.Click(`#live-send`))
	waitJS(t, ctx, "the agent's close", `document.getElementById("live-status").textContent.startsWith("closed ")`)
	if got := evalString(t, ctx, frames+`.join("\n")`); got != "→ hello, raw\n← hello, raw\n→ bye\n■ closed 4000 agent done" {
		t.Errorf("the frames listed on /ws:\n%s", got)
	}

	// The live door, in the platform's framing.
	run(t, ctx, "picking the live door", script(`(() => { const s = document.getElementById("live-door"); s.value = "1"; s.dispatchEvent(new Event("change")); })()`))
	if got := evalString(t, ctx, `document.getElementById("live-url").textContent`); got != "ws://"+addr+WSPassthroughPath("/live") {
		t.Errorf("the live door opens at %q, want its mount through the WebSocket passthrough", got)
	}
	run(t, ctx, "opening", chromedp.Click(`#live-open`))
	waitJS(t, ctx, "the conversation open", `document.getElementById("live-status").textContent === "open" && !document.getElementById("live-send").disabled`)
	for _, n := range []string{"1", "2"} {
		run(t, ctx, "sending "+n, script(`document.getElementById("live-input").value = '{"n": `+n+`}'`), chromedp.Click(`#live-send`))
		waitJS(t, ctx, "the echo of "+n, frames+`.includes('← {"bidiStreamOutput":{"n":`+n+`}}')`)
	}
	run(t, ctx, "closing", chromedp.Click(`#live-close`))
	waitJS(t, ctx, "the close", `document.getElementById("live-status").textContent.startsWith("closed ")`)
	want := strings.Join([]string{
		`→ {"setup":{"name":"projects/local/locations/us-central1/reasoningEngines/local","class_method":"talk"}}`,
		`→ {"bidi_stream_input":{"n":1}}`,
		`← {"bidiStreamOutput":{"n":1}}`,
		`→ {"bidi_stream_input":{"n":2}}`,
		`← {"bidiStreamOutput":{"n":2}}`,
		`■ closed 1000 closed in the playground`,
	}, "\n")
	if got := evalString(t, ctx, frames+`.join("\n")`); got != want {
		t.Errorf("the frames listed:\n%s\nwant:\n%s", got, want)
	}
	if got := evalString(t, ctx, `document.getElementById("live-status").textContent + " " + document.getElementById("live-open").disabled`); got != "closed 1000 closed in the playground false" {
		t.Errorf("after the close: status and Open disabled = %q", got)
	}
}

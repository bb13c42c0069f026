package devapi

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// partsShot, when set, is where TestPlaygroundParts writes a PNG of its
// card, to look at.
var partsShot = os.Getenv("SIDECAR_PARTS_SCREENSHOT")

// dot is a real 1x1 PNG, base64.
const dot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// TestPlaygroundParts: the part records of a streamed reply are shown:
// an image from its base64 (a PNG, and an ADK event's inlineData in the
// URL-safe alphabet), audio in a player, a file as a link opened with no
// opener or referrer, data as JSON; an agent's SVG is never an image, a
// file URI that is not http or https never a link; a unary output's parts
// likewise. The page's CSP lets the data: images and audio load and
// nothing else.
func TestPlaygroundParts(t *testing.T) {
	wav := make([]byte, 44+8)
	copy(wav, "RIFF\x2c\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x08\x00\x00\x00")
	svg := base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="document.title='owned'"><rect width="9" height="9"/></svg>`))
	urlSafe := strings.NewReplacer("+", "-", "/", "_", "=", "").Replace(dot)
	lines := []string{
		`{"inline_data":{"mime_type":"image/png","display_name":"dot.png","data":"` + dot + `"}}`,
		`{"author":"agent","content":{"role":"model","parts":[{"text":"drawn:"},{"inlineData":{"mimeType":"image/png","data":"` + urlSafe + `"}}]}}`,
		`{"inline_data":{"mime_type":"audio/wav","data":"` + base64.StdEncoding.EncodeToString(wav) + `"}}`,
		`{"inline_data":{"mime_type":"image/svg+xml","data":"` + svg + `"}}`,
		`{"file_data":{"mime_type":"application/pdf","file_uri":"https://example.com/report.pdf","display_name":"report.pdf"}}`,
		`{"file_data":{"file_uri":"javascript:alert(1)"}}`,
		`{"data":{"total":12.5,"currency":"EUR"}}`,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /parts", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, strings.Join(lines, "\n")+"\n")
	})
	agent := httptest.NewServer(mux)
	t.Cleanup(agent.Close)
	contract, cfg := startSidecar(t, `upstream: {url: `+agent.URL+`}
methods:
  stream_query: {mode: stream, call: POST /parts, reply: ndjson, example: {message: draw}}
  query: {call: POST /parts, reply: ndjson, emit: text, example: {message: draw}}
`)
	dev := devListener(t, cfg, contract)
	ctx := browser(t)

	run(t, ctx, "loading the playground", chromedp.Navigate(dev+"/"), chromedp.WaitVisible(`#methods button[data-method="stream_query"]`))
	run(t, ctx, "running stream_query", chromedp.Click(`#methods button[data-method="stream_query"]`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the parts", lastCall+`?.dataset.state === "done"`)
	waitJS(t, ctx, "the images decoded", `[...`+lastCall+`.querySelectorAll(".part img")].every(i => i.complete && i.naturalWidth === 1)`)

	got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".part")].map(p => p.dataset.kind + ":" + [...p.children].slice(1).map(c => c.tagName.toLowerCase()).join("+")).join(" ")`)
	const want = "inline:img inline:img inline:audio inline:code file:a file:code data:pre"
	if got != want {
		t.Errorf("parts shown as %q, want %q", got, want)
	}
	if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".part img")].map(i => i.src.slice(0, 22) + " " + i.alt).join(" | ")`); got != "data:image/png;base64, dot.png | data:image/png;base64, image/png" {
		t.Errorf("images = %q", got)
	}
	if got := evalString(t, ctx, lastCall+`.querySelector(".part audio").src.slice(0, 22) + " " + `+lastCall+`.querySelector(".part audio").controls`); got != "data:audio/wav;base64, true" {
		t.Errorf("audio = %q, want a data URL with controls", got)
	}
	if got := evalString(t, ctx, `(a => a.href + " " + a.rel + " " + a.target + " " + a.textContent)(`+lastCall+`.querySelector(".part a"))`); got != "https://example.com/report.pdf noopener noreferrer _blank report.pdf" {
		t.Errorf("link = %q", got)
	}
	if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".part code")].map(c => c.textContent).join(" | ") + " " + document.title`); strings.Contains(got, "owned") || !strings.Contains(got, "javascript:alert(1)") {
		t.Errorf("the SVG and the javascript: URI = %q, want text only, no script run", got)
	}
	if got := evalString(t, ctx, lastCall+`.querySelector(".part[data-kind=data] pre").textContent`); got != `{"total": 12.5, "currency": "EUR"}` {
		t.Errorf("data = %q", got)
	}
	// A unary call with emit text: the output's parts, mapped by the
	// stage (the ADK event's image among them, its base64 made standard).
	run(t, ctx, "running query", chromedp.Click(`#methods button[data-method="query"]`), chromedp.Click(`#run`))
	waitJS(t, ctx, "the unary output", lastCall+`?.dataset.method === "query" && `+lastCall+`.dataset.state === "done"`)
	waitJS(t, ctx, "its images decoded", `[...`+lastCall+`.querySelectorAll(".part img")].every(i => i.complete && i.naturalWidth === 1)`)
	if got := evalString(t, ctx, `[...`+lastCall+`.querySelectorAll(".part")].map(p => p.dataset.kind + ":" + [...p.children].slice(1).map(c => c.tagName.toLowerCase()).join("+")).join(" ")`); got != want {
		t.Errorf("the unary output's parts shown as %q, want %q", got, want)
	}
	if partsShot != "" {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(partsShot, png, 0o644)
	}
}

package devapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/agentcore"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
)

// testDoors are two enabled doors with their registrations' examples.
func testDoors() []Door {
	example := func(p func(string, *config.Door) core.Example, url string) *core.Example {
		ex := p(url, nil)
		return &ex
	}
	return []Door{
		{Protocol: "agent_platform", URL: "http://127.0.0.1:8080", Example: example(platform.Protocol.Example, "http://127.0.0.1:8080")},
		{Protocol: "agentcore", URL: "http://127.0.0.1:8090", Example: example(agentcore.Protocol.Example, "http://127.0.0.1:8090")},
		{Protocol: "other", URL: "http://127.0.0.1:8091"},
	}
}

// TestDoorsJSON: GET /playground/doors.json lists the doors it was given,
// in order, each with its URL and example; none is an empty list.
func TestDoorsJSON(t *testing.T) {
	dev := httptest.NewServer(New(newStackConfig(t), "http://127.0.0.1:9", Options{Doors: testDoors()}))
	defer dev.Close()
	code, h, body := get(t, dev.URL+"/playground/doors.json")
	ac := agentcore.Protocol.Example("http://127.0.0.1:8090", nil)
	for _, want := range []string{`{"doors":[{"protocol":"agent_platform","url":"http://127.0.0.1:8080","curl":"curl -s http://127.0.0.1:8080/api/reasoning_engine`,
		`{"protocol":"agentcore","url":"http://127.0.0.1:8090","curl":` + string(marshal(ac.Curl)) + `,"client":` + string(marshal(ac.Client)) + `,"client_lang":"python"}`,
		`{"protocol":"other","url":"http://127.0.0.1:8091"}]}`} {
		if !strings.Contains(body, want) {
			t.Errorf("doors.json lacks %s:\n%s", want, body)
		}
	}
	if code != 200 || h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("GET /playground/doors.json: %d %q %q", code, h.Get("Content-Type"), h.Get("Cache-Control"))
	}

	none := httptest.NewServer(New(newStackConfig(t), "http://127.0.0.1:9", Options{}))
	defer none.Close()
	if _, _, body := get(t, none.URL+"/playground/doors.json"); body != `{"doors":[]}`+"\n" {
		t.Errorf("no doors: %q", body)
	}
}

// TestPlaygroundDoors: the page lists the enabled doors with their URLs,
// and picking one shows its curl and its client snippet, named by
// language, as the registration gives them.
func TestPlaygroundDoors(t *testing.T) {
	dev := httptest.NewServer(New(newStackConfig(t), "http://127.0.0.1:9", Options{Doors: testDoors()}))
	defer dev.Close()
	ctx := browser(t)

	run(t, ctx, "loading the playground", chromedp.Navigate(dev.URL+"/"), chromedp.WaitVisible(`#doors button[data-door="agentcore"]`))
	if got := evalString(t, ctx, `[...document.querySelectorAll("#doors li")].map(l => l.innerText.replace(/\s+/g, " ")).join("|")`); got != "agent_platform http://127.0.0.1:8080|agentcore http://127.0.0.1:8090|other http://127.0.0.1:8091" {
		t.Errorf("doors list = %q, want each enabled door with its URL", got)
	}
	if got := evalString(t, ctx, `getComputedStyle(document.getElementById("door-view")).display`); got != "none" {
		t.Errorf("the door view shows before a door is picked (display %s)", got)
	}
	run(t, ctx, "picking agentcore", chromedp.Click(`#doors button[data-door="agentcore"]`))
	ex := agentcore.Protocol.Example("http://127.0.0.1:8090", nil)
	if got := evalString(t, ctx, `document.getElementById("door-curl").textContent`); got != ex.Curl {
		t.Errorf("curl shown = %q, want %q", got, ex.Curl)
	}
	if got := evalString(t, ctx, `document.getElementById("door-client-lang").textContent + "\n" + document.getElementById("door-client").textContent`); got != "python\n"+ex.Client {
		t.Errorf("client shown = %q, want python and %q", got, ex.Client)
	}
	if got := evalString(t, ctx, `document.getElementById("door-title").textContent + " " + document.getElementById("door-url").textContent`); got != "agentcore http://127.0.0.1:8090" {
		t.Errorf("door view title = %q", got)
	}
	run(t, ctx, "closing it", chromedp.Click(`#door-close`))
	if got := evalString(t, ctx, `getComputedStyle(document.getElementById("door-view")).display`); got != "none" {
		t.Errorf("the door view still shows after Close (display %s)", got)
	}
}

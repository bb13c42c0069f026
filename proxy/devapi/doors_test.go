package devapi

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/a2a"
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

// mountedDoors are the platform's door and an A2A door mounted on its
// listener at /a2a, listed with its passthrough URL on the dev listener
// and its public URL on Agent Platform, then a door of its own listener.
func mountedDoors() []Door {
	const (
		direct  = "http://127.0.0.1:8080/a2a"
		through = "http://127.0.0.1:8081/reasoningEngines/v1/projects/local/locations/us-central1/reasoningEngines/local/api/a2a"
	)
	ex, tex := a2a.Protocol.Example(direct, nil), a2a.Protocol.Example(through, nil)
	ac := agentcore.Protocol.Example("http://127.0.0.1:8090", nil)
	return []Door{
		{Protocol: "agent_platform", URL: "http://127.0.0.1:8080"},
		{Protocol: "a2a", URL: direct, Example: &ex, Mount: "/a2a", Passthrough: through, PassthroughExample: &tex,
			Platform: "https://europe-west4-aiplatform.googleapis.com/reasoningEngines/v1/projects/p/locations/europe-west4/reasoningEngines/1/api/a2a"},
		{Protocol: "agentcore", URL: "http://127.0.0.1:8090", Example: &ac},
	}
}

// TestDoorsJSONMounted: doors.json gives a mounted door its mount, its
// direct URL and example, its passthrough path and URL with the example
// for that URL, and its public URL on the platform when it has one; a
// door on a listener of its own has none of them.
func TestDoorsJSONMounted(t *testing.T) {
	dev := httptest.NewServer(New(newStackConfig(t), "http://127.0.0.1:9", Options{Doors: mountedDoors()}))
	defer dev.Close()
	_, _, body := get(t, dev.URL+"/playground/doors.json")
	var got struct{ Doors []doorInfo }
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Doors) != 3 {
		t.Fatalf("doors.json %s: %v", body, err)
	}
	d, want := got.Doors[1], mountedDoors()[1]
	if d.Mount != "/a2a" || d.URL != want.URL || d.Curl != want.Example.Curl || d.Client != want.Example.Client ||
		d.Passthrough != PassthroughPath("/a2a") || d.PassthroughURL != want.Passthrough ||
		d.PassthroughCurl != want.PassthroughExample.Curl || d.PassthroughClient != want.PassthroughExample.Client ||
		d.ClientLang != "javascript" || d.Platform != want.Platform {
		t.Errorf("the mounted door = %+v, want %+v", d, want)
	}
	if !strings.Contains(d.PassthroughCurl, want.Passthrough) {
		t.Errorf("the passthrough curl does not call %s: %s", want.Passthrough, d.PassthroughCurl)
	}
	if own := got.Doors[2]; own.Mount != "" || own.Passthrough != "" || own.PassthroughURL != "" || own.PassthroughCurl != "" || own.Platform != "" {
		t.Errorf("a door on its own listener = %+v, want no mount", own)
	}
}

// TestPlaygroundMountedDoor: the page lists a mounted door with its
// mount and its passthrough URL; picking it shows that URL, the curl and
// client for it, its direct URL on the contract listener beside them and
// its URL on Agent Platform; a door on a listener of its own shows its
// URL and examples only.
func TestPlaygroundMountedDoor(t *testing.T) {
	doors := mountedDoors()
	dev := httptest.NewServer(New(newStackConfig(t), "http://127.0.0.1:9", Options{Doors: doors}))
	defer dev.Close()
	ctx := browser(t)
	m := doors[1]

	run(t, ctx, "loading the playground", chromedp.Navigate(dev.URL+"/"), chromedp.WaitVisible(`#doors button[data-door="a2a"]`))
	if got := evalString(t, ctx, `[...document.querySelectorAll("#doors li")].map(l => l.innerText.replace(/\s+/g, " ")).join("|")`); got != "agent_platform http://127.0.0.1:8080|a2a mounted at /a2a "+m.Passthrough+"|agentcore http://127.0.0.1:8090" {
		t.Errorf("doors list = %q, want the mounted door with its mount and passthrough URL", got)
	}
	run(t, ctx, "picking a2a", chromedp.Click(`#doors button[data-door="a2a"]`), chromedp.WaitVisible(`#door-direct-row`))
	shown := func(id string) string {
		return evalString(t, ctx, `(e => getComputedStyle(e).display === "none" ? "(hidden)" : e.textContent)(document.getElementById("`+id+`"))`)
	}
	for id, want := range map[string]string{
		"door-url": m.Passthrough, "door-direct": m.URL, "door-platform": m.Platform,
		"door-curl": m.PassthroughExample.Curl, "door-client": m.PassthroughExample.Client, "door-client-lang": "javascript",
	} {
		if got := shown(id); got != want {
			t.Errorf("#%s = %q, want %q", id, got, want)
		}
	}
	run(t, ctx, "picking agentcore", chromedp.Click(`#doors button[data-door="agentcore"]`))
	ac := doors[2]
	for id, want := range map[string]string{
		"door-url": ac.URL, "door-curl": ac.Example.Curl, "door-direct-row": "(hidden)", "door-platform-row": "(hidden)",
	} {
		if got := shown(id); got != want {
			t.Errorf("agentcore: #%s = %q, want %q", id, got, want)
		}
	}
}

package devapi

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := testClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// TestPlaygroundFiles: GET / is the embedded index.html, every other
// embedded file is under /playground/, typed, never cached.
func TestPlaygroundFiles(t *testing.T) {
	dev := httptest.NewServer(New(newStackConfig(t), "http://127.0.0.1:9", Options{}))
	defer dev.Close()
	index, err := fs.ReadFile(playground, "playground/index.html")
	if err != nil {
		t.Fatal(err)
	}
	code, h, body := get(t, dev.URL+"/")
	if code != 200 || body != string(index) || h.Get("Content-Type") != "text/html; charset=utf-8" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("GET /: %d %q %q", code, h.Get("Content-Type"), h.Get("Cache-Control"))
	}
	files, _ := fs.Glob(playground, "playground/*")
	for _, f := range files {
		name := strings.TrimPrefix(f, "playground/")
		want, _ := fs.ReadFile(playground, f)
		code, h, body := get(t, dev.URL+"/playground/"+name)
		if code != 200 || body != string(want) || h.Get("Content-Type") == "" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("GET /playground/%s: %d %q %q", name, code, h.Get("Content-Type"), h.Get("Cache-Control"))
		}
	}
	for _, p := range []string{"/playground/nope.js", "/playground/", "/playground/../emulator.go", "/index.html"} {
		if code, _, body := get(t, dev.URL+p); code != 404 || !strings.Contains(body, `"status":"NOT_FOUND"`) {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
}

// TestMethodsJSON: the method map as the playground reads it, in the
// map's order, without "*", each with its description when the map gives
// one; a bidi method with the conversations of the doors that reach it
// (none here: see TestMethodsJSONLive).
func TestMethodsJSON(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{testMap, `{"project":"local","location":"us-central1","engine":"local","api":"v1","preset":"","adk_app":"","methods":[` +
			`{"name":"echo","api_mode":"","example":{"message":"hi","n":1}},` +
			`{"name":"fail","api_mode":"","example":null},` +
			`{"name":"stream","api_mode":"stream","example":null}]}`},
		{`
upstream: {url: AGENT}
methods:
  b: {mode: async_stream, example: [1, "two"]}
  a: {mode: async, example: "text", description: "Says a."}
  c: {mode: bidi, call: GET /live}
  "*": {}
`, `{"project":"local","location":"us-central1","engine":"local","api":"v1","preset":"","adk_app":"","methods":[` +
			`{"name":"b","api_mode":"async_stream","example":[1,"two"]},{"name":"a","api_mode":"async","example":"text","description":"Says a."},` +
			`{"name":"c","api_mode":"bidi","example":null}]}`},
	} {
		cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(tt.yaml, "AGENT", "http://127.0.0.1:9")))
		if err != nil {
			t.Fatal(err)
		}
		dev := httptest.NewServer(New(cfg, "http://127.0.0.1:9", Options{}))
		code, h, body := get(t, dev.URL+"/playground/methods.json")
		dev.Close()
		if code != 200 || body != tt.want+"\n" || h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%d %q %q\n got %s\nwant %s", code, h.Get("Content-Type"), h.Get("Cache-Control"), body, tt.want)
		}
	}

	// The ADK preset: every AdkApp method, the app's name.
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \"http://127.0.0.1:9\"}\npreset: adk\nadk: {app: helper}\n"))
	if err != nil {
		t.Fatal(err)
	}
	dev := httptest.NewServer(New(cfg, "http://127.0.0.1:9", Options{}))
	defer dev.Close()
	_, _, body := get(t, dev.URL+"/playground/methods.json")
	for _, want := range []string{`"preset":"adk"`, `"adk_app":"helper"`, `{"name":"async_create_session","api_mode":"async","example":null}`,
		`{"name":"stream_query","api_mode":"stream","example":null}`} {
		if !strings.Contains(body, want) {
			t.Errorf("the ADK preset: no %s in %s", want, body)
		}
	}
}

// TestMethodsJSONLive: a bidi method lists each door's conversation that
// reaches it, with its framing, its path on the WebSocket passthrough
// when the door is mounted, and its ws:// URL on its listener; a method
// no conversation reaches lists none.
func TestMethodsJSONLive(t *testing.T) {
	cfg, err := config.Parse("test.yaml", []byte(`
upstream: {url: "http://127.0.0.1:9"}
methods:
  talk: {mode: bidi, call: GET /live}
  other: {mode: bidi, call: GET /other}
`))
	if err != nil {
		t.Fatal(err)
	}
	doors := []Door{
		{Protocol: "live", Mount: "/live", Live: []Live{{Conversation: core.Conversation{Path: "/", Methods: []string{"talk"}, Platform: true},
			URL: "http://127.0.0.1:8080/live", Passthrough: WSPassthroughPath("/live")}}},
		{Protocol: "agentcore", Live: []Live{{Conversation: core.Conversation{Path: "/ws", Methods: []string{"talk"}},
			URL: "http://127.0.0.1:9000/ws"}}},
	}
	dev := httptest.NewServer(New(cfg, "http://127.0.0.1:9", Options{Doors: doors}))
	defer dev.Close()
	_, _, body := get(t, dev.URL+"/playground/methods.json")
	want := `"methods":[{"name":"talk","api_mode":"bidi","example":null,"live":[` +
		`{"protocol":"live","framing":"platform","path":"/reasoningEngines/ws/v1beta1/projects/local/locations/us-central1/reasoningEngines/local/api/live","url":"ws://127.0.0.1:8080/live"},` +
		`{"protocol":"agentcore","framing":"raw","url":"ws://127.0.0.1:9000/ws"}]},` +
		`{"name":"other","api_mode":"bidi","example":null}]}`
	if !strings.HasSuffix(strings.TrimSpace(body), want) {
		t.Errorf("methods.json = %s\nwant it to end %s", body, want)
	}
}

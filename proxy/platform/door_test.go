package platform

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Door is a proxy.Door, without importing proxy outside its tests.
var _ proxy.Door = Door{}

const doorConfig = `
upstream: {url: "http://127.0.0.1:1"}
methods:
  query: {}
  stream_query: {mode: stream}
`

// TestDoorCall: the envelope becomes the call for the agent, its method
// looked up on the route it came on; a method the route does not serve
// keeps its name, for the call's log line.
func TestDoorCall(t *testing.T) {
	cfg, err := config.Parse("test.yaml", []byte(doorConfig))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, core.RouteStream, nil)
	r.Header.Set("X-Request-Id", "r1")
	call := func(route string, body string) (core.Call, error) {
		ex, err := Door{}.Open(cfg, route, r, []byte(body))
		return ex.Call, err
	}
	c, err := call(core.RouteStream, `{"classMethod":"stream_query","input":{"a" : 1}}`)
	if err != nil || c.Method == nil || c.Method.Name != "stream_query" || c.Name != "stream_query" || string(c.Input.Raw) != `{"a":1}` ||
		c.Route != core.RouteStream || c.Header.Get("X-Request-Id") != "r1" {
		t.Errorf("Call = %+v, %v; want stream_query on %s with its input and header", c, err, core.RouteStream)
	}
	c, err = call(core.RouteUnary, `{"class_method":"stream_query"}`)
	var re *core.RequestError
	if !errors.As(err, &re) || c.Name != "stream_query" || c.Method != nil || !strings.Contains(re.Msg, ":streamQuery") {
		t.Errorf("a streaming method on the unary route: %+v, %v; want its name and a not-found error naming :streamQuery", c, err)
	}
	if c, err := call(core.RouteUnary, `[]`); !errors.As(err, &re) || c.Name != "" {
		t.Errorf("a body that is no envelope: %+v, %v; want a request error", c, err)
	}
}

// TestDoorRoutes: the contract's routes reach the server's handlers, the
// health paths its health; the rest is refused (refuse) on its route,
// none for a path the door does not serve.
func TestDoorRoutes(t *testing.T) {
	var got []string
	call := func(route string, stream bool) http.Handler {
		return http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			got = append(got, route+map[bool]string{false: " unary", true: " stream"}[stream])
		})
	}
	health := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, "health "+r.URL.Path) })
	refuse := func(w http.ResponseWriter, r *http.Request, route string, err error) {
		got = append(got, "refused "+route)
		Door{}.WriteError(w, err.(core.Failure))
	}
	h := Door{}.Handler(call, health, refuse)
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodPost, core.RouteUnary, 200, ""},
		{http.MethodPost, core.RouteStream, 200, ""},
		{http.MethodHead, "/", 200, ""},
		{http.MethodGet, "/health", 200, ""},
		{http.MethodGet, "/healthz", 200, ""},
		{http.MethodPost, RouteBidi, 501, ""},
		{http.MethodGet, core.RouteUnary, 405, "POST"},
		{http.MethodPost, "/healthz", 405, "GET, HEAD"},
		{http.MethodPost, "/nope", 404, ""},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
		if w.Code != tt.status || w.Header().Get("Allow") != tt.allow {
			t.Errorf("%s %s = %d (Allow %q), want %d (Allow %q)", tt.method, tt.path, w.Code, w.Header().Get("Allow"), tt.status, tt.allow)
		}
	}
	want := []string{core.RouteUnary + " unary", core.RouteStream + " stream", "health /", "health /health", "health /healthz",
		"refused " + RouteBidi, "refused " + core.RouteUnary, "refused /healthz", "refused "}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("served %q, want %q", got, want)
	}
}

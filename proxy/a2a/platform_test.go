package a2a

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// onPlatform is what Agent Platform injects into the container.
var onPlatform = map[string]string{
	core.EnvEngineID: "1234567890", core.EnvEngineLocation: "europe-west4", core.EnvProject: "my-proj",
}

// platformURL is the passthrough URL of the mount /a2a for onPlatform.
const platformURL = "https://europe-west4-aiplatform.googleapis.com/reasoningEngines/v1/projects/my-proj/locations/europe-west4/reasoningEngines/1234567890/api/a2a"

// cardFields are a card's URLs: its url and every interface's.
type cardFields struct {
	URL                  string
	AdditionalInterfaces []struct{ URL string }
	SupportedInterfaces  []struct{ URL string }
}

// urls are the card's url and its interfaces', which must all agree.
func (c cardFields) urls(t *testing.T) string {
	t.Helper()
	if len(c.AdditionalInterfaces) != 2 || len(c.SupportedInterfaces) != 4 {
		t.Fatalf("card interfaces: %+v", c)
	}
	for _, u := range []string{c.AdditionalInterfaces[0].URL, c.SupportedInterfaces[0].URL, c.SupportedInterfaces[1].URL} {
		if u != c.URL {
			t.Errorf("an interface's url %q is not the card's %q", u, c.URL)
		}
	}
	return c.URL
}

// TestCardOnPlatform: a mounted A2A door on Agent Platform (its variables
// set) advertises the platform's passthrough URL of its mount, in its url
// and every interface, as served through the mount over HTTP; a
// configured url wins; a variable that is not a plain token, or a door
// on a listener of its own (which the passthrough does not reach), keeps
// the address the card was asked on.
func TestCardOnPlatform(t *testing.T) {
	tests := []struct {
		name, section string
		env           map[string]string
		want          string // "" for the address asked on, then the mount
	}{
		{"mounted on the platform", "{mount: /a2a, method: query}", onPlatform, platformURL},
		{"a configured url wins", "{mount: /a2a, method: query, url: \"https://agents.example/a2a\"}", onPlatform, "https://agents.example/a2a"},
		{"off the platform", "{mount: /a2a, method: query}", map[string]string{core.EnvProject: "my-proj"}, ""},
		{"an id that is no token", "{mount: /a2a, method: query}",
			map[string]string{core.EnvEngineID: "1/../2", core.EnvEngineLocation: "europe-west4", core.EnvProject: "my-proj"}, ""},
		{"its own listener", "{listen: \"127.0.0.1:0\", method: query}", onPlatform, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("t.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {query: {}}\nprotocols:\n  a2a: "+tt.section+"\n"), Protocol.Kind)
			if err != nil {
				t.Fatal(err)
			}
			section := cfg.Protocols.Door(Name)
			d := newDoor(t, cfg, Protocol.Options(section, core.Host{Getenv: func(name string) string { return tt.env[name] }}))
			s := &proxy.Server{Config: cfg}
			h := s.HandlerFor(d)
			path := RouteCard
			if section.Mount != "" {
				h, path = proxy.Mounted(http.NotFoundHandler(), []proxy.Mount{{Path: section.Mount, Claims: cfg.Claims(section), Handler: h}}), section.Mount+RouteCard
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			resp, err := srv.Client().Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			var c cardFields
			err = json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
			}
			want := tt.want
			if want == "" {
				want = srv.URL + section.Mount
				if section.Mount == "" {
					want += RouteRPC
				}
			}
			if got := c.urls(t); got != want {
				t.Errorf("the card's url = %q, want %q", got, want)
			}
		})
	}
}

// TestCardOfOnPlatform: sidecar a2a-card's card for a mounted door is the
// platform's passthrough URL where its variables are set; --url and
// protocols.a2a.url win; off the platform it is localhost and the
// platform listener's port, then the mount.
func TestCardOfOnPlatform(t *testing.T) {
	parse := func(section string) *config.Config {
		cfg, err := config.Parse("t.yaml", []byte("listen: \":8080\"\nupstream: {url: \"http://127.0.0.1:1\"}\nmethods: {query: {}}\nprotocols:\n  a2a: "+section+"\n"), Protocol.Kind)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	env := func(name string) string { return onPlatform[name] }
	tests := []struct {
		name, section, url string
		getenv             func(string) string
		want               string
	}{
		{"on the platform", "{mount: /a2a, method: query}", "", env, platformURL},
		{"--url wins", "{mount: /a2a, method: query}", "https://flag.example/a2a", env, "https://flag.example/a2a"},
		{"url wins", "{mount: /a2a, method: query, url: \"https://agents.example/a2a\"}", "", env, "https://agents.example/a2a"},
		{"off the platform", "{mount: /a2a, method: query}", "", func(string) string { return "" }, "http://localhost:8080/a2a"},
		{"no environment", "{mount: /a2a, method: query}", "", nil, "http://localhost:8080/a2a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := CardOf(parse(tt.section), tt.url, tt.getenv)
			if err != nil {
				t.Fatal(err)
			}
			var c cardFields
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			if got := c.urls(t); got != tt.want {
				t.Errorf("CardOf url = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCardURLPrefix: the card's url takes a trusted proxy's first X-Forwarded-Prefix
// before the endpoint's path (sidecar dev's passthrough sends its own),
// only when it is a plain path; a mounted door's endpoint follows it.
func TestCardURLPrefix(t *testing.T) {
	const through = "/reasoningEngines/v1/projects/local/locations/us-central1/reasoningEngines/local/api"
	cardURL := func(d *Door, path, prefix string) string {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Host = "127.0.0.1:8081"
		if prefix != "" {
			r.Header.Set("X-Forwarded-Prefix", prefix)
		}
		w := httptest.NewRecorder()
		d.Handler(func(string, bool) http.Handler { return http.NotFoundHandler() }, http.NotFoundHandler(), writeRefusal(d)).ServeHTTP(w, r)
		var c cardFields
		if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil {
			t.Fatalf("GET %s: %v %s", path, err, w.Body)
		}
		return c.urls(t)
	}
	own := newDoor(t, testConfig(t), Options{Method: "query", Public: trustedPeers})
	mounted := newDoor(t, testConfig(t), Options{Method: "query", Mount: "/a2a", Public: trustedPeers})
	long := "/" + strings.Repeat("a", 1100)
	tests := []struct {
		d            *Door
		prefix, want string
	}{
		{own, through, "http://127.0.0.1:8081" + through + "/"},
		{mounted, through, "http://127.0.0.1:8081" + through + "/a2a"},
		{mounted, through + ", /inner", "http://127.0.0.1:8081" + through + "/a2a"},
		{mounted, "", "http://127.0.0.1:8081/a2a"},
		{mounted, "/x/../y", "http://127.0.0.1:8081/a2a"},
		{mounted, "/x/./y", "http://127.0.0.1:8081/a2a"},
		{mounted, "/x/", "http://127.0.0.1:8081/a2a"},
		{mounted, "//evil.example", "http://127.0.0.1:8081/a2a"},
		{mounted, "x", "http://127.0.0.1:8081/a2a"},
		{mounted, "/x?y", "http://127.0.0.1:8081/a2a"},
		{mounted, "/a b", "http://127.0.0.1:8081/a2a"},
		{mounted, "/a%2Fb", "http://127.0.0.1:8081/a2a"},
		{mounted, long, "http://127.0.0.1:8081/a2a"},
	}
	for _, tt := range tests {
		if got := cardURL(tt.d, RouteCard, tt.prefix); got != tt.want {
			t.Errorf("card url with X-Forwarded-Prefix %.40q (mount %q) = %q, want %q", tt.prefix, tt.d.opts.Mount, got, tt.want)
		}
	}
}

package platform

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// RouteBidi is the platform's route for api_mode bidi_stream methods.
const RouteBidi = "/api/bidi_reasoning_engine"

// healthRoutes all answer as /healthz: the platform has been seen probing
// "/" and "/health" too, and killing a container that answers a redirect.
var healthRoutes = []string{"/healthz", "/health", "/"}

// Door is the Agent Platform front door (a proxy.Door): its zero value
// serves the contract; New's serves the keep-alive probe too, when the
// map has one.
type Door struct {
	// keepAlivePath is where the keep-alive probe is served ("": none),
	// keepAlive what answers it.
	keepAlivePath string
	keepAlive     keepAlive
	// mounted names the doors mounted on the door's listener and the
	// paths each claims there, for its 404s (mountedDoors); "" when none.
	mounted string
}

// Handler routes the contract: POST core.RouteUnary and core.RouteStream
// to the server's calls, GET and HEAD /healthz (and "/", "/health") to
// its health, GET and HEAD the keep-alive probe's path to it; it refuses
// RouteBidi (501), any other method on those routes (405) and every
// other path (404).
func (d Door) Handler(call func(route string, stream bool) http.Handler, health http.Handler, refuse core.Refuse) http.Handler {
	// SkipClean: a path is served as sent or not at all. mux would answer
	// "/./healthz", "//api/reasoning_engine" or an absolute-form target
	// with a 301 to the cleaned path, and a probe that gets a redirect
	// counts as failed.
	r := mux.NewRouter().SkipClean(true)
	r.Handle(core.RouteUnary, call(core.RouteUnary, false)).Methods(http.MethodPost)
	r.Handle(core.RouteStream, call(core.RouteStream, true)).Methods(http.MethodPost)
	r.HandleFunc(RouteBidi, func(w http.ResponseWriter, r *http.Request) { refuse(w, r, RouteBidi, BidiNotSupported) }).Methods(http.MethodPost)
	for _, path := range healthRoutes {
		r.Handle(path, health).Methods(http.MethodGet, http.MethodHead)
	}
	if d.keepAlivePath != "" {
		r.Handle(d.keepAlivePath, d.keepAlive).Methods(http.MethodGet, http.MethodHead)
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, "", core.NoRoute(r.URL.Path, serves+d.mounted))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := http.MethodPost
		if slices.Contains(healthRoutes, r.URL.Path) || r.URL.Path == d.keepAlivePath {
			allow = "GET, HEAD"
		}
		w.Header().Set("Allow", allow)
		// mux calls it only for a path it routes: one of the door's.
		refuse(w, r, r.URL.Path, core.NotAllowed(r.Method, r.URL.Path, allow))
	})
	return r
}

// Public reports whether r is one of the platform's probes, GET or HEAD
// of a health route ("/" among them) or of the keep-alive probe
// (proxy.Public): a probe carries no token and must never be answered
// 429, so a door an auth section protects, or a spent per-caller quota,
// answers it all the same.
func (d Door) Public(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return slices.Contains(healthRoutes, r.URL.Path) || d.keepAlivePath != "" && r.URL.Path == d.keepAlivePath
}

// serves is what the door serves, for its 404s.
const serves = "POST " + core.RouteUnary + ", POST " + core.RouteStream + " and GET /healthz"

// mountedDoors is what a 404 of the platform's listener adds about the
// doors cfg mounts on it: each door's name and the paths it claims
// there (config.Config.Claims), "; mounted here: a2a at /a2a/…, openai at
// /v1/…", or "" when none is mounted. A caller who asked for a path
// nobody serves most likely wanted one of them. It says only what the
// listener already answers on: no other setting of a door, nor where
// the agent is.
func mountedDoors(cfg *config.Config) string {
	var doors []string
	for _, door := range cfg.Mounted() {
		var paths []string
		for _, c := range cfg.Claims(door) {
			paths = append(paths, c.String())
		}
		doors = append(doors, door.Name+" at "+strings.Join(paths, ", "))
	}
	if len(doors) == 0 {
		return ""
	}
	return "; mounted here: " + strings.Join(doors, "; ")
}

// Open decodes the envelope (Decode) and looks its class_method up on the
// route, unary or streaming; a method the route does not serve is
// MethodNotFound. The door itself writes the answer (Door is a
// core.Writer): a call on core.RouteStream streams, the others are unary.
func (Door) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	stream := route == core.RouteStream
	env, err := Decode(body, stream)
	if err != nil {
		return core.Exchange{}, err
	}
	m := cfg.Lookup(env.Method, stream)
	if m == nil {
		return core.Exchange{Call: core.Call{Name: env.Method}}, MethodNotFound(cfg, env.Method, stream)
	}
	c := core.Call{Method: m, Name: env.Method, Input: core.Input{Raw: env.Input}, Header: r.Header, Route: route}
	return core.Exchange{Call: c, Stream: stream, Writer: Door{}}, nil
}

// Protocol names the door for the call's log line and metrics.
func (Door) Protocol() string { return Name }

// Encoder is the ndjson writer of one stream (NewNDJSON).
func (Door) Encoder(w http.ResponseWriter) core.Encoder { return NewNDJSON(w) }

var _ core.Writer = Door{}

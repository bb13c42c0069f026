package livedoor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/live"
)

// Route is the door's one route, its root: the mount path, when mounted.
const Route = "/"

// Door is the live door for the bidi methods of the map. Build it with
// New.
type Door struct {
	method string // the section's method
	raw    bool   // framing: raw
}

// Protocol names the door for the conversation's log line and metrics.
func (*Door) Protocol() string { return Name }

// Handler serves GET at the root as the door's conversations; it refuses
// every other request, a 404 or 405 with {"detail": …}, the platform's
// shape.
func (d *Door) Handler(call func(route string, stream bool) http.Handler, _ http.Handler, refuse core.Refuse) http.Handler {
	talk := call(Route, false)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != Route:
			refuse(w, r, "", core.NoRoute(r.URL.Path, "GET "+Route+" (a WebSocket)"))
		case r.Method != http.MethodGet:
			w.Header().Set("Allow", http.MethodGet)
			refuse(w, r, Route, core.NotAllowed(r.Method, Route, http.MethodGet))
		default:
			talk.ServeHTTP(w, r)
		}
	})
}

// Open refuses a call: the door carries only conversations, which the
// Server opens with Converse or Setup.
func (d *Door) Open(*config.Config, string, *http.Request, []byte) (core.Exchange, error) {
	return core.Exchange{Call: core.Call{Name: d.method}}, &core.RequestError{Status: http.StatusNotFound, Msg: "the live door carries conversations only"}
}

// WriteError answers an upgrade refused before it was made: its status
// with {"detail": message}, as the platform's port answers.
func (*Door) WriteError(w http.ResponseWriter, f core.Failure) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	b, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{f.Message})
	w.WriteHeader(f.Status)
	w.Write(append(b, '\n'))
}

// Converses reports whether route is the door's root (proxy.Conversing).
func (d *Door) Converses(route string) bool { return route == Route }

// Opens reports whether a conversation on route names its method in its
// first frame (proxy.Opening): under the platform's framing, its setup.
func (d *Door) Opens(route string) bool { return !d.raw && route == Route }

// Converse opens a conversation under the raw framing: the door's
// method, its path's {field}s filled from the upgrade URL's query
// parameters of the same names.
func (d *Door) Converse(cfg *config.Config, route string, r *http.Request) (core.Call, error) {
	m := cfg.Bidi(d.method)
	if m == nil {
		return core.Call{}, &core.RequestError{Status: http.StatusNotFound, Msg: fmt.Sprintf("method %q is not a bidi method of the map", d.method)}
	}
	return core.Call{Method: m, Name: d.method, Header: r.Header, Input: core.QueryInput(m, r.URL.Query()), Route: route}, nil
}

// Setup opens a conversation under the platform's framing of its setup
// frame (proxy.Opening): the class_method it names (none: the door's
// method), its input the agent's first frame and what fills the method's
// path {field}s, and the caller's side in the platform's framing.
func (d *Door) Setup(cfg *config.Config, route string, r *http.Request, caller *websocket.Conn, typ websocket.MessageType, data []byte) (core.Call, live.Conn, error) {
	s, err := parseSetup(typ, data)
	if err != nil {
		return core.Call{}, nil, err
	}
	name := s.classMethod
	if name == "" {
		name = d.method
	}
	m := cfg.Bidi(name)
	if m == nil {
		return core.Call{Name: name}, nil, &live.FrameError{Code: websocket.StatusPolicyViolation,
			Reason: fmt.Sprintf("class_method %q is not a bidi method of the map", name)}
	}
	call := core.Call{Method: m, Name: name, Header: r.Header, Route: route}
	if len(s.input) > 0 && s.input[0] == '{' {
		if in, err := core.ParseInput(s.input); err == nil {
			call.Input = in
		}
	}
	return call, &platformConn{c: caller, first: s.input}, nil
}

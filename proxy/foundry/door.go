package foundry

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// The protocol's routes.
const (
	RouteInvocations = "/invocations"
	RouteReadiness   = "/readiness"
)

// The protocol's headers and query parameter.
const (
	HeaderInvocationID = "X-Agent-Invocation-Id"
	HeaderSessionID    = "X-Agent-Session-Id"
	QuerySessionID     = "agent_session_id"
	// EnvSessionID names the session's environment variable.
	EnvSessionID = "FOUNDRY_AGENT_SESSION_ID"
)

// passed are the request headers the agent receives as they are: the
// resolved ids, and the call and, last, user ids of container protocol
// 2.0.0. The platform sets the user id in front of an open door; in front
// of a door the auth section protects nothing does, so a caller's is not
// passed (auth.headers names the verified caller's).
var passed = []string{HeaderInvocationID, HeaderSessionID, "X-Agent-Foundry-Call-Id", "X-Agent-User-Id"}

// Door is the Foundry front door for one method of the map. Build it with
// New.
type Door struct {
	method  string
	stream  bool
	session string // $FOUNDRY_AGENT_SESSION_ID
}

// Protocol names the door for the call's log line and metrics.
func (*Door) Protocol() string { return Name }

// Public reports whether r is the hosting platform's health probe, GET
// or HEAD /readiness (proxy.Public): it carries no token, so a door an
// auth section protects answers it all the same.
func (*Door) Public(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path == RouteReadiness
}

// Handler routes POST /invocations to the server's calls, with the ids
// resolved first, and GET /readiness to its health; it refuses every
// other request, a 404 or 405.
func (d *Door) Handler(call func(route string, stream bool) http.Handler, health http.Handler, refuse core.Refuse) http.Handler {
	r := mux.NewRouter().SkipClean(true)
	r.Handle(RouteInvocations, d.ids(call(RouteInvocations, d.stream))).Methods(http.MethodPost)
	r.Handle(RouteReadiness, health).Methods(http.MethodGet, http.MethodHead)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, "", core.NoRoute(r.URL.Path, "POST "+RouteInvocations+" and GET "+RouteReadiness))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := http.MethodPost
		if r.URL.Path == RouteReadiness {
			allow = "GET, HEAD"
		}
		w.Header().Set("Allow", allow)
		// mux calls it only for a path it routes: one of the door's.
		refuse(w, r, r.URL.Path, core.NotAllowed(r.Method, r.URL.Path, allow))
	})
	return r
}

// ids resolves the call's invocation and session ids, puts them on the
// reply, whatever it is, and in the request's header, for the agent.
func (d *Door) ids(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inv := r.Header.Get(HeaderInvocationID)
		if inv == "" || !config.ValidHeaderValue(inv) {
			inv = core.NewID()
		}
		session := r.URL.Query().Get(QuerySessionID)
		if session == "" || !config.ValidHeaderValue(session) {
			session = d.session
		}
		if session == "" {
			session = core.NewID()
		}
		r.Header.Set(HeaderInvocationID, inv)
		r.Header.Set(HeaderSessionID, session)
		w.Header().Set(HeaderInvocationID, inv)
		w.Header().Set(HeaderSessionID, session)
		next.ServeHTTP(w, r)
	})
}

// Open makes the body the input of the door's method, streamed when the
// method streams: a JSON body as it is (compacted in place), any other
// body, the empty one included, a JSON string of its text (textInput: no
// HTML escaping, within limits.request_bytes). A body that is not UTF-8
// is a 400.
func (d *Door) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	refused := core.Exchange{Call: core.Call{Name: d.method}}
	var in []byte
	switch {
	case json.Valid(body):
		var ok bool
		if in, ok = rawjson.AppendCompact(body[:0], body); !ok {
			return refused, &core.RequestError{Msg: "the JSON body nests too deeply"}
		}
	case utf8.Valid(body):
		var err error
		if in, err = textInput(body, cfg.Limits.RequestBytes); err != nil {
			return refused, err
		}
	default:
		return refused, &core.RequestError{Msg: "the request body is neither JSON nor UTF-8 text"}
	}
	m := cfg.Lookup(d.method, d.stream)
	if m == nil {
		return refused, &core.RequestError{Status: http.StatusNotFound, Msg: fmt.Sprintf("method %q is not in the method map", d.method)}
	}
	names := passed
	if cfg.Auth.Protects(Name) {
		names = passed[:len(passed)-1]
	}
	c := core.Call{Method: m, Name: d.method, Input: core.Input{Raw: in}, Header: r.Header, Pass: core.Passed(r.Header, names), Route: route}
	return core.Exchange{Call: c, Stream: d.stream, Writer: d}, nil
}

// WriteOutput answers a unary call with its output as it is, 200 JSON,
// flushed at once.
func (*Door) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	n, err := w.Write(out)
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	return n, err
}

// errorBody is a failure's JSON: {"error": {"code": <reason>, "message": …}}.
func errorBody(f core.Failure) []byte {
	type detail struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		Error detail `json:"error"`
	}{detail{f.Reason, f.Message}})
	return b
}

// WriteError answers a call that failed before its first byte: its status
// with {"error": {"code": <reason>, "message": …}}.
func (*Door) WriteError(w http.ResponseWriter, f core.Failure) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	w.WriteHeader(f.Status)
	w.Write(errorBody(f))
}

// Encoder is the SSE writer of one stream: one data event per record,
// flushed; a failure after the first byte is a last data event with the
// error body.
func (*Door) Encoder(w http.ResponseWriter) core.Encoder {
	return frames.New(w, "text/event-stream", "data: ", "\n\n", frames.Hooks{Fail: errorBody})
}

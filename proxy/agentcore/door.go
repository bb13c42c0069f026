package agentcore

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// The runtime's routes.
const (
	RouteInvocations = "/invocations"
	RoutePing        = "/ping"
	// RouteWS is the runtime's WebSocket: a conversation with the bidi
	// method the door's ws option names.
	RouteWS = "/ws"
)

// Door is the AgentCore front door for one method of the map. Build it
// with New.
type Door struct {
	method string
	stream bool
	ws     string // the bidi method of /ws; "": not served
	ping   *pinger
}

// Protocol names the door for the call's log line and metrics.
func (*Door) Protocol() string { return Name }

// Public reports whether r is the runtime's health probe, GET or HEAD
// /ping (proxy.Public): it carries no token, so a door an auth section
// protects answers it all the same.
func (*Door) Public(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path == RoutePing
}

// Handler routes POST /invocations to the server's calls and GET /ping to
// the ping; it refuses every other request, a 404 or 405 with
// {"error": …}.
func (d *Door) Handler(call func(route string, stream bool) http.Handler, _ http.Handler, refuse core.Refuse) http.Handler {
	r := mux.NewRouter().SkipClean(true)
	r.Handle(RouteInvocations, call(RouteInvocations, d.stream)).Methods(http.MethodPost)
	r.HandleFunc(RoutePing, d.ping.serve).Methods(http.MethodGet, http.MethodHead)
	served := "POST " + RouteInvocations + " and GET " + RoutePing
	if d.ws != "" {
		r.Handle(RouteWS, call(RouteWS, false)).Methods(http.MethodGet)
		served = "POST " + RouteInvocations + ", GET " + RoutePing + " and GET " + RouteWS
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, "", core.NoRoute(r.URL.Path, served))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := http.MethodPost
		switch r.URL.Path {
		case RoutePing:
			allow = "GET, HEAD"
		case RouteWS:
			allow = http.MethodGet
		}
		w.Header().Set("Allow", allow)
		// mux calls it only for a path it routes: one of the door's.
		refuse(w, r, r.URL.Path, core.NotAllowed(r.Method, r.URL.Path, allow))
	})
	return r
}

// The SDK's messages for a body that is no JSON; the door's failure
// message is one of them, ": ", and the details.
const (
	invalidJSON     = "Invalid JSON"
	invalidEncoding = "Invalid encoding"
)

// Open makes the payload, any JSON value, compacted in place, the input
// of the door's method, streamed when the method streams. A body that is
// not UTF-8 or not JSON is a 400.
func (d *Door) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	refused := core.Exchange{Call: core.Call{Name: d.method}}
	if !utf8.Valid(body) {
		return refused, &core.RequestError{Msg: invalidEncoding + ": the request body is not UTF-8"}
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v) // for its message
		return refused, &core.RequestError{Msg: invalidJSON + ": " + err.Error()}
	}
	in, ok := rawjson.AppendCompact(body[:0], body)
	if !ok {
		return refused, &core.RequestError{Msg: invalidJSON + ": the payload nests too deeply"}
	}
	m := cfg.Lookup(d.method, d.stream)
	if m == nil {
		return refused, &core.RequestError{Status: http.StatusNotFound, Msg: fmt.Sprintf("method %q is not in the method map", d.method)}
	}
	names := passed
	if cfg.Auth.Protects(Name) {
		names = passed[:len(passed)-1]
	}
	c := core.Call{Method: m, Name: d.method, Input: core.Input{Raw: in}, Header: r.Header, Pass: core.Passed(r.Header, names, customPrefix), Route: route}
	return core.Exchange{Call: c, Stream: d.stream, Writer: d}, nil
}

// Converses reports whether route is /ws, the conversations of the bidi
// method the door's ws option names (proxy.Conversing).
func (d *Door) Converses(route string) bool { return d.ws != "" && route == RouteWS }

// Converse opens a conversation on /ws: the door's bidi method, with the
// runtime's headers passed to the agent as for /invocations (the session
// id picks the conversation's microVM), its path's {field}s filled from
// the upgrade URL's query parameters of the same names.
func (d *Door) Converse(cfg *config.Config, route string, r *http.Request) (core.Call, error) {
	m := cfg.Bidi(d.ws)
	if m == nil {
		return core.Call{}, &core.RequestError{Status: http.StatusNotFound, Msg: fmt.Sprintf("method %q is not a bidi method of the map", d.ws)}
	}
	names := passed
	if cfg.Auth.Protects(Name) {
		names = passed[:len(passed)-1]
	}
	return core.Call{Method: m, Name: d.ws, Header: r.Header, Pass: core.Passed(r.Header, names, customPrefix), Input: core.QueryInput(m, r.URL.Query()), Route: route}, nil
}

// passed are the runtime's headers the agent receives as they are
// (core.Call.Pass), with its custom headers (customPrefix), besides the
// sidecar's allow-list (traceparent, tracestate, X-Request-Id): the
// session and request ids, X-Amzn-Trace-Id, baggage and, last, the user
// id. The runtime sets the user id in front of an open door; in front of
// a door the auth section protects nothing does, so a caller's is not
// passed (auth.headers names the verified caller's). Credentials
// (Authorization, the workload access token) reach it only when listed in
// headers.forward.
var passed = []string{
	"X-Amzn-Bedrock-Agentcore-Runtime-Session-Id",
	"X-Amzn-Bedrock-Agentcore-Runtime-Request-Id",
	"X-Amzn-Trace-Id",
	"Baggage",
	"X-Amzn-Bedrock-Agentcore-Runtime-User-Id",
}

// customPrefix starts the custom headers the runtime passes through.
const customPrefix = "X-Amzn-Bedrock-Agentcore-Runtime-Custom-"

// WriteOutput answers a unary call with its output as it is: 200 JSON, no
// envelope, flushed at once.
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

// WriteError answers a call that failed before its first byte: its status
// with {"error": message}, or {"error": "Invalid JSON", "details": …} for a
// payload that is no JSON, as the SDK answers.
func (*Door) WriteError(w http.ResponseWriter, f core.Failure) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	var b []byte
	msg, details, found := strings.Cut(f.Message, ": ")
	if f.Reason == "BAD_REQUEST" && found && (msg == invalidJSON || msg == invalidEncoding) {
		b, _ = json.Marshal(struct {
			Error   string `json:"error"`
			Details string `json:"details"`
		}{msg, details})
	} else {
		b, _ = json.Marshal(struct {
			Error string `json:"error"`
		}{f.Message})
	}
	w.WriteHeader(f.Status)
	w.Write(b)
}

// Encoder is the SSE writer of one stream (frames.Writer): one data event
// per record, flushed, and the SDK's final event for a failure after the
// first byte.
func (*Door) Encoder(w http.ResponseWriter) core.Encoder {
	return frames.New(w, "text/event-stream", "data: ", "\n\n", frames.Hooks{Fail: streamError})
}

// streamError is the SDK's final event for an exception mid-stream;
// error_type is the failure's reason (the SDK's is the exception class).
func streamError(f core.Failure) []byte {
	b, _ := json.Marshal(struct {
		Error     string `json:"error"`
		ErrorType string `json:"error_type"`
		Message   string `json:"message"`
	}{f.Message, f.Reason, "An error occurred during streaming"})
	return b
}

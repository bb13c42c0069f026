package proxy

import (
	"net/http"
	"slices"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Door is a front door: one protocol's way in. It routes its requests,
// opens each call's request into an exchange (the call for the agent and
// the writers of its answer), and answers in its wire format. Everything
// between is the Server's, the same for every door: the in-flight count,
// the body limit and reading the body, the concurrency queue, the
// readiness wait, drain, the call's log line and metrics, and mapping an
// error to a core.Failure. proxy/platform, the Agent Platform contract,
// is the first door; a new protocol is one more implementation.
//
// A door uses only core's types and the standard library's, so it need
// not import proxy: the program hands the Server its door. A door never
// reads or replaces the request body: the Server reads it, once, under
// the shared limits, and hands it to Open.
type Door interface {
	// Handler is the door's public surface: its own router, where each
	// route of a call is served by call(route, stream) — the Server's
	// handler for calls on that route, stream saying whether they stream
	// until their request is opened (for the log line and metrics of one
	// refused before) — and each health route by health (200 while the
	// agent is ready, else 503). Every other request the door refuses
	// (404, 405, its own 501s, a key it does not take) with refuse,
	// which writes the refusal and gives it a call's log line and
	// metrics, without a concurrency slot or reading its body. A Host or
	// Origin only a web page sends never reaches Handler: the Server
	// refuses it first, for every door (HandlerFor), as it refuses a
	// call whose body is not JSON on a route the door declares takes only
	// JSON (JSONBody; OriginEverywhere too: guard.go).
	Handler(call func(route string, stream bool) http.Handler, health http.Handler, refuse core.Refuse) http.Handler
	// Open decodes the body of a call's request on route into its
	// exchange: the call for the agent (its Method, looked up in cfg,
	// Name, Input.Raw, Header, Pass and Route), whether it streams, and
	// its writers. body is the whole request body, read and bounded by the
	// Server; the door may reuse its memory. The Server then indexes the
	// input when the method reads fields and sets Notes. A request the
	// door answers without the agent (A2A's tasks/get) returns a
	// *core.Answer as the error: the Server writes it as it is.
	Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error)
	// WriteError answers a request that failed before it was opened: its
	// body unread (busy, draining, over the limit) or unreadable, or
	// refused by the door (a Failure passed to refuse).
	WriteError(w http.ResponseWriter, f core.Failure)
}

// Named is a Door that names its protocol, one of Server.Protocols.
type Named interface {
	Protocol() string
}

// ProtocolOf is door's protocol: its name when it is a Named door with one
// of protocols (Server.Protocols, the registered doors' names), else
// "other". The set is closed: it is a metrics label.
func ProtocolOf(door Door, protocols []string) string {
	if n, ok := door.(Named); ok {
		if p := n.Protocol(); slices.Contains(protocols, p) {
			return p
		}
	}
	return "other"
}

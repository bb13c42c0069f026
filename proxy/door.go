package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Door is a front door: one protocol's way in. It routes its requests,
// turns a call's request into a core.Call, and writes replies and failures
// in its wire format. Everything between is the Server's, the same for
// every door: the in-flight count, the body limit, the concurrency queue,
// the readiness wait, drain, the call's log line and metrics, and mapping
// an error to a core.Failure. proxy/platform, the Agent Platform
// contract, is the first door; a new protocol is one more implementation.
//
// A door uses only core's types and the standard library's, so it need
// not import proxy: the program hands the Server its door.
type Door interface {
	// Handler is the door's public surface: its own router, where each
	// route of a call is served by call(route, stream) — the Server's
	// handler for calls on that route, streaming or not — and each health
	// route by health (200 while the agent is ready, else 503). The door
	// answers every other request itself (404, 405, its own 501s).
	Handler(call func(route string, stream bool) http.Handler, health http.Handler) http.Handler
	// Call decodes the body of a call's request on route into the call
	// for the agent: its Method (looked up in cfg), Name, Input.Raw,
	// Header and Route. body is the whole request body, read and bounded
	// by the Server; the door may reuse its memory. The Server then
	// indexes the input when the method reads fields and sets Notes. On
	// error, Name is the method called if the door read that far, for the
	// log line.
	Call(cfg *config.Config, route string, stream bool, r *http.Request, body []byte) (core.Call, error)
	// WriteOutput answers a unary call with the agent's output, flushed at
	// once. It returns the bytes written.
	WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error)
	// Encoder is the writer of one stream's records to w.
	Encoder(w http.ResponseWriter) core.Encoder
	// WriteError answers a call that failed before its first byte.
	WriteError(w http.ResponseWriter, f core.Failure)
}

// Opener is a Door whose requests on a route are exchanges (issue 19's
// seam, which every door is to move to): how a request is answered
// depends on the request itself (A2A's JSON-RPC id and task), and a
// request may be answered by the door without the agent (A2A's tasks/get).
// The Server still reads the body, under the shared limits and after the
// concurrency slot for a large one; Open decodes it in place of Call, and
// the exchange's writers answer in place of the Door's. A door that
// answers without the agent returns a *core.Answer as the error. The Door
// itself never reads or replaces the request body.
type Opener interface {
	Open(cfg *config.Config, route string, stream bool, r *http.Request, body []byte) (core.Call, core.Exchange, error)
}

// doorExchange is the exchange of a Door that is no Opener: its own
// writers, the Server's context.
type doorExchange struct{ Door }

func (doorExchange) Context(ctx context.Context) context.Context { return ctx }

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

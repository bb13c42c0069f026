package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/hostcheck"
)

// The guard every listener shares (hostcheck) refuses what only a web
// page of another site would send. A door tightens it by what it
// declares beside its Door methods:
//
//   - OriginEverywhere() bool: the Origin rule holds on every connection,
//     not only on loopback ones (MCP, OpenAI);
//   - JSONBody(route string) bool: a call on route takes only a body
//     declared JSON (A2A, MCP, OpenAI). A page can POST text/plain, a
//     form or an untyped body to any address without a CORS preflight
//     (blind CSRF), and no door answers a preflight; the clients of these
//     protocols all send application/json. The runtimes' contracts pass
//     bodies whatever their type (the Agent Platform's front end sends
//     "application/json,application/json", AgentCore's and Foundry's
//     payloads are the caller's bytes), so their doors do not ask.

// guardOf is the guard of door's requests: Config.TrustedHosts, and
// Origin held everywhere when the door says so.
func (s *Server) guardOf(door Door) hostcheck.Guard {
	var g hostcheck.Guard
	if o, ok := door.(interface{ OriginEverywhere() bool }); ok {
		g.OriginEverywhere = o.OriginEverywhere()
	}
	if s.Config != nil {
		g.Trusted = s.Config.TrustedHosts
	}
	return g
}

// jsonOnly reports whether door takes only a JSON body on route.
func jsonOnly(door Door, route string) bool {
	j, ok := door.(interface{ JSONBody(route string) bool })
	return ok && j.JSONBody(route)
}

// jsonBody is call behind the check of its Content-Type: a request that
// changes something (every method but GET, HEAD and OPTIONS) whose body
// is not declared JSON (hostcheck.JSONType) is refused 415 with refuse,
// on route, in the door's shape: before its body is read and without a
// slot, logged and counted as every refusal.
func jsonBody(route string, refuse core.Refuse, call http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header["Content-Type"]; !hostcheck.Safe(r.Method) && !hostcheck.JSONType(ct) {
			refuse(w, r, route, NotJSON(ct))
			return
		}
		call.ServeHTTP(w, r)
	})
}

// NotJSON is the 415 of a call whose Content-Type (its header lines, ct)
// is not JSON, reason UNSUPPORTED_MEDIA_TYPE.
func NotJSON(ct []string) core.Failure {
	got := "none"
	if len(ct) > 0 {
		got = strconv.Quote(core.Clip(strings.Join(ct, ", ")))
	}
	return core.Failure{Status: http.StatusUnsupportedMediaType, Reason: "UNSUPPORTED_MEDIA_TYPE", Outcome: metrics.BadRequest,
		Message: "Content-Type " + got + " is not JSON: send the body with Content-Type: application/json"}
}

// Guard is h behind the Host and Origin check every door makes
// (hostcheck, with Config.TrustedHosts), for a listener that is not a
// door: the admin listener, whose /metrics and /healthz a page under a
// rebinding name on the same machine could otherwise read (the agent's
// address and readiness among them). A refusal is a plain-text 403.
func (s *Server) Guard(h http.Handler) http.Handler {
	var g hostcheck.Guard
	if s.Config != nil {
		g.Trusted = s.Config.TrustedHosts
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := g.Check(r); !ok {
			http.Error(w, f.Message, f.Status)
			return
		}
		h.ServeHTTP(w, r)
	})
}

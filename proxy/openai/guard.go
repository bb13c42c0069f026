package openai

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// A web page in a browser on the door's machine is a way in that the
// api_key (optional, and never a browser's) does not close. So the door
// refuses what only a page would send, as sidecar dev's listener does:
//
//   - on a connection to a loopback address, a Host that is not a loopback
//     name with the listener's port: a page at a name its attacker's DNS
//     points to 127.0.0.1 (DNS rebinding) is same-origin with that name,
//     and could read the door's answers;
//   - a POST with an Origin header (browsers send one on every cross-origin
//     POST, no-cors ones included) that is not the request's own Host: a
//     page of another site can send a POST it cannot read, but the agent
//     would run it. The door answers no CORS preflight, so no page reads
//     an answer either way; clients (SDKs, curl, chat UIs' servers) send
//     no Origin.
//
// Behind a reverse proxy on the same machine, the proxy must send the
// door's own Host (nginx's default does; Caddy: header_up Host
// {upstream_hostport}).

// guard reports whether r may go on; if not, the failure to answer: 403.
func guard(r *http.Request) (core.Failure, bool) {
	if port, loopback := localPort(r); loopback && !ownHost(r.Host, port) {
		return forbidden("Host " + strconv.Quote(core.Clip(r.Host)) + " is not this listener's: on a loopback address it answers only " +
			"localhost, 127.0.0.1 and [::1] with its port " + port + " (a page under another name may be DNS rebinding)"), false
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		return core.Failure{}, true
	}
	if origin, sent := r.Header["Origin"]; sent && (len(origin) != 1 || !sameOrigin(origin[0], r.Host)) {
		return forbidden("Origin " + strconv.Quote(core.Clip(strings.Join(origin, ", "))) +
			" is another site's: a web page may not call this door (clients send no Origin)"), false
	}
	return core.Failure{}, true
}

func forbidden(msg string) core.Failure {
	return core.Failure{Status: http.StatusForbidden, Reason: "PERMISSION_DENIED", Message: msg, Outcome: metrics.BadRequest}
}

// localPort is the port the request came in on, and whether the
// connection's local address is a loopback one.
func localPort(r *http.Request) (string, bool) {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return "", false
	}
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "", false
	}
	ip := net.ParseIP(host)
	return port, ip != nil && ip.IsLoopback()
}

// ownHost reports whether host (a Host header) names the listener:
// localhost or a loopback IP address, with the listener's port (none:
// 80). An IP address cannot be rebound; localhost resolves to loopback
// without asking DNS (RFC 6761 §6.3; browsers hard-code it).
func ownHost(host, port string) bool {
	name, p, err := net.SplitHostPort(host)
	if err != nil {
		name, p = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "80"
	}
	if p != port {
		return false
	}
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether origin is a page of host itself: http or
// https, that host, nothing else.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Path != "" || u.RawQuery != "" {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

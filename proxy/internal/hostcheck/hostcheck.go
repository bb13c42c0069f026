// Package hostcheck holds the one copy of the checks every listener of
// the sidecar makes against what only a web page would send: a listener
// on loopback is reached by the pages of the browser on its machine.
//
//   - On a connection whose local address is loopback, the Host must be
//     localhost or a loopback IP address, with any port or none (or a
//     name the operator trusts): a page at a name its attacker's DNS
//     points to 127.0.0.1 (DNS rebinding) is same-origin with that name
//     and could read the answers; only its Host tells. An IP address
//     cannot be rebound; localhost resolves to loopback without asking
//     DNS (RFC 6761 §6.3; browsers hard-code it). The port proves
//     nothing, since a rebinding page never carries a loopback name,
//     and a tunnel changes it: kubectl port-forward and ssh -L reach
//     127.0.0.1:8080 with Host localhost:9000.
//   - A request that changes something (every method but GET, HEAD and
//     OPTIONS, and a WebSocket upgrade whatever its method: Upgrade) with an Origin other than its own page's under a loopback
//     name, or a trusted name's page (browsers send one on every
//     cross-origin POST, no-cors ones included): the page cannot read the
//     answer, but the agent would run the call. An Origin that merely
//     equals the Host proves nothing: after rebinding, the page's name
//     is the Host. On a loopback connection always; on others only for a
//     door that asks (Guard.OriginEverywhere).
//   - A call's body that is not declared JSON, on a door that asks
//     (JSONType): a page can POST text/plain, a form or a body of no type
//     without a CORS preflight, and the sidecar answers no preflight.
//
// Clients that are not browsers (SDKs, curl, gateways) send no Origin.
// The checks allocate nothing for a request that passes them without an
// Origin: they run on every call.
package hostcheck

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Guard is the check of every front door's requests, made by the Server
// before the door sees them.
type Guard struct {
	// Trusted are host names (lower case, no port) a loopback connection
	// may also carry as its Host, with any port, and whose pages may send
	// state-changing requests: config's trusted_hosts.
	Trusted []string
	// OriginEverywhere holds a request's Origin to the rule on every
	// connection, not only on loopback ones: for a door whose protocol
	// says so (MCP's transport) or whose callers are never pages behind
	// another front end (a door that is not a managed runtime's
	// contract). A runtime's front end (Agent Platform, AgentCore,
	// Foundry) may pass on the Origin of the page that called it, so
	// their doors hold it only on loopback, where no front end is.
	OriginEverywhere bool
}

// Check is the 403 refusing r, and false, when a web page of another
// site could have sent it; a zero Failure and true otherwise.
func (g Guard) Check(r *http.Request) (core.Failure, bool) {
	_, loopback := Local(r)
	if loopback && !LoopbackName(r.Host) && !g.trusted(r.Host) {
		return Forbidden("Host " + strconv.Quote(core.Clip(r.Host)) + " is not this listener's: on a loopback address it answers only " +
			"localhost and the loopback IPs (127.0.0.1, [::1]), with any port, and the names of trusted_hosts " +
			"(a page under another name may be DNS rebinding)"), false
	}
	if Safe(r.Method) && !Upgrade(r) || !loopback && !g.OriginEverywhere {
		return core.Failure{}, true
	}
	origin, sent := r.Header["Origin"]
	if sent && (len(origin) != 1 || !g.allowedOrigin(origin[0], r.Host)) {
		return Forbidden("Origin " + strconv.Quote(core.Clip(strings.Join(origin, ", "))) + " is another site's: a web page may " +
			strings.ToLower(core.Clip(r.Method)) + " here only from its own origin under localhost or a loopback IP, " +
			"or from a name of trusted_hosts (clients send no Origin)"), false
	}
	return core.Failure{}, true
}

// trusted reports whether host's name (a Host header's) is trusted.
func (g Guard) trusted(host string) bool {
	if len(g.Trusted) == 0 {
		return false
	}
	name, _, ok := Split(host)
	if !ok {
		return false
	}
	for _, t := range g.Trusted {
		if strings.EqualFold(name, t) {
			return true
		}
	}
	return false
}

// allowedOrigin reports whether origin, a request's Origin, is a page
// that may change something: its own (host, the request's Host) under a
// loopback name, which a rebinding page never has, or an http or https
// page of a trusted name. A page whose origin merely equals the Host is
// not enough: after rebinding, the attacker's name is the Host.
func (g Guard) allowedOrigin(origin, host string) bool {
	h, ok := OriginHost(origin, false)
	if !ok {
		return false
	}
	return strings.EqualFold(h, host) && LoopbackName(host) || g.trusted(h)
}

// Forbidden is the 403 of a refused Host or Origin.
func Forbidden(msg string) core.Failure {
	return core.Failure{Status: http.StatusForbidden, Reason: "PERMISSION_DENIED", Message: msg, Outcome: metrics.BadRequest}
}

// Safe reports whether method changes nothing (GET, HEAD, OPTIONS): one
// a foreign Origin may send.
func Safe(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// Upgrade reports whether r asks to become a WebSocket. A browser applies
// no same-origin policy to a WebSocket: the page of any site may open one
// and read what comes back (cross-site WebSocket hijacking), so an
// upgrade is held to the Origin rule of a request that changes
// something, though it is a GET.
func Upgrade(r *http.Request) bool {
	for _, v := range r.Header["Upgrade"] {
		for p := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(p), "websocket") {
				return true
			}
		}
	}
	return false
}

// Local is the port of the TCP connection r came in on, and whether its
// local address is a loopback one. The connection decides, not the
// listen address: a listener of every interface (":8080") is reached on
// 127.0.0.1 too. A Unix socket, which no page reaches, is 0 and false.
func Local(r *http.Request) (port int, loopback bool) {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if !ok {
		return 0, false
	}
	return a.Port, a.IP.IsLoopback()
}

// LoopbackName reports whether host (a Host header, or an Origin's host)
// names a loopback address, with any port or none: localhost or a
// loopback IP address (127.0.0.0/8, ::1). A name under localhost is not
// one: RFC 6761 only asks resolvers to keep it off DNS, and some send it
// (trusted_hosts can list one).
func LoopbackName(host string) bool {
	name, _, ok := Split(host)
	if !ok {
		return false
	}
	if strings.EqualFold(name, "localhost") {
		return true
	}
	if strings.Trim(name, "0123456789.") != "" && strings.IndexByte(name, ':') < 0 {
		return false // a name, not an address: ParseAddr's error would allocate
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Unmap().IsLoopback() && ip.Zone() == ""
}

// Split is a Host header's name (an IPv6 address without its brackets)
// and port (none: 80), without allocating; ok is false for a malformed
// one.
func Split(host string) (name string, port int, ok bool) {
	name, port = host, 80
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		var digits bool
		if port, digits = atoi(host[i+1:]); !digits {
			return "", 0, false
		}
		name = host[:i]
	}
	if strings.HasPrefix(name, "[") {
		if !strings.HasSuffix(name, "]") || strings.IndexByte(name, ':') < 0 {
			return "", 0, false // brackets hold an IPv6 address, nothing else
		}
		name = name[1 : len(name)-1]
	} else if strings.IndexByte(name, ':') >= 0 {
		return "", 0, false // an IPv6 address must be bracketed
	}
	return name, port, name != ""
}

// atoi is s as a port number, 1 to 65535.
func atoi(s string) (int, bool) {
	if len(s) == 0 || len(s) > 5 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n > 0 && n <= 65535
}

// JSONType reports whether values, a request's Content-Type header
// lines, all declare a JSON body: application/json or a structured
// application/<name>+json type (application/a2a+json), in any case,
// parameters such as charset allowed; a line may list several (the
// platform's front end sends "application/json,application/json"). No
// Content-Type, text/plain or a form type is not JSON: those are what a
// page sends without a CORS preflight.
func JSONType(values []string) bool {
	if len(values) == 0 {
		return false
	}
	for _, v := range values {
		for more := true; more; {
			var t string
			t, v, more = strings.Cut(v, ",")
			if !jsonMedia(t) {
				return false
			}
		}
	}
	return true
}

// jsonMedia reports whether t, one media type with its parameters, is
// a JSON one.
func jsonMedia(t string) bool {
	t, _, _ = strings.Cut(t, ";")
	t = strings.TrimSpace(t)
	const prefix = "application/"
	if len(t) <= len(prefix) || !strings.EqualFold(t[:len(prefix)], prefix) {
		return false
	}
	sub := t[len(prefix):]
	if strings.EqualFold(sub, "json") {
		return true
	}
	const suffix = "+json"
	if len(sub) <= len(suffix) || !strings.EqualFold(sub[len(sub)-len(suffix):], suffix) {
		return false
	}
	for i := 0; i < len(sub)-len(suffix); i++ {
		if c := sub[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&-^_.+", c) >= 0) {
			return false
		}
	}
	return true
}

// OriginHost is the host (and port, as written) of origin, an Origin
// header: ok only for an http URL (https too unless httpOnly) with no
// user, path, query or fragment. "null" and anything else is not ok.
func OriginHost(origin string, httpOnly bool) (string, bool) {
	u, err := url.Parse(origin)
	if err != nil || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", false
	}
	if u.Scheme != "http" && (httpOnly || u.Scheme != "https") {
		return "", false
	}
	return u.Host, u.Host != ""
}

package devapi

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/internal/hostcheck"
)

// The dev listener has no authentication: only its loopback address
// keeps other machines out. A web page in the user's own browser is
// still a way in, so the listener also refuses what only a foreign page
// would send (the checks of guard and jsonBody):
//
//   - a Host that is not a loopback name (localhost or a loopback IP,
//     with any port: ssh -L and kubectl port-forward change the port, and
//     a rebinding page never carries a loopback name): a page at a name
//     an attacker's DNS points to 127.0.0.1 (DNS rebinding) is
//     same-origin with its own name, and could otherwise read the
//     listener's answers;
//   - a request that changes something (every method but GET, HEAD and
//     OPTIONS), or a WebSocket's upgrade, with an Origin other than the
//     listener's own page's (http, the request's own loopback Host): a
//     page of another origin can send a no-cors POST, unread but run
//     (CSRF), and can open a WebSocket and read it, which a browser
//     never holds to the same-origin policy (cross-site WebSocket
//     hijacking);
//   - a REST call whose Content-Type is not JSON: the types a page can
//     send without a CORS preflight (text/plain, forms) never call the
//     agent, and a preflight is never answered;
//     the passthrough takes any type, as the platform's does: the door
//     behind keeps its own rule, and a foreign page's POST is refused
//     by its Origin, which browsers send on every cross-origin POST;
//
// and every answer forbids framing (clickjacking) and sniffing.

// securityHeaders go on every answer of the dev listener. The page loads
// its own scripts, styles and data only; nothing may frame it.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src data:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Frame-Options":              "DENY",
	"X-Content-Type-Options":       "nosniff",
	"Cross-Origin-Resource-Policy": "same-origin",
	"Referrer-Policy":              "no-referrer",
}

// guard answers 403 and reports false for a request a web page of
// another origin could have sent: a foreign Host, or a foreign Origin on
// a method that changes something or on an upgrade. The predicates are every listener's
// (hostcheck); the listener's own rules are stricter than a door's: its
// Host is checked whatever the connection (it listens on loopback only),
// no name is trusted, and an Origin must be its own page's: http, under
// the request's own Host, a loopback name.
func guard(w http.ResponseWriter, r *http.Request) bool {
	port, _ := hostcheck.Local(r)
	if !hostcheck.LoopbackName(r.Host) {
		writeError(w, http.StatusForbidden, "PERMISSION_DENIED", "Host "+strconv.Quote(clip([]byte(r.Host)))+
			" is not the dev listener's: it answers only its loopback names "+ownNames(port)+
			" (a page under another name may be DNS rebinding)")
		return false
	}
	if hostcheck.Safe(r.Method) && !hostcheck.Upgrade(r) {
		return true
	}
	origin, sent := r.Header["Origin"]
	if sent && (len(origin) != 1 || !ownOrigin(origin[0], r.Host, port)) {
		writeError(w, http.StatusForbidden, "PERMISSION_DENIED", "Origin "+strconv.Quote(clip([]byte(strings.Join(origin, ", "))))+
			" is not the dev listener's: a "+r.Method+" is accepted from its own page ("+ownNames(port)+
			") or from a client that sends no Origin, never from another site's page")
		return false
	}
	return true
}

// ownOrigin reports whether a request's Origin is a page of the
// listener's own: http, a loopback name with the listener's port, or the
// request's own Host (a loopback name, which guard checked first: the
// page as a tunnel shows it, under the tunnel's port).
func ownOrigin(origin, host string, port int) bool {
	h, ok := hostcheck.OriginHost(origin, true)
	if !ok || !hostcheck.LoopbackName(h) {
		return false
	}
	_, p, _ := hostcheck.Split(h)
	return p == port && port != 0 || strings.EqualFold(h, host)
}

// ownNames lists the origins the listener answers directly, for
// messages (a tunnel's port is taken too).
func ownNames(port int) string {
	p := "PORT"
	if port != 0 {
		p = strconv.Itoa(port)
	}
	return "http://127.0.0.1:" + p + ", http://localhost:" + p + ", http://[::1]:" + p
}

// jsonBody answers 415 and reports false for a REST call whose body is
// not declared JSON (application/json, parameters such as charset
// allowed), as the platform's clients all declare it.
func jsonBody(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return true
	}
	got := "none"
	if ct != "" {
		got = strconv.Quote(clip([]byte(ct)))
	}
	writeError(w, http.StatusUnsupportedMediaType, "INVALID_ARGUMENT",
		"Content-Type "+got+" is not JSON: send the body as Content-Type: application/json")
	return false
}

package devapi

import (
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/internal/hostcheck"
)

// The platform's generic passthrough (PROTOCOLS.md §1.9): any verb on
//
//	/reasoningEngines/{v1|v1beta1}/projects/P/locations/L/reasoningEngines/ID/api/{path}
//
// reaches the container's /{path}, its query kept. The dev listener
// serves the same URL, so a mounted door is tried locally through the
// address its clients will use in production: only the scheme, the host
// and the port change.

// The WebSocket passthrough (bidiInvokeReasoningEngine, PROTOCOLS.md
// §1.9) is the same URL with "ws/" after /reasoningEngines/:
//
//	/reasoningEngines/ws/{v1beta1|v1}/projects/P/locations/L/reasoningEngines/ID/api/{path}
//
// reaches the container's /{path} as a WebSocket: the upgrade, then the
// frames both ways, relayed as bytes. Each passthrough takes only its own
// kind of request: an upgrade on the HTTP one, or a plain request on the
// WebSocket one, is refused naming the other, as the platform's front end
// routes them apart.

// PassthroughPath is the dev listener's passthrough path to mount, a
// path on the contract listener ("/a2a", "/"), under the project,
// location and engine the playground shows (methods.json's):
// production's URL for it is the platform's host before the same path,
// with the deployment's names.
func PassthroughPath(mount string) string {
	return passthroughPrefix + "v1/projects/local/locations/us-central1/reasoningEngines/local/api/" + strings.TrimPrefix(mount, "/")
}

// WSPassthroughPath is the dev listener's WebSocket passthrough path to
// p, a path on the contract listener (a mount, then a door's route:
// "/live", "/ws"), under the same project, location and engine as
// PassthroughPath's, in the version the platform documents for it
// (v1beta1).
func WSPassthroughPath(p string) string {
	return passthroughPrefix + wsSegment + "v1beta1/projects/local/locations/us-central1/reasoningEngines/local/api/" + strings.TrimPrefix(p, "/")
}

// passthroughPrefix is how the passthrough's paths begin; wsSegment
// follows it on the WebSocket passthrough's.
const (
	passthroughPrefix = "/reasoningEngines/"
	wsSegment         = "ws/"
)

// passthroughPath is the container path of a passthrough URL's escaped
// path (r.URL.EscapedPath()): "/{path}", still escaped, whether it is the
// WebSocket passthrough's, and true; false when p is not either
// passthrough's shape. {path} may be empty ("…/api" and "…/api/" both
// reach "/").
func passthroughPath(p string) (inner string, ws, ok bool) {
	rest, ok := strings.CutPrefix(p, passthroughPrefix)
	if !ok {
		return "", false, false
	}
	rest, ws = strings.CutPrefix(rest, wsSegment)
	inner, ok = httpPassthroughPath(rest)
	return inner, ws, ok
}

// httpPassthroughPath is passthroughPath of rest, the path after the
// prefix (and "ws/").
func httpPassthroughPath(rest string) (string, bool) {
	// version, "projects", P, "locations", L, "reasoningEngines", ID, "api", then {path}.
	seg := strings.SplitN(rest, "/", 9)
	if len(seg) < 8 || (seg[0] != "v1" && seg[0] != "v1beta1") ||
		seg[1] != "projects" || seg[3] != "locations" || seg[5] != "reasoningEngines" || seg[7] != "api" ||
		seg[2] == "" || seg[4] == "" || seg[6] == "" {
		return "", false
	}
	if len(seg) == 8 {
		return "/", true
	}
	return "/" + seg[8], true
}

// passthroughPrefixOf is the part of the passthrough URL's escaped path p
// before its container path inner (passthroughPath's): ".../api".
func passthroughPrefixOf(p, inner string) string {
	if inner == "/" {
		return strings.TrimSuffix(p, "/")
	}
	return strings.TrimSuffix(p, inner)
}

// dotSegment reports whether the container path p (escaped) has a "."
// or ".." segment, spelled plainly or escaped (%2e), or a segment that
// an escaped slash would turn into one: the contract listener, or a
// proxy in front of an agent, could resolve it to a path outside what
// the URL names.
func dotSegment(p string) bool {
	plain, err := url.PathUnescape(p)
	if err != nil {
		return true // not a path the platform would pass on
	}
	for _, s := range strings.FieldsFunc(plain, func(c rune) bool { return c == '/' || c == '\\' }) {
		if s == "." || s == ".." {
			return true
		}
	}
	return false
}

// newPassthrough is the reverse proxy to the contract listener at
// contract (its base URL) through transport, for both passthroughs: the
// container path of the passthrough URL on the contract listener.
func newPassthrough(contract string, transport http.RoundTripper) *httputil.ReverseProxy {
	return newProxy(contract, transport, func(in *http.Request) (string, string) {
		p := in.URL.EscapedPath()
		inner, _, _ := passthroughPath(p) // ServeHTTP checked it
		return inner, passthroughPrefixOf(p, inner)
	})
}

// newProxy is the reverse proxy to the listener at base (its URL, a path
// allowed) through transport: route gives the escaped path a request in
// goes to there and the prefix a proxy in front says it took off ("": it
// says none). Every verb and body goes on, the answer comes back as it is
// written: FlushInterval -1 flushes after every write, so SSE and ndjson
// are never held in a buffer. An upgrade (a WebSocket's) is relayed as
// bytes both ways once the listener answers 101.
func newProxy(base string, transport http.RoundTripper, route func(in *http.Request) (path, prefix string)) *httputil.ReverseProxy {
	target, err := url.Parse(base)
	if err != nil {
		panic("devapi: the listener's URL " + base + ": " + err.Error()) // the caller builds it from an address
	}
	return &httputil.ReverseProxy{
		// Rewrite (not Director): the hop-by-hop headers (RFC 9110 §7.6.1:
		// Connection and those it names, Keep-Alive, Proxy-Connection, TE,
		// Transfer-Encoding, Upgrade but for a WebSocket's) and any
		// X-Forwarded-* a client sent are dropped before it runs.
		Rewrite: func(pr *httputil.ProxyRequest) {
			inner, prefix := route(pr.In)
			pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
			pr.Out.Host = "" // the listener's own address: its Host rule holds
			plain, _ := url.PathUnescape(inner)
			pr.Out.URL.Path, pr.Out.URL.RawPath = plain, ""
			if plain != inner {
				pr.Out.URL.RawPath = inner // an escaped "/" stays escaped
			}
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			if pr.Out.Body != nil && pr.Out.ContentLength > 0 {
				pr.Out.Body = &exactBody{ReadCloser: pr.Out.Body, left: pr.Out.ContentLength}
			}
			// The URL the caller asked, as a proxy in front says it: the
			// dev listener's scheme and host, and the passthrough's
			// prefix before the container's path. A door that advertises
			// its own URL (A2A's card) then advertises the passthrough's,
			// as the platform's variables make it in production
			// (core.PlatformBase), so a client that follows it stays on
			// the passthrough.
			pr.SetXForwarded()
			if prefix != "" {
				pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
			}
			h := pr.Out.Header
			// The browser's cookies for localhost are every local
			// service's (cookies ignore the port): none is the agent's.
			h.Del("Cookie")
			// An Origin that reached here on a method that changes
			// something, or on an upgrade, is the dev listener's own
			// page's (guard): the page calls the platform's URL, the
			// platform calls the container, so the container sees no
			// page. A foreign Origin (on GET, HEAD, OPTIONS, not an
			// upgrade) goes on for the door to judge.
			if o := h.Values("Origin"); len(o) == 1 && ownOrigin(o[0], pr.In.Host, localPort(pr.In)) {
				h.Del("Origin")
			}
		},
		FlushInterval: -1,
		Transport:     transport,
		ModifyResponse: func(resp *http.Response) error {
			// The dev listener's own security headers win (ServeHTTP set
			// them), and no cookie is set for localhost, every local
			// service's.
			for k := range securityHeaders {
				resp.Header.Del(k)
			}
			resp.Header.Del("Set-Cookie")
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the caller left: nobody reads an answer
			}
			writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE",
				"The service is currently unavailable: the sidecar's contract listener: "+err.Error())
		},
	}
}

// passthrough serves a passthrough URL, whose container path is inner
// (escaped), on the WebSocket passthrough when ws: a path with dot
// segments, or a request of the other passthrough's kind, is refused
// before the sidecar is called.
func (e *emulator) passthrough(w http.ResponseWriter, r *http.Request, inner string, ws bool) {
	if dotSegment(inner) {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "The path "+clip([]byte(inner))+
			" after /api has a . or .. segment: give the container's path as it is, without dot segments")
		return
	}
	switch upgrade := hostcheck.Upgrade(r); {
	case ws && !upgrade:
		notWebSocket(w, r)
		return
	case !ws && upgrade:
		p := r.URL.EscapedPath()
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "The HTTP passthrough takes no WebSocket: open it at "+
			clip([]byte(passthroughPrefix+wsSegment+strings.TrimPrefix(p, passthroughPrefix)))+", the WebSocket passthrough")
		return
	}
	// Full duplex: the contract's answer may begin before the caller's
	// body is all sent on (a door answers once it has what it needs; the
	// transport reads the body once more to see it end). Half duplex, the
	// dev listener reads the rest of the body itself as the answer begins
	// and closes it under the transport still reading it, which then
	// drops its connection to the contract listener, the answer on it: a
	// stream cut after its first record (Go issue 15527).
	http.NewResponseController(w).EnableFullDuplex()
	e.proxy.ServeHTTP(w, r)
}

// notWebSocket refuses a request that is not an upgrade on a WebSocket
// route of the dev listener.
func notWebSocket(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", r.Method+" "+clip([]byte(r.URL.Path))+
		" takes WebSockets only: open it as a WebSocket (GET with Upgrade: websocket)")
}

// localPort is the port of the connection r came in on, 0 if unknown.
func localPort(r *http.Request) int {
	port, _ := hostcheck.Local(r)
	return port
}

// passthroughTransport is the emulator's own transport to the contract
// listener, for the REST routes and the passthrough alike.
func passthroughTransport() http.RoundTripper {
	return &http.Transport{
		Proxy:               nil, // the contract listener is local: never through $HTTP_PROXY
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // the answer goes on as the door wrote it
	}
}

// exactBody is a request body of known length that ends at its last
// byte without reading the caller's body again. The transport reads a
// body past its Content-Length to check it ends there, and the contract
// listener may answer (the stream end to end) before that read: the dev
// listener's handler has returned and net/http closed the caller's body,
// so the read fails, and the transport closes the connection to the
// contract listener the next call was already using on the same
// keep-alive connection, cutting its answer.
type exactBody struct {
	io.ReadCloser
	left int64
}

func (b *exactBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left <= 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

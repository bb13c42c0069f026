package core

import (
	"net/http"
	"net/netip"
	"regexp"
	"strings"
)

// Public is how a door learns the public URL a caller reached it at
// (what an A2A card or MCP's resource metadata advertises). Build it with
// Host.Public; the zero value believes the connection and its Host only.
type Public struct {
	// Proxies are the peers whose X-Forwarded-Proto, -Host and -Prefix
	// are believed (trusted_proxies): a reverse proxy in front. None by
	// default: any caller could send them.
	Proxies []netip.Prefix
	// Platform is the public base of the listener on Agent Platform
	// (PlatformBase) for a mounted door: there a request reaches the
	// container through the platform's passthrough, with the container's
	// Host. "" elsewhere.
	Platform string
	// HTTPS is whether the front end serves https only (Cloud Run,
	// K_SERVICE set), though the container hears http.
	HTTPS bool
}

// Public is the Public of a door (mounted on the platform's listener or
// not) under h: trusted_proxies, and the platform's variables.
func (h Host) Public(mounted bool) Public {
	p := Public{Proxies: h.Proxies}
	if h.Getenv == nil {
		return p
	}
	if mounted {
		p.Platform, _ = PlatformBase(h.Getenv) // its error is warned of once at start
	}
	p.HTTPS = h.Getenv(EnvCloudRunService) != ""
	return p
}

// EnvCloudRunService is the variable Cloud Run sets to the service's
// name.
const EnvCloudRunService = "K_SERVICE"

// Base is the scheme, host and path prefix a caller reached a door at:
// on Agent Platform, Platform; else, from a trusted proxy, those it says
// (the first X-Forwarded-Proto, X-Forwarded-Host and X-Forwarded-Prefix,
// each taken only when it is a scheme, a host and port, or a plain path,
// and nothing else, so a header cannot put anything else in a URL the
// door gives out); else the connection's (https with TLS or HTTPS), the
// Host header and no prefix.
func (p Public) Base(r *http.Request) string {
	if p.Platform != "" {
		return p.Platform
	}
	scheme, host := "http", r.Host
	if r.TLS != nil || p.HTTPS {
		scheme = "https"
	}
	if !p.trusts(r.RemoteAddr) {
		return scheme + "://" + host
	}
	if v := strings.ToLower(firstValue(r.Header.Get("X-Forwarded-Proto"))); v == "http" || v == "https" {
		scheme = v
	}
	if h := firstValue(r.Header.Get("X-Forwarded-Host")); hostPort.MatchString(h) {
		host = h
	}
	prefix := firstValue(r.Header.Get("X-Forwarded-Prefix"))
	if !plainPrefix(prefix) {
		prefix = ""
	}
	return scheme + "://" + host + prefix
}

// trusts reports whether the peer at addr (host:port) is one of Proxies.
func (p Public) trusts(addr string) bool {
	if len(p.Proxies) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	for _, pre := range p.Proxies {
		if pre.Contains(ip) {
			return true
		}
	}
	return false
}

// plainPrefix reports whether p is a path prefix a URL may carry: "/"
// and segments of letters, digits and "-._~:@" (sidecar dev's passthrough
// sends /reasoningEngines/v1/projects/…/api), none "." or "..", no
// trailing "/", 1 KiB at most.
func plainPrefix(p string) bool {
	if len(p) > 1024 || !pathPrefix.MatchString(p) {
		return false
	}
	for _, s := range strings.Split(p[1:], "/") {
		if s == "." || s == ".." {
			return false
		}
	}
	return true
}

// pathPrefix is a path of one or more plain segments.
var pathPrefix = regexp.MustCompile(`^(/[A-Za-z0-9._~:@-]+)+$`)

// hostPort is a host name, IPv4 or bracketed IPv6 address, and an optional
// port.
var hostPort = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]{0,252}))(:[0-9]{1,5})?$`)

// firstValue is the first of a header's comma-separated values, the one
// the proxy nearest the caller set.
func firstValue(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return strings.TrimSpace(first)
}

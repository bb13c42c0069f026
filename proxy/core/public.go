package core

import (
	"net/http"
	"regexp"
	"strings"
)

// PublicBase is the scheme, host and path prefix a caller reached a
// door at (what an A2A card or MCP's resource metadata advertises): those a proxy in front says (the first X-Forwarded-Proto,
// X-Forwarded-Host and X-Forwarded-Prefix, each taken only when it is a
// scheme, a host and port, or a plain path, and nothing else, so a header
// cannot put anything else in a URL the door gives out), else the connection's (https
// with TLS), the Host header and no prefix.
func PublicBase(r *http.Request) string {
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if p := strings.ToLower(firstValue(r.Header.Get("X-Forwarded-Proto"))); p == "http" || p == "https" {
		scheme = p
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

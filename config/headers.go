package config

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// hopHeaders are connection-level headers that cannot be forwarded or set.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Host", "Content-Length", "Content-Type"}

// headers decodes the headers mapping: forward (a list of names) and set
// (a mapping of names to values, ${NAME} taken from the environment).
func (p *parser) headers(n *yaml.Node, path string, h *Headers) {
	if !p.mapping(n, path, "a mapping with forward and set") {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case "forward":
			if isNull(e.val) {
				continue
			}
			if e.val.Kind != yaml.SequenceNode {
				p.addf(e.val.Line, key, "want a list of header names, not a %s", kindName(e.val))
				continue
			}
			for _, v := range e.val.Content {
				v = resolve(v)
				if v.Kind != yaml.ScalarNode || !p.headerName(v.Value, v.Line, key) {
					continue
				}
				h.Forward = append(h.Forward, http.CanonicalHeaderKey(v.Value))
			}
		case "set":
			if !p.mapping(e.val, key, "a mapping of header names to values") {
				continue
			}
			for _, f := range p.entries(e.val, key) {
				fkey := join(key, f.name)
				value, ok := p.scalar(f, fkey)
				if !ok || !p.headerName(f.name, f.key.Line, fkey) {
					continue
				}
				expanded, err := expandEnv(value)
				if err != nil {
					p.addf(f.val.Line, fkey, "%v", err)
					continue
				}
				if !ValidHeaderValue(expanded) {
					p.addf(f.val.Line, fkey, "the value is not a valid header value (control characters?)")
					continue
				}
				if h.Set == nil {
					h.Set, h.SetTemplates = map[string]string{}, map[string]string{}
				}
				name := http.CanonicalHeaderKey(f.name)
				h.Set[name], h.SetTemplates[name] = expanded, value
			}
		default:
			p.unknown(e, path, "forward", "set")
		}
	}
}

func (p *parser) headerName(name string, line int, key string) bool {
	if !ValidHeaderName(name) {
		p.addf(line, key, "%q is not a valid header name", name)
		return false
	}
	for _, h := range hopHeaders {
		if strings.EqualFold(h, name) {
			p.addf(line, key, "%s is managed by the sidecar and cannot be forwarded or set", h)
			return false
		}
	}
	// The body's headers describe the body the sidecar sends, and
	// X-Sidecar-* are the sidecar's own (the class_method, the loop guard).
	for _, prefix := range managedPrefixes {
		if len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
			p.addf(line, key, "%s* headers are managed by the sidecar and cannot be forwarded or set", prefix)
			return false
		}
	}
	return true
}

// managedPrefixes are header name prefixes that cannot be forwarded or set.
var managedPrefixes = []string{"Content-", "X-Sidecar-"}

// ValidHeaderName reports whether name is an RFC 9110 token.
func ValidHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// ValidHeaderValue reports whether v has no control characters but tabs.
func ValidHeaderValue(v string) bool {
	for _, c := range []byte(v) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// admin decodes the admin listener.
func (p *parser) admin(n *yaml.Node, path string, a *Admin) {
	if !p.mapping(n, path, "a mapping with listen") {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case "listen":
			if s, ok := p.scalar(e, key); ok {
				if err := checkListen(s); err != nil {
					p.addf(e.val.Line, key, "%v", err)
					continue
				}
				a.Listen = s
			}
		default:
			p.unknown(e, path, "listen")
		}
	}
}

// samePort reports whether two listen addresses share their port. Ports
// are compared as numbers, as the kernel sees them: ":018170" and
// ":18170" are one port.
func samePort(a, b string) bool {
	pa, okA := portOf(a)
	pb, okB := portOf(b)
	return okA && okB && pa == pb && pa != 0
}

// portOf is the port of a "host:port" address as a number.
func portOf(addr string) (uint16, bool) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(p, 10, 16)
	return uint16(n), err == nil
}

package config

import (
	"fmt"
	"path"
	"strings"
)

// KeepAlive is the keep-alive probe (keep_alive_probe): a path on the
// platform's listener that answers 2xx while a call is in flight, which
// Agent Platform's deploymentSpec.keepAliveProbe asks so that it keeps a
// busy container up (best effort, maxSeconds at most) instead of
// stopping it with work it must not lose.
type KeepAlive struct {
	// Path is served with GET and HEAD on the platform's listener; it
	// must not be one of the platform's routes. Default: "" (off).
	Path string
	// MaxSeconds is the probe's maxSeconds for the deploy request: how
	// long at most the platform keeps a busy container up, 1 to 3600.
	// Default: 3600, the platform's maximum (a longer call than that
	// is not kept up past it anyway).
	MaxSeconds int
	// Line is where the section is declared, for messages; 0 when the
	// file has none.
	Line int
}

// MaxKeepAliveSeconds is the most the platform keeps a container up for
// its keep-alive probe, and the default max_seconds.
const MaxKeepAliveSeconds = 3600

// platformPaths are the paths the platform's listener serves itself:
// its health routes (the platform probes "/" and "/health" too). The
// contract's routes are under platformPrefix.
var platformPaths = []string{"/", "/healthz", "/health"}

// platformPrefix is where the contract's routes are
// (/api/reasoning_engine, /api/stream_reasoning_engine,
// /api/bidi_reasoning_engine): the platform's own namespace.
const platformPrefix = "/api/"

// keepAlive decodes keep_alive_probe.
func (p *parser) keepAlive(e entry, k *KeepAlive) {
	if !p.mapping(e.val, e.name, "a mapping with path and max_seconds") {
		return
	}
	k.Line = e.key.Line
	k.MaxSeconds = MaxKeepAliveSeconds
	havePath := false
	for _, f := range p.entries(e.val, e.name) {
		key := join(e.name, f.name)
		switch f.name {
		case "path":
			s, ok := p.scalar(f, key)
			if !ok {
				continue
			}
			havePath = true
			if err := checkKeepAlivePath(s); err != nil {
				p.addf(f.val.Line, key, "%v", err)
				continue
			}
			k.Path = s
		case "max_seconds":
			v, ok := p.count(f, key, "")
			if !ok {
				continue
			}
			if v < 1 || v > MaxKeepAliveSeconds {
				p.addf(f.val.Line, key, "%d is out of range (want 1 to %d, the platform's maximum)", v, MaxKeepAliveSeconds)
				continue
			}
			k.MaxSeconds = v
		default:
			p.unknown(f, e.name, "path", "max_seconds")
		}
	}
	if !havePath {
		p.addf(e.key.Line, join(e.name, "path"), "missing (want a path such as /busy)")
	}
}

// checkKeepAlivePath accepts an absolute, clean path of plain characters
// that is none of the platform listener's own routes.
func checkKeepAlivePath(s string) error {
	switch {
	case !strings.HasPrefix(s, "/"):
		return fmt.Errorf("%q does not start with \"/\" (want a path such as /busy)", s)
	case strings.ContainsAny(s, "?#%") || strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0:
		return fmt.Errorf("%q: want a plain path (no query, fragment, escapes, spaces or control characters)", s)
	case path.Clean(s) != s:
		// The platform's router serves a path as sent: "/busy/" or
		// "/a/../busy" would never match what the prober asks.
		return fmt.Errorf("%q is not a clean path (want %q)", s, path.Clean(s))
	}
	for _, r := range platformPaths {
		if s == r {
			return fmt.Errorf("%q is one of the platform listener's health routes (%s): the keep-alive probe needs a path of its own, e.g. /busy", s, strings.Join(platformPaths, ", "))
		}
	}
	if strings.HasPrefix(s, platformPrefix) || s+"/" == platformPrefix {
		return fmt.Errorf("%q is under %s, where the platform's contract routes are: the keep-alive probe needs a path of its own, e.g. /busy", s, platformPrefix)
	}
	return nil
}

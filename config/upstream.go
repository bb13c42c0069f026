package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The upstream keys: where the agent listens and how its readiness is probed
// (its command and restart policy are lifecycle.go's).

// maxSocketPath is the longest Unix socket path Linux takes: sun_path holds
// 108 bytes, one of them the terminating NUL.
const maxSocketPath = 107

// upstream decodes the agent's address and readiness probe, and returns
// the line of its url.
func (p *parser) upstream(e entry, u *Upstream) (urlLine int) {
	path := e.name
	if !p.mapping(e.val, path, "a mapping with url and ready") {
		if isNull(e.val) {
			p.addf(e.key.Line, join(path, "url"), "missing (want http://host:port or unix:///path/to.sock)")
		}
		return
	}
	haveURL := false
	for _, f := range p.entries(e.val, path) {
		switch f.name {
		case "url":
			haveURL, urlLine = true, f.val.Line
			if isNull(f.val) {
				p.addf(f.key.Line, join(path, f.name), "missing (want http://host:port or unix:///path/to.sock)")
				continue
			}
			s, ok := p.url(f, join(path, f.name))
			if !ok {
				continue
			}
			if err := u.setURL(s); err != nil {
				p.addf(f.val.Line, join(path, f.name), "%v", err)
			}
		case "ready":
			p.ready(f.val, join(path, f.name), &u.Ready)
		case "command":
			p.command(f, join(path, f.name), u)
		case "restart":
			p.restart(f.val, join(path, f.name), &u.Restart)
		case "idle_timeout":
			if d, err := duration(f.val); err != nil {
				p.addf(f.val.Line, join(path, f.name), "%v", err)
			} else if d <= 0 {
				p.addf(f.val.Line, join(path, f.name), "%q must be positive", f.val.Value)
			} else {
				u.IdleTimeout = d
			}
		default:
			p.unknown(f, path, "url", "ready", "command", "restart", "idle_timeout")
		}
	}
	if !haveURL {
		p.addf(e.key.Line, join(path, "url"), "missing (want http://host:port or unix:///path/to.sock)")
	}
	return urlLine
}

// setURL sets URL and what is derived from it: Network, Address, BaseURL.
func (u *Upstream) setURL(raw string) error {
	const want = "want http://host:port[/base] or unix:///path/to.sock"
	parsed, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("invalid URL %q: %v (%s)", raw, err, want)
	}
	if parsed.RawQuery != "" || parsed.ForceQuery || parsed.Fragment != "" {
		return fmt.Errorf("%q: a query or fragment is not allowed (%s)", raw, want)
	}
	if parsed.User != nil {
		return fmt.Errorf("%q: user info is not allowed (%s)", raw, want)
	}
	switch parsed.Scheme {
	case "http":
		if parsed.Opaque != "" || parsed.Hostname() == "" {
			return fmt.Errorf("%q has no host (%s)", raw, want)
		}
		port := parsed.Port()
		if port == "" {
			return fmt.Errorf("%q has no port (want http://host:port, e.g. http://127.0.0.1:8000)", raw)
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return fmt.Errorf("%q: port %q is not a number from 1 to 65535", raw, port)
		}
		u.URL, u.Network, u.Address = raw, "tcp", parsed.Host
		u.BaseURL = "http://" + parsed.Host + strings.TrimRight(parsed.EscapedPath(), "/")
		return nil
	case "unix":
		if parsed.Host != "" {
			return fmt.Errorf("%q: the socket path must be absolute, but this names host %q (want unix:///path/to.sock, three slashes)", raw, parsed.Host)
		}
		if parsed.Opaque != "" || !strings.HasPrefix(parsed.Path, "/") {
			return fmt.Errorf("%q: the socket path must be absolute (want unix:///path/to.sock)", raw)
		}
		if len(parsed.Path) > maxSocketPath {
			return fmt.Errorf("socket path is %d bytes, longer than the %d a Unix socket allows", len(parsed.Path), maxSocketPath)
		}
		u.URL, u.Network, u.Address, u.BaseURL = raw, "unix", parsed.Path, "http://agent"
		return nil
	case "":
		return fmt.Errorf("%q has no scheme (%s)", raw, want)
	}
	return fmt.Errorf("scheme %q is not supported (%s)", parsed.Scheme, want)
}

// ready decodes the readiness probe over its defaults.
func (p *parser) ready(n *yaml.Node, path string, r *Ready) {
	if !p.mapping(n, path, "a mapping with path, interval, timeout and wait") {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case "path":
			if s, ok := p.scalar(e, key); ok {
				if !strings.HasPrefix(s, "/") {
					p.addf(e.val.Line, key, "%q must start with \"/\"", s)
				} else {
					r.Path = s
				}
			}
		case "interval", "timeout":
			if isNull(e.val) {
				continue
			}
			d, err := duration(e.val)
			if err == nil && d <= 0 {
				err = fmt.Errorf("%q must be positive", e.val.Value)
			}
			if err != nil {
				p.addf(e.val.Line, key, "%v", err)
			} else if e.name == "interval" {
				r.Interval = d
			} else {
				r.Timeout = d
			}
		case "wait":
			if d, ok := p.nonNegative(e, key); ok {
				r.Wait = d
			}
		default:
			p.unknown(e, path, "path", "interval", "timeout", "wait")
		}
	}
}

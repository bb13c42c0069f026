package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// defaultListen is where the platform calls when the file says nothing.
const defaultListen = ":8080"

// defaultTimeouts are the clocks of a call when the file sets none.
var defaultTimeouts = Timeouts{
	Connect:   5 * time.Second,
	FirstByte: 5 * time.Minute,
	Idle:      5 * time.Minute,
	Total:     DefaultTotal,
}

// DefaultTotal is the default timeouts.total. The platform severs a stream
// at 15 minutes; ending the call 10 s before leaves the sidecar the time
// to write its final timeout line, so the caller learns why it ended.
const DefaultTotal = 14*time.Minute + 50*time.Second

// defaultLimits bound a call when the file sets none.
var defaultLimits = Limits{
	RequestBytes:  10 << 20,
	RecordBytes:   8 << 20,
	ReplyBytes:    32 << 20,
	HeaderBytes:   64 << 10,
	HeaderTimeout: 10 * time.Second,
	Queue:         100,
	QueueTimeout:  10 * time.Second,
}

// maxSocketPath is the longest Unix socket path Linux takes: sun_path holds
// 108 bytes, one of them the terminating NUL.
const maxSocketPath = 107

// Load reads and parses the method map at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading method map: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and validates a method map. name is used in messages
// ("sidecar.yaml:12: …"). The error, when there is one, is a *Errors
// listing every problem in the file.
func Parse(name string, data []byte) (*Config, error) {
	p := &parser{}
	c := p.file(data)
	if len(p.problems) > 0 {
		return nil, &Errors{File: name, Problems: p.sorted()}
	}
	c.expandPreset()
	c.index()
	return c, nil
}

// file decodes the whole method map; c is only meaningful when p found no
// problems.
func (p *parser) file(data []byte) *Config {
	c := &Config{
		Listen:   defaultListen,
		Timeouts: defaultTimeouts,
		Limits:   defaultLimits,
	}
	c.Upstream.Ready = Ready{Interval: time.Second, Timeout: time.Second, Wait: 30 * time.Second}
	c.Upstream.IdleTimeout = 4 * time.Second
	c.Upstream.Restart = Restart{Policy: RestartNever, Max: 5, Backoff: time.Second}
	c.Shutdown = Shutdown{Drain: 6 * time.Second, AgentGrace: 3 * time.Second}
	c.ADK.Keys = "as_is"

	root, ok := p.document(data)
	if !ok {
		return c
	}
	if !p.mapping(root, "", "a mapping with upstream and methods") {
		if isNull(root) {
			p.addf(0, "", "empty file (want a mapping with upstream and methods)")
		}
		return c
	}

	var haveUpstream, haveMethods bool
	var presetLine, adminLine, urlLine int
	var methods []methodDraft
	for _, e := range p.entries(root, "") {
		switch e.name {
		case "listen":
			if s, ok := p.scalar(e, e.name); ok {
				if err := checkListen(s); err != nil {
					p.addf(e.val.Line, e.name, "%v", err)
				} else {
					c.Listen = s
				}
			}
		case "upstream":
			haveUpstream = true
			urlLine = p.upstream(e, &c.Upstream)
		case "timeouts":
			c.Timeouts = p.timeouts(e.val, e.name).over(c.Timeouts)
		case "limits":
			p.limits(e.val, e.name, &c.Limits)
		case "shutdown":
			p.shutdown(e.val, e.name, &c.Shutdown)
		case "headers":
			p.headers(e.val, e.name, &c.Headers)
		case "admin":
			adminLine = e.key.Line
			p.admin(e.val, e.name, &c.Admin)
		case "methods":
			haveMethods = true
			methods = p.methods(e)
		case "preset":
			if s, ok := p.scalar(e, e.name); ok {
				if s != PresetADK {
					p.addf(e.val.Line, e.name, "unknown preset %q (want %q)", s, PresetADK)
				}
				c.Preset, presetLine = s, e.key.Line
			}
		case "adk":
			p.adk(e.val, e.name, &c.ADK)
		default:
			p.unknown(e, "", "listen", "upstream", "timeouts", "limits", "shutdown", "headers", "admin", "preset", "adk", "methods")
		}
	}
	if c.Admin.Listen != "" && samePort(c.Admin.Listen, c.Listen) {
		p.addf(adminLine, "admin.listen", "%q is the public port: metrics must be served elsewhere", c.Admin.Listen)
	}
	if self := selfListen(c.Listen); c.Upstream.Network == "tcp" && loopsBack(c.Upstream.Address, self) {
		p.addf(urlLine, "upstream.url", "%q is the sidecar's own address (it listens on %q): every call would come back to it (want the agent's address)", c.Upstream.URL, self)
	}
	if !haveUpstream {
		p.addf(root.Line, "upstream", "missing (want upstream.url: http://host:port or unix:///path/to.sock)")
	}
	if !haveMethods && c.Preset == "" {
		p.addf(root.Line, "methods", "missing (want at least one method, e.g. methods: {query: {}})")
	}

	if c.ADK.App == "" {
		line := presetLine
		for _, d := range methods {
			if d.m.Handler != "" && line == 0 {
				line = d.m.Line
			}
		}
		if line > 0 {
			p.addf(line, "adk.app", "missing: the ADK handlers need the ADK app name (want adk: {app: my_agent})")
		}
	}

	// The "*" method goes last; the others keep file order.
	var wildcard *Method
	for _, d := range methods {
		d.m.Timeouts = d.timeouts.over(c.Timeouts)
		if d.m.Name == "*" {
			wildcard = d.m
			continue
		}
		c.Methods = append(c.Methods, d.m)
	}
	if wildcard != nil {
		c.Methods = append(c.Methods, wildcard)
	}
	return c
}

// document parses data as one YAML document and returns its root node.
func (p *parser) document(data []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.addf(0, "", "empty file (want a mapping with upstream and methods)")
		} else {
			p.syntax(data, err)
		}
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.syntax(data, err)
		return nil, false
	default:
		p.addf(next.Line, "", "a second YAML document (want one method map per file)")
		return nil, false
	}
	if len(doc.Content) == 0 {
		p.addf(0, "", "empty file (want a mapping with upstream and methods)")
		return nil, false
	}
	return resolve(doc.Content[0]), true
}

// yamlLine picks the line out of the YAML library's messages, which read
// "yaml: line 12: mapping values are not allowed in this context".
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax records a YAML syntax error, with a hint for the two mistakes
// that cause most of them: a tab in the indentation, and an unquoted "*".
func (p *parser) syntax(data []byte, err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	// The library may name the line before a tab; look at both.
	for _, n := range []int{line, line + 1} {
		text, ok := lineOf(data, n)
		if !ok {
			continue
		}
		indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
		if strings.Contains(indent, "\t") {
			line = n
			msg += " (indent with spaces: YAML does not allow tabs)"
			break
		}
		if n == line && strings.HasPrefix(strings.TrimLeft(text, " "), "*") {
			msg += ` (quote a "*" key: "*":)`
			break
		}
	}
	p.addf(line, "", "invalid YAML: %s", msg)
}

// lineOf returns the 1-based line n of data.
func lineOf(data []byte, n int) (string, bool) {
	if n < 1 {
		return "", false
	}
	for i := 1; len(data) > 0; i++ {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		if i == n {
			return string(line), true
		}
		data = rest
	}
	return "", false
}

// checkListen accepts "host:port" with a numeric port; the host may be
// empty (every interface).
func checkListen(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port (want e.g. \":8080\" or \"127.0.0.1:8080\")", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", s, port)
	}
	return nil
}

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
			s, ok := p.scalar(f, join(path, f.name))
			if !ok {
				p.addf(f.key.Line, join(path, f.name), "missing (want http://host:port or unix:///path/to.sock)")
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

// timeoutSet is a timeouts mapping as written: nil means not set.
type timeoutSet struct {
	connect, firstByte, idle, total *time.Duration
}

// over returns t with the set fields replaced.
func (s timeoutSet) over(t Timeouts) Timeouts {
	for _, f := range []struct {
		v   *time.Duration
		dst *time.Duration
	}{{s.connect, &t.Connect}, {s.firstByte, &t.FirstByte}, {s.idle, &t.Idle}, {s.total, &t.Total}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return t
}

// timeouts decodes a timeouts mapping, at the top or in a method.
func (p *parser) timeouts(n *yaml.Node, path string) timeoutSet {
	var s timeoutSet
	if !p.mapping(n, path, "a mapping with connect, first_byte, idle and total") {
		return s
	}
	for _, e := range p.entries(n, path) {
		var dst **time.Duration
		switch e.name {
		case "connect":
			dst = &s.connect
		case "first_byte":
			dst = &s.firstByte
		case "idle":
			dst = &s.idle
		case "total":
			dst = &s.total
		default:
			p.unknown(e, path, "connect", "first_byte", "idle", "total")
			continue
		}
		if isNull(e.val) {
			continue
		}
		d, err := duration(e.val)
		if err == nil && d < 0 {
			err = fmt.Errorf("%q is negative (want a positive duration, or 0 for no limit)", e.val.Value)
		}
		if err != nil {
			p.addf(e.val.Line, join(path, e.name), "%v", err)
			continue
		}
		*dst = &d
	}
	return s
}

// duration reads a Go duration string ("30s", "1m30s"); a bare 0 is
// allowed too, since it needs no unit.
func duration(n *yaml.Node) (time.Duration, error) {
	const want = `want a duration such as "30s" or "1m30s"`
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("%s, not a %s", want, kindName(n))
	}
	if tag := n.ShortTag(); tag == "!!int" || tag == "!!float" {
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("%s has no unit (%s, or 0 for no limit)", n.Value, want)
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (%s)", n.Value, want)
	}
	return d, nil
}

// limits decodes the limits over their defaults.
func (p *parser) limits(n *yaml.Node, path string, l *Limits) {
	keys := []string{"request_bytes", "record_bytes", "reply_bytes", "header_bytes", "header_timeout", "concurrency", "queue", "queue_timeout"}
	if !p.mapping(n, path, "a mapping with "+oneOf(keys, false)) {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case "request_bytes", "record_bytes", "reply_bytes", "header_bytes":
			if isNull(e.val) {
				continue
			}
			v, err := size(e.val)
			if err != nil {
				p.addf(e.val.Line, key, "%v", err)
				continue
			}
			if max := maxSizes[e.name]; v > max {
				p.addf(e.val.Line, key, "%s is larger than the most allowed, %s", e.val.Value, sizeName(max))
				continue
			}
			switch e.name {
			case "request_bytes":
				l.RequestBytes = v
			case "record_bytes":
				l.RecordBytes = int(v)
			case "reply_bytes":
				l.ReplyBytes = v
			case "header_bytes":
				l.HeaderBytes = int(v)
			}
		case "header_timeout", "queue_timeout":
			d, ok := p.nonNegative(e, key)
			if ok && d == 0 {
				p.addf(e.val.Line, key, "must be positive")
				continue
			}
			if ok && e.name == "header_timeout" {
				l.HeaderTimeout = d
			} else if ok {
				l.QueueTimeout = d
			}
		case "concurrency", "queue":
			s, ok := p.scalar(e, key)
			if !ok {
				continue
			}
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 {
				p.addf(e.val.Line, key, "%q is not a whole number ≥ 0", s)
				continue
			}
			if e.name == "concurrency" {
				l.Concurrency = v
			} else {
				l.Queue = v
			}
		default:
			p.unknown(e, path, keys...)
		}
	}
}

// maxSizes bound every size limit, far above any sensible setting and far
// below where arithmetic on them (a limit plus one) could overflow.
var maxSizes = map[string]int64{
	"request_bytes": 1 << 30,
	"record_bytes":  1 << 30,
	"reply_bytes":   1 << 30,
	"header_bytes":  1 << 20,
}

// sizeName writes a power-of-two size with its unit, "1GiB".
func sizeName(v int64) string {
	for _, u := range []string{"GiB", "MiB", "KiB"} {
		if n := sizeUnits[u]; v%n == 0 {
			return strconv.FormatInt(v/n, 10) + u
		}
	}
	return strconv.FormatInt(v, 10)
}

// sizeUnits are the suffixes a size may carry.
var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"KB": 1e3, "MB": 1e6, "GB": 1e9,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
}

var sizeText = regexp.MustCompile(`^([0-9]+) ?([A-Za-z]*)$`)

// size reads a positive byte count: a number, or a string like "10MiB".
func size(n *yaml.Node) (int64, error) {
	const want = `want a whole number of bytes, or a size such as "512KiB" or "10MB" (units B, KB, MB, GB, KiB, MiB, GiB)`
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("%s, not a %s", want, kindName(n))
	}
	var v int64
	switch n.ShortTag() {
	case "!!int":
		if err := n.Decode(&v); err != nil {
			return 0, fmt.Errorf("%s is out of range", n.Value)
		}
	case "!!str":
		m := sizeText.FindStringSubmatch(n.Value)
		if m == nil {
			return 0, fmt.Errorf("invalid size %q (%s)", n.Value, want)
		}
		unit, ok := sizeUnits[m[2]]
		if !ok {
			return 0, fmt.Errorf("invalid size %q: unknown unit %q (%s)", n.Value, m[2], want)
		}
		count, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || count > math.MaxInt64/unit {
			return 0, fmt.Errorf("%s is out of range", n.Value)
		}
		v = count * unit
	default:
		return 0, fmt.Errorf("invalid size %s (%s)", n.Value, want)
	}
	if v <= 0 {
		return 0, fmt.Errorf("%s must be positive", n.Value)
	}
	return v, nil
}

package config

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// The timeouts and limits keys: durations and byte sizes.

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
	keys := []string{"request_bytes", "record_bytes", "reply_bytes", "header_bytes", "header_timeout", "concurrency", "queue", "queue_timeout", "body_timeout", "task_store_bytes", "mcp_sessions", "subscriptions", "per_caller", "live", "questions", "parts"}
	if !p.mapping(n, path, "a mapping with "+oneOf(keys, false)) {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case "request_bytes", "record_bytes", "reply_bytes", "header_bytes", "task_store_bytes":
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
			case "task_store_bytes":
				l.TaskStoreBytes = v
			}
		case "header_timeout", "queue_timeout", "body_timeout":
			d, ok := p.nonNegative(e, key)
			if ok && d == 0 {
				p.addf(e.val.Line, key, "must be positive")
				continue
			}
			if !ok {
				continue
			}
			switch e.name {
			case "header_timeout":
				l.HeaderTimeout = d
			case "queue_timeout":
				l.QueueTimeout = d
			default:
				l.BodyTimeout = d
			}
		case "concurrency", "queue", "mcp_sessions", "subscriptions":
			v, ok := p.count(e, key, "")
			if !ok {
				continue
			}
			if e.name == "mcp_sessions" {
				if v == 0 {
					p.addf(e.val.Line, key, "must be at least 1 (each initialize of an MCP client opens a session)")
					continue
				}
				l.MCPSessions = v
				continue
			}
			if e.name == "subscriptions" {
				l.Subscriptions = v // 0: none served
				continue
			}
			if e.name == "concurrency" {
				l.Concurrency = v
			} else {
				l.Queue = v
			}
		case "per_caller":
			p.perCaller(e, key, &l.PerCaller)
		case "live":
			p.live(e, key, &l.Live)
		case "questions":
			p.questions(e, key, &l.Questions)
		case "parts":
			p.parts(e, key, &l.Parts)
		default:
			p.unknown(e, path, keys...)
		}
	}
}

// perCaller decodes limits.per_caller.
func (p *parser) perCaller(e entry, path string, pc *PerCaller) {
	if !p.mapping(e.val, path, "a mapping with requests, per and concurrent") {
		return
	}
	for _, f := range p.entries(e.val, path) {
		key := join(path, f.name)
		switch f.name {
		case "requests", "concurrent":
			v, ok := p.count(f, key, "")
			if !ok {
				continue
			}
			if v > 1_000_000 {
				p.addf(f.val.Line, key, "%d is more than 1000000", v)
				continue
			}
			if f.name == "requests" {
				pc.Requests = v
			} else {
				pc.Concurrent = v
			}
		case "per":
			d, err := duration(f.val)
			if err == nil && (d < time.Second || d > 24*time.Hour) {
				err = fmt.Errorf("%s is not 1s to 24h", d)
			}
			if err != nil {
				p.addf(f.val.Line, key, "%v", err)
				continue
			}
			pc.Per = d
		default:
			p.unknown(f, path, "requests", "per", "concurrent")
		}
	}
}

// count reads a whole number ≥ 0; note follows the complaint about
// anything else.
func (p *parser) count(e entry, key, note string) (int, bool) {
	s, ok := p.scalar(e, key)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		p.addf(e.val.Line, key, "%q is not a whole number ≥ 0%s", s, note)
		return 0, false
	}
	return v, true
}

// maxSizes bound every size limit, far above any sensible setting and far
// below where arithmetic on them (a limit plus one) could overflow.
var maxSizes = map[string]int64{
	"request_bytes": 1 << 30,
	"record_bytes":  1 << 30,
	"reply_bytes":   1 << 30,
	"header_bytes":  1 << 20,

	"task_store_bytes": 1 << 30,
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

package config

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Restart policies.
const (
	RestartNever     = "never"
	RestartOnFailure = "on-failure"
)

// command decodes upstream.command: a list of strings, the first one the
// program.
func (p *parser) command(e entry, path string, u *Upstream) {
	if isNull(e.val) {
		return
	}
	if e.val.Kind != yaml.SequenceNode {
		p.addf(e.val.Line, path, `want a list such as [python3, agent.py], not a %s`, kindName(e.val))
		return
	}
	var argv []string
	for _, n := range e.val.Content {
		n = resolve(n)
		if n.Kind != yaml.ScalarNode || isNull(n) {
			p.addf(n.Line, path, "every word must be a string, not a %s", kindName(n))
			return
		}
		argv = append(argv, n.Value)
	}
	if len(argv) == 0 || argv[0] == "" {
		p.addf(e.val.Line, path, "empty command (want a list such as [python3, agent.py])")
		return
	}
	u.Command = argv
}

// restart decodes upstream.restart over its defaults.
func (p *parser) restart(n *yaml.Node, path string, r *Restart) {
	if !p.mapping(n, path, "a mapping with policy, max and backoff") {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case "policy":
			s, ok := p.scalar(e, key)
			if !ok {
				continue
			}
			if s != RestartNever && s != RestartOnFailure {
				p.addf(e.val.Line, key, "unknown policy %q (want %q or %q)", s, RestartNever, RestartOnFailure)
				continue
			}
			r.Policy = s
		case "max":
			if v, ok := p.count(e, key, " (0 means no limit)"); ok {
				r.Max = v
			}
		case "backoff":
			if d, ok := p.nonNegative(e, key); ok && d > 0 {
				r.Backoff = d
			} else if ok {
				p.addf(e.val.Line, key, "must be positive")
			}
		default:
			p.unknown(e, path, "policy", "max", "backoff")
		}
	}
}

// shutdown decodes the drain budget over its defaults.
func (p *parser) shutdown(n *yaml.Node, path string, s *Shutdown) {
	if !p.mapping(n, path, "a mapping with drain and agent_grace") {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case "drain":
			if d, ok := p.nonNegative(e, key); ok {
				s.Drain = d
			}
		case "agent_grace":
			if d, ok := p.nonNegative(e, key); ok {
				s.AgentGrace = d
			}
		default:
			p.unknown(e, path, "drain", "agent_grace")
		}
	}
}

// nonNegative reads a duration ≥ 0; null keeps the default (ok false).
func (p *parser) nonNegative(e entry, key string) (time.Duration, bool) {
	if isNull(e.val) {
		return 0, false
	}
	d, err := duration(e.val)
	if err == nil && d < 0 {
		err = fmt.Errorf("%q is negative", e.val.Value)
	}
	if err != nil {
		p.addf(e.val.Line, key, "%v", err)
		return 0, false
	}
	return d, true
}

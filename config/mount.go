package config

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Mounting: a door's section may put it on the platform's listener under
// a path (mount: /a2a) instead of a listener of its own (listen), as Agent
// Platform and Cloud Run give a container one port. Every path the
// listener serves belongs to one owner; what two owners both claim is a
// validate error naming both.
//
//	protocols:
//	  a2a:    {mount: /a2a, method: stream_query}   # JSON-RPC at /a2a, its card at /a2a/.well-known/agent-card.json
//	  mcp:    {mount: /mcp}                          # the endpoint at /mcp
//	  openai: {mount: /, method: chat, model: m}     # /v1/… only

// Claim is a path a door serves on a shared listener: Path itself and,
// when Tree, every path under it (Path + "/…").
type Claim struct {
	Path string
	Tree bool
}

// Covers reports whether the claim serves p.
func (c Claim) Covers(p string) bool {
	if p == c.Path {
		return true
	}
	// A tree's Path has no trailing "/" (Claims): p is under it when it
	// goes on with one. No allocation: every request asks.
	return c.Tree && len(p) > len(c.Path) && p[len(c.Path)] == '/' && strings.HasPrefix(p, c.Path)
}

// String is the claim as messages show it: "/invocations", "/a2a/…".
func (c Claim) String() string {
	if c.Tree {
		return strings.TrimSuffix(c.Path, "/") + "/…"
	}
	return c.Path
}

// overlaps reports whether a and b serve a path in common.
func (c Claim) overlaps(o Claim) bool {
	return c.Covers(o.Path) || o.Covers(c.Path)
}

// Claims are the paths door serves on the platform's listener: nothing
// when it has a listener of its own; everything under its mount; at "/",
// the routes its Kind declares (Routes: "/v1/" claims /v1/…), nil when
// the Kind declares none (it cannot mount at "/"); and, mounted anywhere,
// the well-known paths its Kind adds (WellKnown).
func (c *Config) Claims(door *Door) []Claim {
	if door.Mount == "" {
		return nil
	}
	k := c.kinds[kindIndex(c.kinds, door.Name)]
	var l []Claim
	switch {
	case door.Mount != "/":
		l = []Claim{{Path: door.Mount, Tree: true}}
	case k.Routes == nil:
		return nil
	default:
		for _, r := range k.Routes(door) {
			if r != "/" && strings.HasSuffix(r, "/") {
				l = append(l, Claim{Path: strings.TrimSuffix(r, "/"), Tree: true})
			} else {
				l = append(l, Claim{Path: r})
			}
		}
	}
	if k.WellKnown != nil {
		for _, r := range k.WellKnown(c, door) {
			l = append(l, Claim{Path: r})
		}
	}
	return l
}

// Mounted are the doors mounted on the platform's listener, in the order
// of the Kinds.
func (c *Config) Mounted() []*Door {
	var l []*Door
	for _, d := range c.Protocols.Doors {
		if d.Mount != "" {
			l = append(l, d)
		}
	}
	return l
}

// mountOf takes mount out of a door's section n at path, into door.Mount:
// n without it is what the door's Kind decodes (it knows listen, not
// mount). listen and mount together are a problem.
func (p *parser) mountOf(n *yaml.Node, path string, door *Door) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return n
	}
	var mount, listen *entry
	var rest []*yaml.Node
	for _, e := range p.entries(n, path) {
		switch e.name {
		case "mount":
			mount = &e
			continue
		case "listen":
			listen = &e
		}
		rest = append(rest, e.key, e.val)
	}
	if mount == nil {
		return n
	}
	key := join(path, "mount")
	if s, ok := p.scalar(*mount, key); ok {
		if err := checkMount(s); err != nil {
			p.addf(mount.val.Line, key, "%v", err)
		} else {
			door.Mount, door.MountLine = s, mount.key.Line
		}
	}
	if listen != nil {
		p.addf(listen.key.Line, join(path, "listen"), "a door has a listener of its own (listen) or is mounted on the platform's (mount, line %d), not both", mount.key.Line)
	}
	without := *n
	without.Content = rest
	return &without
}

// checkMount accepts "/" or an absolute, clean path of plain characters
// with no trailing "/".
func checkMount(s string) error {
	switch {
	case !strings.HasPrefix(s, "/"):
		return fmt.Errorf("%q does not start with \"/\" (want a path such as /a2a, or /)", s)
	case strings.ContainsAny(s, "?#%") || strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0:
		return fmt.Errorf("%q: want a plain path (no query, fragment, escapes, spaces or control characters)", s)
	case path.Clean(s) != s:
		// Requests are routed as sent: "/a2a/" or "/x/../a2a" would never
		// match what a client asks.
		return fmt.Errorf("%q is not a clean path (want %q)", s, path.Clean(s))
	}
	return nil
}

// owner is who claims paths on the platform's listener, for messages.
type owner struct {
	key    string // e.g. protocols.a2a.mount
	value  string // what it is set to, e.g. "/a2a"; "" for the platform
	line   int
	claims []Claim
}

func (o owner) String() string {
	s := o.key
	if o.value != "" {
		s += fmt.Sprintf(" %q", o.value)
	}
	if o.line > 0 {
		s += fmt.Sprintf(" (line %d)", o.line)
	}
	return s
}

// checkMounts reports what the doors mounted on the platform's listener
// cannot be: mounted when the platform's listener is off, at "/" when
// their Kind declares no routes, and claiming a path another owner
// claims (the platform's contract under /api/, its probes, the keep-alive
// probe, another door), at the later of the two, naming both.
func (p *parser) checkMounts(c *Config) {
	mounted := c.Mounted()
	if len(mounted) == 0 {
		return
	}
	// In file order: a collision is reported at the later of the two.
	slices.SortStableFunc(mounted, func(a, b *Door) int { return a.MountLine - b.MountLine })
	var owners []owner
	if c.Protocols.AgentPlatform {
		owners = append(owners, owner{key: "the platform's contract (/api/…)", claims: []Claim{{Path: strings.TrimSuffix(platformPrefix, "/"), Tree: true}}})
		for _, r := range platformPaths {
			owners = append(owners, owner{key: "the platform's health probe " + r, claims: []Claim{{Path: r}}})
		}
		if c.KeepAlive.Path != "" {
			owners = append(owners, owner{key: "keep_alive_probe.path", value: c.KeepAlive.Path, line: c.KeepAlive.Line, claims: []Claim{{Path: c.KeepAlive.Path}}})
		}
	}
	for _, d := range mounted {
		key := "protocols." + d.Name + ".mount"
		if !c.Protocols.AgentPlatform {
			p.addf(d.MountLine, key, "a mounted door is served on the platform's listener, and protocols.agent_platform is off (want it on, or listen: for a listener of its own)")
			continue
		}
		claims := c.Claims(d)
		if claims == nil {
			p.addf(d.MountLine, key, "%s declares no routes to serve at \"/\" (want a path of its own, e.g. /%s)", d.Name, d.Name)
			continue
		}
		o := owner{key: key, value: d.Mount, line: d.MountLine, claims: claims}
		if other, claim, ok := firstOverlap(o, owners); ok {
			p.addf(d.MountLine, key, "%q claims %s, which %s serves: each path of the platform's listener has one owner", d.Mount, claim, other)
			continue
		}
		owners = append(owners, o)
	}
}

// firstOverlap is the first of owners claiming a path o claims, and the
// claim of o's it overlaps.
func firstOverlap(o owner, owners []owner) (owner, Claim, bool) {
	for _, other := range owners {
		for _, a := range o.claims {
			for _, b := range other.claims {
				if a.overlaps(b) {
					return other, a, true
				}
			}
		}
	}
	return owner{}, Claim{}, false
}

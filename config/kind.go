package config

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Kind is a protocol the program can serve besides agent_platform, as
// config sees it: its key and how its section is decoded, checked and
// printed. The program's list of doors (proxy/doors) gives Parse one per
// door; config itself knows none.
type Kind struct {
	// Name is its key in the protocols section.
	Name string
	// Listen is its default listen address.
	Listen string
	// Decode decodes the section n at path into the door's options,
	// listen into door.Listen (which holds the default), reporting
	// problems through d. It reports false when the door is not on (a
	// problem was reported).
	Decode func(d Decoder, n *yaml.Node, path string, door *Door) bool
	// Check checks the door's options against the whole map, once the
	// preset's methods are in. Nil: nothing to check.
	Check func(d Decoder, c *Config, door *Door)
	// Print is the door's section for Expanded, listen included (config
	// puts mount in its place for a mounted door).
	Print func(door *Door) *yaml.Node
	// Routes are the paths the door serves when mounted at "/", as on a
	// listener of its own: a path, or one ending in "/" for every path
	// under it ("/v1/"). They are what it claims of the platform's
	// listener there (Claims); its health route is left out (the
	// platform's /healthz answers the same). Nil: it cannot mount at "/".
	// Mounted anywhere else, a door claims every path under its mount.
	Routes func(door *Door) []string
	// WellKnown are paths outside its mount that a mounted door serves
	// too: where a standard puts a document about the door's endpoint at
	// the listener's root (RFC 9728's metadata of the resource
	// https://host/mcp is /.well-known/oauth-protected-resource/mcp).
	// They are claimed as exact paths. Nil: none.
	WellKnown func(c *Config, door *Door) []string
}

// Decoder is what a Kind decodes and checks its section with: config's
// own helpers, so a door's problems are reported as every other one
// ("sidecar.yaml:12: protocols.a2a.url: …"), all at once.
type Decoder struct{ p *parser }

// Entry is one key and value of a mapping, aliases resolved.
type Entry struct {
	Name       string
	Key, Value *yaml.Node
}

func (e Entry) entry() entry { return entry{name: e.Name, key: e.Key, val: e.Value} }

// Entries lists a mapping's keys and values in file order, merge keys
// expanded; a key written twice is a problem.
func (d Decoder) Entries(n *yaml.Node, path string) []Entry {
	var l []Entry
	for _, e := range d.p.entries(n, path) {
		l = append(l, Entry{Name: e.name, Key: e.key, Value: e.val})
	}
	return l
}

// Mapping reports whether n is a mapping, reporting a problem ("want
// <want>, not a list") otherwise; a null is no mapping and no problem.
func (d Decoder) Mapping(n *yaml.Node, path, want string) bool { return d.p.mapping(n, path, want) }

// Scalar is e's text: ok is false for a null (no problem) and for a
// mapping or list (a problem).
func (d Decoder) Scalar(e Entry, path string) (string, bool) { return d.p.scalar(e.entry(), path) }

// Unknown reports a key the section does not have. In a door's own
// section (protocols.NAME) the keys it may have name mount too, which
// config takes out before the door decodes the rest (mountOf).
func (d Decoder) Unknown(e Entry, path string, allowed ...string) {
	if rest, ok := strings.CutPrefix(path, "protocols."); ok && !strings.Contains(rest, ".") && slices.Contains(allowed, "listen") {
		allowed = slices.Insert(slices.Clone(allowed), slices.Index(allowed, "listen")+1, "mount")
	}
	d.p.unknown(e.entry(), path, allowed...)
}

// Addf reports a problem at line of key path.
func (d Decoder) Addf(line int, path, format string, args ...any) {
	d.p.addf(line, path, format, args...)
}

// Listen decodes a door's listen key into door.Listen: a "host:port"
// address (a Kind whose section is not a Target's reads it with this).
func (d Decoder) Listen(e Entry, path string, door *Door) {
	if s, ok := d.p.scalar(e.entry(), path); ok {
		if err := checkListen(s); err != nil {
			d.p.addf(e.Value.Line, path, "%v", err)
			return
		}
		door.Listen = s
	}
}

// Strings decodes e as a list of distinct non-empty strings, what (e.g.
// "method names") naming its items in messages. A null is no list and no
// problem (ok false: the caller keeps its default); anything but a list,
// an item that is not a string, an empty one or one given twice is a
// problem, each reported at its line, and ok is false.
func (d Decoder) Strings(e Entry, path, what string) (list []string, ok bool) {
	if isNull(e.Value) {
		return nil, false
	}
	if e.Value.Kind != yaml.SequenceNode {
		d.p.addf(e.Value.Line, path, "want a list of %s such as [a, b], not a %s", what, kindName(e.Value))
		return nil, false
	}
	ok = true
	seen := make(map[string]bool, len(e.Value.Content))
	for _, n := range e.Value.Content {
		n = resolve(n)
		switch {
		case n.Kind != yaml.ScalarNode || isNull(n):
			d.p.addf(n.Line, path, "every item must be one of the %s, not a %s", what, kindName(n))
		case n.Value == "":
			d.p.addf(n.Line, path, "an item is empty (want one of the %s)", what)
		case seen[n.Value]:
			d.p.addf(n.Line, path, "%q is listed twice", n.Value)
		default:
			seen[n.Value] = true
			list = append(list, n.Value)
			continue
		}
		ok = false
	}
	return list, ok
}

// CheckMethods reports each of names (a door's list at key, declared at
// line) that is not a method of c's map (the preset's included): a name
// the map lists, or any name when it has "*".
func (d Decoder) CheckMethods(c *Config, line int, key string, names []string) {
	for _, name := range names {
		switch m := c.methodNamed(name); {
		case m == nil:
			d.p.addf(line, key, "%q is not a method of the map (want %s)", name, c.methodNames())
		case m.Mode == ModeBidi:
			d.p.addf(line, key, "%q is a bidi method, a conversation: its calls cannot go to it (a door that converses names it: docs/live.md)", name)
		}
	}
}

// Strings is a YAML flow list of l, for a Kind's Print.
func Strings(l []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range l {
		n.Content = append(n.Content, scalar(s))
	}
	return n
}

// Mapping is a YAML mapping of kv, keys (strings) and values (nodes) in
// turn, for a Kind's Print.
func Mapping(kv ...any) *yaml.Node { return mapping(kv...) }

// Quoted is s as a double-quoted YAML string, for a Kind's Print.
func Quoted(s string) *yaml.Node { return quoted(s) }

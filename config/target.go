package config

import "go.yaml.in/yaml/v3"

// Target is the options of a door whose every call goes to one method
// of the map, its section's method key.
type Target struct {
	// Method names the method of the map every call goes to (a name the
	// map lists, or any name when it has "*"). Required.
	Method string
	// Stream is whether Method is served as a stream: its api_mode is
	// stream or async_stream (a "*" declared without a mode is unary).
	Stream bool
}

// Field is a key of a Target door's section besides listen and method.
type Field struct {
	Key    string
	Decode func(d Decoder, e Entry, path string)
}

// Target decodes a Target door's section n at path: listen into
// door.Listen, method into t, and each of fields with its Decode. It
// reports whether the door is on: a mapping with a method.
func (d Decoder) Target(n *yaml.Node, path string, door *Door, t *Target, fields ...Field) bool {
	p := d.p
	if n.Kind != yaml.MappingNode {
		p.addf(n.Line, path, "want a mapping with listen and method, not a %s", kindName(n))
		return false
	}
	allowed := []string{"listen", "mount", "method"}
	for _, f := range fields {
		allowed = append(allowed, f.Key)
	}
entries:
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case "listen":
			if s, ok := p.scalar(e, key); ok {
				if err := checkListen(s); err != nil {
					p.addf(e.val.Line, key, "%v", err)
					continue
				}
				door.Listen = s
			}
		case "method":
			if s, ok := p.scalar(e, key); ok {
				t.Method = s
			}
		default:
			for _, f := range fields {
				if f.Key == e.name {
					f.Decode(d, Entry{Name: e.name, Key: e.key, Value: e.val}, key)
					continue entries
				}
			}
			p.unknown(e, path, allowed...)
		}
	}
	if t.Method == "" {
		p.addf(n.Line, join(path, "method"), "missing (want the method of the map its calls go to, e.g. method: stream_query)")
		return false
	}
	return true
}

// CheckTarget reports a Target door whose method is not one of c's map
// (the preset's included), and sets t.Stream.
func (d Decoder) CheckTarget(c *Config, door *Door, t *Target) {
	m := c.methodNamed(t.Method)
	if m == nil {
		d.p.addf(door.Line, "protocols."+door.Name+".method", "%q is not a method of the map (want %s)", t.Method, c.methodNames())
		return
	}
	if m.Mode == ModeBidi {
		d.p.addf(door.Line, "protocols."+door.Name+".method", "%q is a bidi method, a conversation: its calls cannot go to it (a door that converses names it: docs/live.md)", t.Method)
		return
	}
	t.Stream = m.Mode.Streaming()
}

// PrintTarget is a Target door's section for Expanded: listen, method,
// then kv, keys and values as Mapping takes them.
func PrintTarget(door *Door, t *Target, kv ...any) *yaml.Node {
	return Mapping(append([]any{"listen", quoted(door.Listen), "method", scalar(t.Method)}, kv...)...)
}

// TargetKind is the Kind of a door whose section is listen and method
// and nothing else; its Door's Options are a *Target. routes are its
// Routes, what it serves when mounted at "/".
func TargetKind(name, listen string, routes ...string) Kind {
	return Kind{
		Routes: func(*Door) []string { return routes },
		Name:   name,
		Listen: listen,
		Decode: func(d Decoder, n *yaml.Node, path string, door *Door) bool {
			t := &Target{}
			door.Options = t
			return d.Target(n, path, door, t)
		},
		Check: func(d Decoder, c *Config, door *Door) { d.CheckTarget(c, door, door.Options.(*Target)) },
		Print: func(door *Door) *yaml.Node { return PrintTarget(door, door.Options.(*Target)) },
	}
}

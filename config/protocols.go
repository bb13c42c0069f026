package config

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Protocols are the front doors the sidecar serves, each on a listener of
// its own, all in front of the one method map and sharing its limits.
//
//	protocols:
//	  agent_platform: {enabled: false}   # on unless turned off; listens on listen / $PORT
//	  agentcore: {listen: ":8080", method: stream_query}
//	  foundry:   {listen: ":8088", method: stream_query}
//	  a2a:       {listen: ":9000", method: stream_query, card: {name: …, description: …}}
//
// config knows only agent_platform and what every door shares (listen);
// the other keys are the Kinds the program gives Parse, one per door it
// can serve (proxy/doors), each decoding and checking its own options. A
// protocol other than agent_platform is on when its key is present.
type Protocols struct {
	// AgentPlatform is the Agent Platform contract on Listen (or --listen,
	// $PORT). Default: on.
	AgentPlatform bool
	// Doors are the other enabled protocols, in the order of the Kinds
	// Parse was given.
	Doors []*Door
}

// ProtocolAgentPlatform is the platform's protocol: its key in the
// protocols section, the protocol field of a call's log line and the label
// of its metrics.
const ProtocolAgentPlatform = "agent_platform"

// Door is one enabled protocol besides agent_platform: what every door
// shares, and its own options as its Kind decoded them.
type Door struct {
	// Name is its key in the protocols section, its Kind's Name.
	Name string
	// Listen is its own address, "host:port". Default: its Kind's Listen
	// (each runtime's fixed port).
	Listen string
	// Options are what its Kind's Decode made of the rest of its section.
	Options any
	// Line is where it is declared, for messages.
	Line int
}

// Door is the enabled protocol called name, or nil.
func (ps *Protocols) Door(name string) *Door {
	for _, d := range ps.Doors {
		if d.Name == name {
			return d
		}
	}
	return nil
}

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
	// Print is the door's section for Expanded, listen included.
	Print func(door *Door) *yaml.Node
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

// Unknown reports a key the section does not have.
func (d Decoder) Unknown(e Entry, path string, allowed ...string) {
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
		if c.methodNamed(name) == nil {
			d.p.addf(line, key, "%q is not a method of the map (want %s)", name, c.methodNames())
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
	allowed := []string{"listen", "method"}
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
	t.Stream = m.Mode.Streaming()
}

// PrintTarget is a Target door's section for Expanded: listen, method,
// then kv, keys and values as Mapping takes them.
func PrintTarget(door *Door, t *Target, kv ...any) *yaml.Node {
	return Mapping(append([]any{"listen", quoted(door.Listen), "method", scalar(t.Method)}, kv...)...)
}

// Mapping is a YAML mapping of kv, keys (strings) and values (nodes) in
// turn, for a Kind's Print.
func Mapping(kv ...any) *yaml.Node { return mapping(kv...) }

// Quoted is s as a double-quoted YAML string, for a Kind's Print.
func Quoted(s string) *yaml.Node { return quoted(s) }

// Listens is every enabled protocol's name and address, the platform's
// (Listen) first, then the others in the order of the Kinds.
func (c *Config) Listens() [][2]string {
	var l [][2]string
	if c.Protocols.AgentPlatform {
		l = append(l, [2]string{ProtocolAgentPlatform, c.Listen})
	}
	for _, d := range c.Protocols.Doors {
		l = append(l, [2]string{d.Name, d.Listen})
	}
	return l
}

// protocols decodes the protocols section: agent_platform here, every
// other key by its Kind.
func (p *parser) protocols(n *yaml.Node, path string, ps *Protocols, kinds []Kind) {
	names := []string{ProtocolAgentPlatform}
	for _, k := range kinds {
		names = append(names, k.Name)
	}
	if !p.mapping(n, path, "a mapping of protocols ("+strings.Join(names, ", ")+")") {
		return
	}
	byName := make(map[string]*Door)
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		if e.name == ProtocolAgentPlatform {
			p.platform(e, key, ps)
			continue
		}
		i := kindIndex(kinds, e.name)
		if i < 0 {
			p.unknown(e, path, names...)
			continue
		}
		d := &Door{Name: e.name, Listen: kinds[i].Listen, Line: e.key.Line}
		if kinds[i].Decode(Decoder{p}, e.val, key, d) {
			byName[e.name] = d
		}
	}
	for _, k := range kinds {
		if d := byName[k.Name]; d != nil {
			ps.Doors = append(ps.Doors, d)
		}
	}
}

// platform decodes protocols.agent_platform.
func (p *parser) platform(e entry, key string, ps *Protocols) {
	if !p.mapping(e.val, key, "a mapping with enabled") {
		return
	}
	for _, f := range p.entries(e.val, key) {
		fkey := join(key, f.name)
		if f.name != "enabled" {
			p.unknown(f, key, "enabled")
			continue
		}
		switch s, _ := p.scalar(f, fkey); s {
		case "true":
			ps.AgentPlatform = true
		case "false":
			ps.AgentPlatform = false
		default:
			p.addf(f.val.Line, fkey, "want true or false, not %q", s)
		}
	}
}

func kindIndex(kinds []Kind, name string) int {
	for i, k := range kinds {
		if k.Name == name {
			return i
		}
	}
	return -1
}

// checkProtocols checks what needs the whole map: each door's own Check
// (its method is one of the map's, after the preset's are added), and no
// two listeners, the admin one included, share a port.
func (p *parser) checkProtocols(c *Config, adminLine int) {
	for _, d := range c.Protocols.Doors {
		if k := c.kinds[kindIndex(c.kinds, d.Name)]; k.Check != nil {
			k.Check(Decoder{p}, c, d)
		}
	}
	for _, d := range c.Protocols.Doors {
		if c.Upstream.Network == "tcp" && loopsBack(c.Upstream.Address, d.Listen) {
			p.addf(d.Line, "protocols."+d.Name+".listen", "%q is the agent's address (upstream.url %q): every call would come back to the sidecar", d.Listen, c.Upstream.URL)
		}
	}
	// One problem per shared port, however many share it: at the second
	// listener on it, naming the others (the first keeps the port).
	listens := c.Listens()
	shared := make([]bool, len(listens))
	for i, a := range listens {
		if shared[i] {
			continue
		}
		group := []int{i}
		for j := i + 1; j < len(listens); j++ {
			if samePort(a[1], listens[j][1]) {
				group, shared[j] = append(group, j), true
			}
		}
		if len(group) < 2 {
			continue
		}
		second := listens[group[1]]
		var others []string
		for _, k := range group {
			if k != group[1] {
				others = append(others, listens[k][0])
			}
		}
		p.addf(c.protocolLine(second[0]), "protocols."+second[0]+".listen", "%q is the port of %s too: each protocol needs a port of its own",
			second[1], allOf(others))
	}
	if c.Admin.Listen == "" {
		return
	}
	var onAdmin []string
	for _, a := range listens {
		if samePort(c.Admin.Listen, a[1]) && a[0] != ProtocolAgentPlatform {
			onAdmin = append(onAdmin, a[0])
		}
	}
	if len(onAdmin) > 0 {
		p.addf(adminLine, "admin.listen", "%q is the port of %s: metrics must be served elsewhere", c.Admin.Listen, allOf(onAdmin))
	}
}

// allOf lists names as "a, b and c".
func allOf(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func (c *Config) protocolLine(name string) int {
	if d := c.Protocols.Door(name); d != nil {
		return d.Line
	}
	return 0
}

// methodNamed is the method called name: the one the map lists, else "*".
func (c *Config) methodNamed(name string) *Method {
	var wildcard *Method
	for _, m := range c.Methods {
		if m.Name == name {
			return m
		}
		if m.Name == "*" {
			wildcard = m
		}
	}
	return wildcard
}

func (c *Config) methodNames() string {
	names := make([]string, 0, len(c.Methods))
	for _, m := range c.Methods {
		if m.Name != "*" {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return oneOf(names, true)
}

// CheckListen reports an error when the platform's address as served,
// addr, is upstream.url's (every call would come back to the sidecar) or
// shares its port with another protocol's. The address may differ from
// Listen, which Parse checked: --listen or $PORT win over it, and sidecar
// dev moves it to loopback. from says where addr came from, for the
// message ("$PORT=3000", "--listen"); "" when it is Listen.
func (c *Config) CheckListen(addr, from string) error {
	if !c.Protocols.AgentPlatform {
		return nil
	}
	listener := "the agent_platform listener " + addr
	if from != "" {
		listener += " (from " + from + ")"
	}
	if c.Upstream.Network == "tcp" && loopsBack(c.Upstream.Address, addr) {
		msg := fmt.Sprintf("%s is the agent's address, upstream.url %q: every call would come back to the sidecar", listener, c.Upstream.URL)
		if strings.HasPrefix(from, "$PORT") {
			// A Node habit: PORT set in the shell for the agent.
			msg += "; $PORT is the sidecar's port, not the agent's: unset it or give --listen"
		}
		return errors.New(msg)
	}
	for _, d := range c.Protocols.Doors {
		if samePort(addr, d.Listen) {
			return fmt.Errorf("%s is on the port of protocols.%s.listen %q: each protocol needs a port of its own", listener, d.Name, d.Listen)
		}
	}
	return nil
}

// protocolsNode is the protocols section for Expanded.
func (c *Config) protocolsNode() *yaml.Node {
	n := mapping(ProtocolAgentPlatform, mapping("enabled", value(c.Protocols.AgentPlatform)))
	for _, d := range c.Protocols.Doors {
		n.Content = append(n.Content, scalar(d.Name), c.kinds[kindIndex(c.kinds, d.Name)].Print(d))
	}
	return n
}

// TargetKind is the Kind of a door whose section is listen and method
// and nothing else; its Door's Options are a *Target.
func TargetKind(name, listen string) Kind {
	return Kind{
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

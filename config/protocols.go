package config

import (
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
	// (each runtime's fixed port). Unused when Mount is set.
	Listen string
	// Mount is where it is served on the platform's listener instead of a
	// listener of its own: "/" or a clean path such as /a2a; "" for its
	// own listener. Its routes are served under it (Claims).
	Mount string
	// MountLine is where mount is set, for messages.
	MountLine int
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

// Listens is every enabled protocol's name and address, the platform's
// (Listen) first, then the others in the order of the Kinds; a mounted
// door has no address of its own and is not listed (Mounted).
func (c *Config) Listens() [][2]string {
	var l [][2]string
	if c.Protocols.AgentPlatform {
		l = append(l, [2]string{ProtocolAgentPlatform, c.Listen})
	}
	for _, d := range c.Protocols.Doors {
		if d.Mount == "" {
			l = append(l, [2]string{d.Name, d.Listen})
		}
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
		if kinds[i].Decode(Decoder{p}, p.mountOf(e.val, key, d), key, d) {
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
// (its method is one of the map's, after the preset's are added), and its
// listener (checkPorts).
func (p *parser) checkProtocols(c *Config, adminLine int) {
	for _, d := range c.Protocols.Doors {
		if k := c.kinds[kindIndex(c.kinds, d.Name)]; k.Check != nil {
			k.Check(Decoder{p}, c, d)
		}
	}
	p.checkPorts(c, adminLine)
	p.checkMounts(c)
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

// protocolsNode is the protocols section for Expanded.
func (c *Config) protocolsNode() *yaml.Node {
	n := mapping(ProtocolAgentPlatform, mapping("enabled", value(c.Protocols.AgentPlatform)))
	for _, d := range c.Protocols.Doors {
		n.Content = append(n.Content, scalar(d.Name), mounted(c.kinds[kindIndex(c.kinds, d.Name)].Print(d), d))
	}
	return n
}

// mounted is a door's section as its Kind printed it, with mount in place
// of listen when the door is mounted.
func mounted(n *yaml.Node, d *Door) *yaml.Node {
	if d.Mount == "" || n.Kind != yaml.MappingNode {
		return n
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "listen" {
			n.Content[i], n.Content[i+1] = scalar("mount"), quoted(d.Mount)
			return n
		}
	}
	n.Content = append([]*yaml.Node{scalar("mount"), quoted(d.Mount)}, n.Content...)
	return n
}

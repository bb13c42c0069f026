package config

import (
	"fmt"
	"net/url"

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
// A protocol other than agent_platform is on when its key is present.
type Protocols struct {
	// AgentPlatform is the Agent Platform contract on Listen (or --listen,
	// $PORT). Default: on.
	AgentPlatform bool
	// AgentCore is AWS Bedrock AgentCore Runtime's HTTP protocol
	// (POST /invocations, GET /ping); nil when off.
	AgentCore *Protocol
	// Foundry is Azure AI Foundry hosted agents' invocations protocol
	// (POST /invocations, GET /readiness); nil when off.
	Foundry *Protocol
	// A2A is the Agent2Agent protocol; nil when off.
	A2A *A2A
}

// The protocols' names: keys of the protocols section, and the protocol
// field of the call's log line and label of its metrics.
const (
	ProtocolAgentPlatform = "agent_platform"
	ProtocolAgentCore     = "agentcore"
	ProtocolFoundry       = "foundry"
	ProtocolA2A           = "a2a"
)

// Protocol is one front door besides the platform's: where it listens and
// which method of the map its calls go to.
type Protocol struct {
	// Listen is its own address, "host:port". Defaults: agentcore ":8080",
	// foundry ":8088", a2a ":9000" (each runtime's fixed port).
	Listen string
	// Method names the method of the map every call goes to (a name the
	// map lists, or any name when it has "*"). Required.
	Method string
	// Stream is whether Method is served as a stream: its api_mode is
	// stream or async_stream (a "*" declared without a mode is unary).
	Stream bool
	// Line is where the protocol is declared, for messages.
	Line int
}

// A2A is the A2A door's protocol and its agent card.
type A2A struct {
	Protocol
	Card Card
	// URL is the public URL of the JSON-RPC endpoint the card advertises
	// (an absolute http or https URL), for a door behind a proxy or a
	// gateway that does not say where it was reached. Default: "" (the
	// scheme and host the card was asked on, X-Forwarded-Proto and
	// X-Forwarded-Host honoured).
	URL string
}

// Card is what the A2A agent card says about the agent.
type Card struct {
	// Name is the agent's name. Default: "" (the A2A door picks one).
	Name string
	// Description is what the agent does. Default: "".
	Description string
}

// protocolDefaults are the listen addresses each runtime expects.
var protocolDefaults = map[string]string{
	ProtocolAgentCore: ":8080",
	ProtocolFoundry:   ":8088",
	ProtocolA2A:       ":9000",
}

// Listens is every enabled protocol's name and address, the platform's
// (Listen) first, in the order agent_platform, agentcore, foundry, a2a.
func (c *Config) Listens() [][2]string {
	var l [][2]string
	if c.Protocols.AgentPlatform {
		l = append(l, [2]string{ProtocolAgentPlatform, c.Listen})
	}
	for _, p := range c.Protocols.others() {
		l = append(l, [2]string{p.name, p.Listen})
	}
	return l
}

type namedProtocol struct {
	name string
	*Protocol
}

// others are the enabled protocols besides the platform's, in order.
func (ps *Protocols) others() []namedProtocol {
	var l []namedProtocol
	if ps.AgentCore != nil {
		l = append(l, namedProtocol{ProtocolAgentCore, ps.AgentCore})
	}
	if ps.Foundry != nil {
		l = append(l, namedProtocol{ProtocolFoundry, ps.Foundry})
	}
	if ps.A2A != nil {
		l = append(l, namedProtocol{ProtocolA2A, &ps.A2A.Protocol})
	}
	return l
}

// protocols decodes the protocols section.
func (p *parser) protocols(n *yaml.Node, path string, ps *Protocols) {
	if !p.mapping(n, path, "a mapping of protocols (agent_platform, agentcore, foundry, a2a)") {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch e.name {
		case ProtocolAgentPlatform:
			if !p.mapping(e.val, key, "a mapping with enabled") {
				continue
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
		case ProtocolAgentCore, ProtocolFoundry:
			pr := &Protocol{Listen: protocolDefaults[e.name], Line: e.key.Line}
			if p.protocol(e.val, key, pr, nil) {
				if e.name == ProtocolAgentCore {
					ps.AgentCore = pr
				} else {
					ps.Foundry = pr
				}
			}
		case ProtocolA2A:
			a := &A2A{Protocol: Protocol{Listen: protocolDefaults[e.name], Line: e.key.Line}}
			if p.protocol(e.val, key, &a.Protocol, a) {
				ps.A2A = a
			}
		default:
			p.unknown(e, path, ProtocolAgentPlatform, ProtocolAgentCore, ProtocolFoundry, ProtocolA2A)
		}
	}
}

// protocol decodes one protocol's listen and method, and for A2A (a) its
// card and url. It reports whether the protocol is on: a mapping with a
// method.
func (p *parser) protocol(n *yaml.Node, path string, pr *Protocol, a *A2A) bool {
	if n.Kind != yaml.MappingNode {
		p.addf(n.Line, path, "want a mapping with listen and method, not a %s", kindName(n))
		return false
	}
	allowed := []string{"listen", "method"}
	if a != nil {
		allowed = append(allowed, "card", "url")
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		switch {
		case e.name == "listen":
			if s, ok := p.scalar(e, key); ok {
				if err := checkListen(s); err != nil {
					p.addf(e.val.Line, key, "%v", err)
					continue
				}
				pr.Listen = s
			}
		case e.name == "method":
			if s, ok := p.scalar(e, key); ok {
				pr.Method = s
			}
		case e.name == "card" && a != nil:
			p.card(e.val, key, &a.Card)
		case e.name == "url" && a != nil:
			if s, ok := p.scalar(e, key); ok {
				if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					p.addf(e.val.Line, key, "%q is not an absolute http or https URL (want e.g. https://agents.example.com/price/)", s)
					continue
				}
				a.URL = s
			}
		default:
			p.unknown(e, path, allowed...)
		}
	}
	if pr.Method == "" {
		p.addf(n.Line, join(path, "method"), "missing (want the method of the map its calls go to, e.g. method: stream_query)")
		return false
	}
	return true
}

// card decodes the A2A agent card's name and description.
func (p *parser) card(n *yaml.Node, path string, c *Card) {
	if !p.mapping(n, path, "a mapping with name and description") {
		return
	}
	for _, e := range p.entries(n, path) {
		key := join(path, e.name)
		s, ok := p.scalar(e, key)
		switch e.name {
		case "name":
			if ok {
				c.Name = s
			}
		case "description":
			if ok {
				c.Description = s
			}
		default:
			p.unknown(e, path, "name", "description")
		}
	}
}

// checkProtocols checks what needs the whole map: each protocol's method
// is one of the map's (after the preset's are added), and no two
// listeners, the admin one included, share a port. It sets Stream.
func (p *parser) checkProtocols(c *Config, adminLine int) {
	for _, pr := range c.Protocols.others() {
		m := c.methodNamed(pr.Method)
		if m == nil {
			p.addf(pr.Line, "protocols."+pr.name+".method", "%q is not a method of the map (want %s)", pr.Method, c.methodNames())
			continue
		}
		pr.Stream = m.Mode.Streaming()
	}
	for _, pr := range c.Protocols.others() {
		if c.Upstream.Network == "tcp" && loopsBack(c.Upstream.Address, pr.Listen) {
			p.addf(pr.Line, "protocols."+pr.name+".listen", "%q is the agent's address (upstream.url %q): every call would come back to the sidecar", pr.Listen, c.Upstream.URL)
		}
	}
	listens := c.Listens()
	for i, a := range listens {
		for _, b := range listens[:i] {
			if samePort(a[1], b[1]) {
				p.addf(c.protocolLine(a[0]), "protocols."+a[0]+".listen", "%q is the port of %s too: each protocol needs a port of its own", a[1], b[0])
			}
		}
		if c.Admin.Listen != "" && samePort(c.Admin.Listen, a[1]) && a[0] != ProtocolAgentPlatform {
			p.addf(adminLine, "admin.listen", "%q is the port of %s: metrics must be served elsewhere", c.Admin.Listen, a[0])
		}
	}
}

func (c *Config) protocolLine(name string) int {
	for _, pr := range c.Protocols.others() {
		if pr.name == name {
			return pr.Line
		}
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

// CheckListen reports an error when the platform's address as served
// (--listen or $PORT may change it from Listen) shares its port with
// another protocol's: validate cannot see those.
func (c *Config) CheckListen(addr string) error {
	if !c.Protocols.AgentPlatform {
		return nil
	}
	for _, pr := range c.Protocols.others() {
		if samePort(addr, pr.Listen) {
			return fmt.Errorf("the agent_platform listener %s is on the port of protocols.%s.listen %q: each protocol needs a port of its own", addr, pr.name, pr.Listen)
		}
	}
	return nil
}

// protocolsNode is the protocols section for Expanded.
func (c *Config) protocolsNode() *yaml.Node {
	n := mapping(ProtocolAgentPlatform, mapping("enabled", value(c.Protocols.AgentPlatform)))
	for _, pr := range c.Protocols.others() {
		pn := mapping("listen", quoted(pr.Listen), "method", scalar(pr.Method))
		if pr.name == ProtocolA2A {
			pn.Content = append(pn.Content, scalar("card"), mapping(
				"name", quoted(c.Protocols.A2A.Card.Name), "description", quoted(c.Protocols.A2A.Card.Description)))
			if u := c.Protocols.A2A.URL; u != "" {
				pn.Content = append(pn.Content, scalar("url"), quoted(u))
			}
		}
		n.Content = append(n.Content, scalar(pr.name), pn)
	}
	return n
}

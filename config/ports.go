package config

import (
	"errors"
	"fmt"
	"strings"
)

// checkPorts reports a door listening on the agent's address, and
// listeners sharing a port, the admin one included.
func (p *parser) checkPorts(c *Config, adminLine int) {
	for _, d := range c.Protocols.Doors {
		if d.Mount == "" && c.Upstream.Network == "tcp" && loopsBack(c.Upstream.Address, d.Listen) {
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
		p.addf(c.protocolLine(second[0]), "protocols."+second[0]+".listen", "%q is the port of %s too: each protocol needs a port of its own, or mount: a path on the platform's listener",
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
		if d.Mount == "" && samePort(addr, d.Listen) {
			return fmt.Errorf("%s is on the port of protocols.%s.listen %q: each protocol needs a port of its own", listener, d.Name, d.Listen)
		}
	}
	return nil
}

package doors_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/a2a"
	"github.com/sidecar-dev/sidecar/proxy/agentcore"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// Parse is config.Parse with the program's doors.
func Parse(name string, data []byte) (*config.Config, error) {
	return config.Parse(name, data, doors.Kinds(doors.All)...)
}

const protocolsBase = `
upstream: {url: "http://127.0.0.1:8000"}
methods:
  query: {}
  stream_query: {mode: stream}
`

// TestProtocols: the protocols section turns doors on, each on its own
// port with a method of the map, and validate --print writes it back.
func TestProtocols(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(protocolsBase+`
protocols:
  agentcore: {listen: ":8081", method: stream_query}
  foundry: {method: query}
  a2a: {listen: ":9000", method: stream_query, card: {name: Price agent, description: Prices things}, url: "https://agents.example/price/"}
`))
	if err != nil {
		t.Fatal(err)
	}
	ps := c.Protocols
	agentCore, foundry, a2aDoor := ps.Door("agentcore"), ps.Door("foundry"), ps.Door("a2a")
	if !ps.AgentPlatform || agentCore == nil || agentCore.Listen != ":8081" || !agentCore.Options.(*agentcore.Section).Stream ||
		foundry == nil || foundry.Listen != ":8088" || foundry.Options.(*config.Target).Stream || foundry.Options.(*config.Target).Method != "query" ||
		a2aDoor == nil || a2aOf(c).Card.Name != "Price agent" || a2aOf(c).Card.Description != "Prices things" || a2aDoor.Listen != ":9000" || a2aOf(c).URL != "https://agents.example/price/" {
		t.Fatalf("Protocols = %+v", ps)
	}
	if got := c.Listens(); len(got) != 4 || got[0] != [2]string{"agent_platform", ":8080"} || got[3] != [2]string{"a2a", ":9000"} {
		t.Errorf("Listens = %v", got)
	}
	again, err := Parse("printed.yaml", c.Expanded())
	if err != nil {
		t.Fatalf("the printed map does not parse: %v\n%s", err, c.Expanded())
	}
	if string(again.Expanded()) != string(c.Expanded()) || !reflect.DeepEqual(a2aOf(again).Card, a2aOf(c).Card) || a2aOf(again).URL != a2aOf(c).URL {
		t.Errorf("printed twice differs:\n%s\n---\n%s", c.Expanded(), again.Expanded())
	}
	if err := c.CheckListen("0.0.0.0:8088", "$PORT=8088"); err == nil || !strings.Contains(err.Error(), "foundry") {
		t.Errorf("CheckListen($PORT on foundry's port) = %v, want an error naming foundry", err)
	}
	if err := c.CheckListen("0.0.0.0:08088", "$PORT=08088"); err == nil || !strings.Contains(err.Error(), "foundry") {
		t.Errorf("CheckListen($PORT 08088 on foundry's port 8088) = %v, want an error naming foundry", err)
	}
	if err := c.CheckListen("0.0.0.0:8080", "$PORT=8080"); err != nil {
		t.Errorf("CheckListen(:8080) = %v", err)
	}

	off, err := Parse("sidecar.yaml", []byte(protocolsBase+`
protocols:
  agent_platform: {enabled: false}
  agentcore: {method: "query"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if off.Protocols.AgentPlatform || off.Protocols.Door("agentcore").Listen != ":8080" || len(off.Listens()) != 1 {
		t.Errorf("agent_platform off: %+v, %v", off.Protocols, off.Listens())
	}
	if !strings.Contains(string(off.Expanded()), "enabled: false") {
		t.Errorf("Expanded does not keep agent_platform off:\n%s", off.Expanded())
	}
	plain, _ := Parse("sidecar.yaml", []byte(protocolsBase))
	if !plain.Protocols.AgentPlatform || strings.Contains(string(plain.Expanded()), "protocols") {
		t.Errorf("no protocols section: platform on, nothing printed; got %+v\n%s", plain.Protocols, plain.Expanded())
	}
}

// a2aOf is the options of c's A2A door.
func a2aOf(c *config.Config) *a2a.Options { return c.Protocols.Door("a2a").Options.(*a2a.Options) }

// TestProtocolProblems: the validate errors of the protocols section.
func TestProtocolProblems(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"same port as the platform", `
protocols:
  agentcore: {method: query}`, `protocols.agentcore.listen: ":8080" is the port of agent_platform too`},
		{"two protocols on one port", `
protocols:
  agent_platform: {enabled: false}
  agentcore: {listen: ":9000", method: query}
  a2a: {listen: "127.0.0.1:9000", method: query}`, `protocols.a2a.listen: "127.0.0.1:9000" is the port of agentcore too`},
		{"one port written two ways", `
protocols:
  agent_platform: {enabled: false}
  agentcore: {listen: ":18170", method: query}
  foundry: {listen: ":018170", method: query}`, `protocols.foundry.listen: ":018170" is the port of agentcore too`},
		{"admin on a port written two ways", `
admin: {listen: "127.0.0.1:08088"}
protocols:
  foundry: {method: query}`, `admin.listen: "127.0.0.1:08088" is the port of foundry`},
		{"unknown method", `
protocols:
  foundry: {method: nope}`, `protocols.foundry.method: "nope" is not a method of the map (want "query" or "stream_query")`},
		{"no method", `
protocols:
  foundry: {listen: ":8088"}`, `protocols.foundry.method: missing`},
		{"bad listen", `
protocols:
  foundry: {listen: "8088", method: query}`, `protocols.foundry.listen: "8088" is not host:port`},
		{"unknown protocol", `
protocols:
  nope: {method: query}`, `protocols.nope: unknown key (want ` + strings.Join(doors.Names(doors.All)[:len(doors.All)-1], ", ") + " or " + doors.All[len(doors.All)-1].Name + `)`},
		{"card on foundry", `
protocols:
  foundry: {method: query, card: {name: x}}`, `protocols.foundry.card: unknown key (want listen, mount or method)`},
		{"card key", `
protocols:
  a2a: {method: query, card: {title: x}}`, `protocols.a2a.card.title: unknown key (want name, description, input_modes or output_modes)`},
		{"a2a url not absolute", `
protocols:
  a2a: {method: query, url: "agents.example/price"}`, `protocols.a2a.url: "agents.example/price" is not an absolute http or https URL`},
		{"url on agentcore", `
protocols:
  agentcore: {listen: ":8081", method: query, url: "https://x.example/"}`, `protocols.agentcore.url: unknown key (want listen, mount, method or ws)`},
		{"enabled not a bool", `
protocols:
  agent_platform: {enabled: maybe}`, `protocols.agent_platform.enabled: want true or false, not "maybe"`},
		{"the agent's port", `
protocols:
  foundry: {listen: ":8000", method: query}`, `protocols.foundry.listen: ":8000" is the agent's address`},
		{"admin on a protocol's port", `
admin: {listen: "127.0.0.1:8088"}
protocols:
  foundry: {method: query}`, `admin.listen: "127.0.0.1:8088" is the port of foundry`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("sidecar.yaml", []byte(protocolsBase+tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want %q", err, tt.want)
			}
		})
	}
}

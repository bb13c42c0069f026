package doors_test

import (
	"strings"
	"testing"
)

// TestBidiDoorProblems: a conversation is reached only by a door that
// converses, by name: no door's calls go to it, and AgentCore's ws names
// nothing else.
func TestBidiDoorProblems(t *testing.T) {
	const base = `
upstream: {url: "http://127.0.0.1:8000"}
methods:
  query: {}
  converse: {mode: bidi, call: GET /live}
`
	tests := []struct{ name, yaml, want string }{
		{"agentcore method", "protocols:\n  agentcore: {method: converse}\n", `protocols.agentcore.method: "converse" is a bidi method, a conversation: its calls cannot go to it`},
		{"a2a method", "protocols:\n  a2a: {method: converse}\n", `protocols.a2a.method: "converse" is a bidi method`},
		{"mcp methods", "protocols:\n  mcp: {methods: [query, converse]}\n", `protocols.mcp.methods: "converse" is a bidi method`},
		{"agentcore ws", "protocols:\n  agentcore: {method: query, ws: query}\n", `protocols.agentcore.ws: "query" is not a bidi method of the map (want a method with mode: bidi)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("sidecar.yaml", []byte(base+tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want %q", err, tt.want)
			}
		})
	}
	c, err := Parse("sidecar.yaml", []byte(base+"protocols:\n  agentcore: {listen: \":8081\", method: query, ws: converse}\n"))
	if err != nil {
		t.Fatalf("agentcore with ws: converse: %v", err)
	}
	again, err := Parse("printed.yaml", c.Expanded())
	if err != nil || !strings.Contains(string(c.Expanded()), `ws: "converse"`) {
		t.Errorf("the printed map (%v):\n%s\nwant it to parse, with ws: \"converse\"", err, c.Expanded())
	}
	_ = again
}

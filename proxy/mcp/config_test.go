package mcp_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
	"github.com/sidecar-dev/sidecar/proxy/mcp"
)

const base = `
upstream: {url: "http://127.0.0.1:8000"}
methods:
  query: {}
  stream_query: {mode: stream}
`

func parse(yaml string) (*config.Config, error) {
	return config.Parse("sidecar.yaml", []byte(base+yaml), doors.Kinds(doors.All)...)
}

// TestSection: protocols.mcp's defaults (listen :8090, path /mcp, every
// method), its keys, the door's URL ending with its path, and validate
// --print writing them back.
func TestSection(t *testing.T) {
	for _, tt := range []struct {
		yaml, listen, path string
		methods            []string
	}{
		{"protocols: {mcp: {}}\n", ":8090", "/mcp", nil},
		{"protocols: {mcp: }\n", ":8090", "/mcp", nil},
		{"protocols:\n  mcp: {listen: \"127.0.0.1:9100\", path: /tools/mcp, methods: [stream_query, query]}\n", "127.0.0.1:9100", "/tools/mcp", []string{"stream_query", "query"}},
	} {
		c, err := parse(tt.yaml)
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		d := c.Protocols.Door(mcp.Name)
		o := mcp.Protocol.Options(d, core.Host{})
		if d == nil || d.Listen != tt.listen || o.Path != tt.path || !slices.Equal(o.Methods, tt.methods) {
			t.Errorf("%s: door %+v, options %+v", tt.yaml, d, o)
		}
		for _, reg := range doors.All {
			if reg.Name == mcp.Name && reg.URL("http://127.0.0.1:8090", d) != "http://127.0.0.1:8090"+tt.path {
				t.Errorf("%s: the registered door's URL = %q, want the listener's, then %s", tt.yaml, reg.URL("http://127.0.0.1:8090", d), tt.path)
			}
		}
		again, err := config.Parse("printed.yaml", c.Expanded(), doors.Kinds(doors.All)...)
		if err != nil || string(again.Expanded()) != string(c.Expanded()) {
			t.Errorf("%s: printed map %v:\n%s", tt.yaml, err, c.Expanded())
		}
	}
}

// TestSectionProblems: each mistake in protocols.mcp is reported at its
// line, by the list decoder for methods.
func TestSectionProblems(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"protocols: {mcp: {methods: query}}\n", `protocols.mcp.methods: want a list of method names such as [a, b], not a string`},
		{"protocols: {mcp: {methods: {query: 1}}}\n", `protocols.mcp.methods: want a list of method names such as [a, b], not a mapping`},
		{"protocols: {mcp: {methods: [query, query]}}\n", `protocols.mcp.methods: "query" is listed twice`},
		{"protocols: {mcp: {methods: [query, [x]]}}\n", `protocols.mcp.methods: every item must be one of the method names, not a list`},
		{"protocols: {mcp: {methods: [query, \"\"]}}\n", `protocols.mcp.methods: an item is empty`},
		{"protocols: {mcp: {methods: []}}\n", `protocols.mcp.methods: empty list`},
		{"protocols: {mcp: {methods: [query, ask]}}\n", `protocols.mcp.methods: "ask" is not a method of the map (want "query" or "stream_query")`},
		{"protocols: {mcp: {path: mcp}}\n", `protocols.mcp.path: "mcp" is not a path`},
		{"protocols: {mcp: {listen: \"8090\"}}\n", `protocols.mcp.listen: "8090" is not host:port`},
		{"protocols: {mcp: {method: query}}\n", `protocols.mcp.method: unknown key: did you mean methods? (want listen, mount, path or methods)`},
		{"protocols: {mcp: [1]}\n", `protocols.mcp: want a mapping with listen, path and methods, not a list`},
		{"limits: {mcp_sessions: 0}\nprotocols: {mcp: {}}\n", `limits.mcp_sessions: must be at least 1`},
		{"protocols: {mcp: {listen: \":8088\"}, foundry: {method: query}}\n", `is the port of`},
	} {
		_, err := parse(tt.yaml)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s = %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

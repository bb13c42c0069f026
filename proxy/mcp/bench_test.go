package mcp

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

// BenchmarkOpen is the door's own work on a 2026-07-28 tools/call and
// tools/list (no agent): reading the JSON-RPC request, checking its
// headers, and the exchange or the answer.
func BenchmarkOpen(b *testing.B) {
	cfg, err := config.Parse("bench.yaml", []byte(strings.ReplaceAll(testMap, "AGENT", "http://127.0.0.1:1")))
	if err != nil {
		b.Fatal(err)
	}
	d, err := New(cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, bb := range []struct{ name, method, params, tool string }{
		{"tools/call", "tools/call", `"name":"story","arguments":{"message":"hello there"},`, "story"},
		{"tools/list", "tools/list", ``, ""},
	} {
		body := `{"jsonrpc":"2.0","id":7,"method":"` + bb.method + `","params":{` + bb.params + modernMeta + `}}`
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("MCP-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", bb.method)
		if bb.tool != "" {
			r.Header.Set("Mcp-Name", bb.tool)
		}
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ex, err := d.Open(cfg, "/mcp", r, []byte(body))
				if bb.tool != "" && (err != nil || ex.Writer == nil) {
					b.Fatal(err)
				}
			}
		})
	}
}

package mcp

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// FuzzOpen: whatever the body and the MCP headers, Open never panics, and
// what it answers itself is one JSON-RPC message (or a notification's
// empty 202); a request it opens for the agent names a tool of the map.
func FuzzOpen(f *testing.F) {
	cfg, err := config.Parse("fuzz.yaml", []byte(strings.ReplaceAll(testMap, "AGENT", "http://127.0.0.1:1")))
	if err != nil {
		f.Fatal(err)
	}
	d, err := New(cfg, Options{})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []struct{ body, version, method, name string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"message":"hi"},` + modernMeta + `}}`, "2026-07-28", "tools/call", "ask"},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{` + modernMeta + `}}`, "2026-07-28", "tools/list", ""},
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, "", "", ""},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "2025-11-25", "", ""},
		{`{"jsonrpc":"2.0","id":5,"result":{}}`, "2026-07-28", "", ""},
		{`[{"jsonrpc":"2.0"}]`, "", "", ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s\u00e9","_meta":{"progressToken":-1.5e3}}}`, "2026-07-28", "tools/call", "=?base64?c8Op?="},
	} {
		f.Add(seed.body, seed.version, seed.method, seed.name)
	}
	f.Fuzz(func(t *testing.T, body, version, method, name string) {
		r := httptest.NewRequest("POST", "/mcp", nil)
		for h, v := range map[string]string{"Mcp-Protocol-Version": version, "Mcp-Method": method, "Mcp-Name": name} {
			if v != "" {
				r.Header[h] = []string{v}
			}
		}
		ex, err := d.Open(cfg, "/mcp", r, []byte(body))
		var a *core.Answer
		switch {
		case errors.As(err, &a):
			if a.Status == 202 {
				if len(a.Body) != 0 {
					t.Errorf("202 with a body %q", a.Body)
				}
				return
			}
			var v struct {
				JSONRPC string
				Result  json.RawMessage
				Error   *struct{ Code int }
			}
			if json.Unmarshal(a.Body, &v) != nil || v.JSONRPC != "2.0" || (v.Result == nil) == (v.Error == nil) {
				t.Errorf("%s: answer %d %q is no JSON-RPC response", body, a.Status, a.Body)
			}
		case err != nil:
			t.Errorf("%s: %v, want an answer or an exchange", body, err)
		case d.tools[ex.Call.Name] == nil || ex.Writer == nil || !json.Valid(ex.Call.Input.Raw):
			t.Errorf("%s: opened %+v, want a tool's call", body, ex.Call)
		}
	})
}

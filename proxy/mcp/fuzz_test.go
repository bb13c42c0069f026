package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/ask"
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

// FuzzResult: whatever records an agent's stream holds (text, parts well
// formed or not, anything), a streaming tool's answer never panics, and
// ends with one JSON-RPC response: the result, its content in order, or
// an isError saying why.
func FuzzResult(f *testing.F) {
	cfg, err := config.Parse("fuzz.yaml", []byte("limits: {parts: {bytes: 64, total: 128}, reply_bytes: 4KiB}\n"+
		strings.ReplaceAll(testMap, "AGENT", "http://127.0.0.1:1")))
	if err != nil {
		f.Fatal(err)
	}
	d, err := New(cfg, Options{})
	if err != nil {
		f.Fatal(err)
	}
	png := `{"inline_data":{"mime_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}}`
	for _, seed := range []string{
		"\"a\"\n" + png + "\n{\"text\":\"b\"}",
		`{"inline_data":{"mime_type":"audio/wav","data":"AAAA"}}` + "\n" + `{"file_data":{"file_uri":"https://e.com/a b"}}`,
		`{"data":{"x":1}}` + "\n" + `{"data":[1]}` + "\n" + `{"inlineData":{"mimeType":"text/plain","displayName":"a\u0000b","data":"QQ"}}`,
		`{"inline_data":{"mime_type":"image/png\r\n","data":"AAAA"}}`,
	} {
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, stream string, progress bool) {
		var recs [][]byte
		for _, l := range strings.Split(stream, "\n") {
			var b bytes.Buffer
			// A question waits for the caller's answer (ask.go): not here.
			if json.Compact(&b, []byte(l)) == nil && !ask.Is(b.Bytes()) {
				recs = append(recs, b.Bytes())
			}
		}
		ex := &exchange{id: []byte("1"), modern: true, maxText: cfg.Limits.ReplyBytes, door: d}
		if progress {
			ex.token = []byte(`"p"`)
		}
		w := httptest.NewRecorder()
		enc := ex.Encoder(w)
		r := &lines{recs: recs}
		if err := enc.Copy(r); err != nil {
			t.Fatal(err)
		}
		if s, ok := enc.(core.Stopper); ok && s.Stopped() != nil {
			enc.Fail(core.FailureOf(s.Stopped()))
		}
		frames := strings.Split(strings.TrimSuffix(w.Body.String(), "\n\n"), "\n\n")
		last := strings.TrimPrefix(frames[len(frames)-1], "data: ")
		var v struct {
			ID     json.RawMessage
			Result *struct{ Content []json.RawMessage }
		}
		if json.Unmarshal([]byte(last), &v) != nil || string(v.ID) != "1" || v.Result == nil || len(v.Result.Content) == 0 {
			t.Errorf("%q: the last frame %q is no result", stream, last)
		}
	})
}

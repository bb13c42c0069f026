package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

// benchDoor is the door on the test map, its agent nowhere: the
// benchmarks measure the door's own work.
func benchDoor(b *testing.B) (*config.Config, *Door) {
	b.Helper()
	cfg, err := config.Parse("bench.yaml", []byte(strings.ReplaceAll(testMap, "AGENT", "http://127.0.0.1:1")))
	if err != nil {
		b.Fatal(err)
	}
	d, err := New(cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return cfg, d
}

// BenchmarkOpen is the door's own work on a 2026-07-28 tools/call and
// tools/list (no agent): reading the JSON-RPC request, checking its
// headers, and the exchange or the answer.
func BenchmarkOpen(b *testing.B) {
	cfg, d := benchDoor(b)
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

// lines are records from a slice, for the benchmarks.
type lines struct {
	recs [][]byte
	i    int
}

func (l *lines) Next() bool     { l.i++; return l.i <= len(l.recs) }
func (l *lines) Record() []byte { return l.recs[l.i-1] }
func (l *lines) Err() error     { return nil }
func (l *lines) Close()         {}

// sink is a ResponseWriter that keeps nothing.
type sink struct{ h http.Header }

func (s *sink) Header() http.Header         { return s.h }
func (s *sink) Write(b []byte) (int, error) { return len(b), nil }
func (s *sink) WriteHeader(int)             {}
func (s *sink) Flush()                      {}

// BenchmarkPartResult is the door's own work on a streaming tool's answer
// of a text and a 5 MB image (6.7 MB of base64) as the mapping stage
// writes it, against the same 6.7 MB as text: reading the records and
// writing the result (bytes/op is what the door allocates per answer).
func BenchmarkPartResult(b *testing.B) {
	cfg, d := benchDoor(b)
	b64 := strings.Repeat("A", 6_666_668)
	for _, bb := range []struct {
		name string
		recs [][]byte
	}{
		{"image", [][]byte{[]byte(`{"text":"Here:"}`), []byte(`{"inline_data":{"mime_type":"image/png","data":"` + b64 + `"}}`), []byte(`{"end":{}}`)}},
		{"text", [][]byte{[]byte(`{"text":"Here:"}`), []byte(`{"text":"` + b64 + `"}`), []byte(`{"end":{}}`)}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(b64)))
			for b.Loop() {
				ex := &exchange{id: []byte("1"), modern: true, maxText: cfg.Limits.ReplyBytes, door: d}
				w := &sink{h: http.Header{}}
				enc := ex.Encoder(w)
				if err := enc.Copy(&lines{recs: bb.recs}); err != nil {
					b.Fatal(err)
				}
				if _, n, _ := enc.Wrote(); n < int64(len(b64)) {
					b.Fatalf("wrote %d bytes", n)
				}
			}
		})
	}
}

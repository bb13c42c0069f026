package openai

import (
	"net/http"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
)

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// benchRecords are n emit: text records.
type benchRecords struct{ n, i int }

var benchRecord = []byte(`{"text":"hello, world "}`)

func (r *benchRecords) Next() bool     { r.i++; return r.i <= r.n }
func (r *benchRecords) Record() []byte { return benchRecord }
func (r *benchRecords) Err() error     { return nil }
func (r *benchRecords) Close()         {}

// BenchmarkStream is what one streamed record costs through the door's
// encoders, beside the shared writer passing it through as a data event
// (as the Foundry door does): ns and allocations per 1,000 records.
func BenchmarkStream(b *testing.B) {
	d := &Door{opts: Options{Model: "m"}, replyBytes: 1 << 30}
	for _, bb := range []struct {
		name string
		enc  func(w http.ResponseWriter) core.Encoder
	}{
		{"passthrough", func(w http.ResponseWriter) core.Encoder {
			return frames.New(w, "text/event-stream", "data: ", "\n\n", frames.Hooks{})
		}},
		{"chat", func(w http.ResponseWriter) core.Encoder { return d.newChat().Encoder(w) }},
		{"responses", func(w http.ResponseWriter) core.Encoder { return d.newResponse().Encoder(w) }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := &discard{h: http.Header{}}
				e := bb.enc(w)
				e.Begin()
				e.Copy(&benchRecords{n: 1000})
			}
		})
	}
}

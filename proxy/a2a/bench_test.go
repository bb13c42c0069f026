package a2a

import (
	"net/http"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
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

// BenchmarkStream is what one record costs through the door's encoders:
// message/stream's artifact-update events, message/send's task gathered
// and written once (0.3 both): ns and allocations per 1,000 records.
func BenchmarkStream(b *testing.B) {
	for _, op := range []string{"stream", "send"} {
		b.Run(op, func(b *testing.B) {
			tasks := newStore(1<<30, 1<<30, 256)
			b.ReportAllocs()
			for b.Loop() {
				t, _, _ := tasks.open(message{}, core.Owner{})
				ex := &exchange{v: v03, id: []byte("1"), stream: op == "stream", task: t, tasks: tasks}
				e := ex.Encoder(&discard{h: http.Header{}})
				e.Begin()
				e.Copy(&benchRecords{n: 1000})
			}
		})
	}
}

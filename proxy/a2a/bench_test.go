package a2a

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
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

// oneRecord is records of one record.
type oneRecord struct {
	record []byte
	read   bool
}

func (r *oneRecord) Next() bool     { next := !r.read; r.read = true; return next }
func (r *oneRecord) Record() []byte { return r.record }
func (r *oneRecord) Err() error     { return nil }
func (r *oneRecord) Close()         {}

// BenchmarkImage is what a 5 MiB image costs through the door's encoders,
// agent to caller: one part record of its base64 (6.7 MB), streamed
// (message/stream's artifact-update) and sent (message/send's task), in
// 1.0's shape, against the same base64 as a text record. B/op is what
// the door allocates per image: the task's copy of it, and the frame.
func BenchmarkImage(b *testing.B) {
	image := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 5<<20-8)...)
	b64 := base64.StdEncoding.EncodeToString(image)
	records := map[string][]byte{
		"image": []byte(`{"inline_data":{"mime_type":"image/png","data":"` + b64 + `"}}`),
		"text":  []byte(`{"text":"` + b64 + `"}`),
	}
	for _, kind := range []string{"image", "text"} {
		for _, op := range []string{"stream", "send"} {
			b.Run(kind+"/"+op, func(b *testing.B) {
				tasks := newStore(1<<30, 1<<30, 256)
				tasks.parts = config.DefaultParts
				b.SetBytes(int64(len(image)))
				b.ReportAllocs()
				for b.Loop() {
					t, _, _ := tasks.open(message{}, core.Owner{})
					ex := newExchange(v10, t, tasks, message{}, nil)
					ex.id, ex.stream = []byte("1"), op == "stream"
					e := ex.Encoder(&discard{h: http.Header{}})
					e.Begin()
					e.Copy(&oneRecord{record: records[kind]})
					tasks.remove(t)
				}
			})
		}
	}
}

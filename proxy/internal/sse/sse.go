// Package sse is the text/event-stream writer the front doors share: one
// "data: <record>\n\n" event per record, each flushed as it is written, no
// end marker, a failure as one last data event in the door's shape.
package sse

import (
	"net/http"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Writer writes one stream's records as SSE (a core.Encoder).
type Writer struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	fail func(core.Failure) []byte

	event   []byte
	records int
	bytes   int64
	first   time.Time
}

// New is the writer of one stream to w; fail is the JSON of the last
// event for a failure after the first byte.
func New(w http.ResponseWriter, fail func(core.Failure) []byte) *Writer {
	return &Writer{w: w, rc: http.NewResponseController(w), fail: fail}
}

func (s *Writer) Begin() error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	return s.rc.Flush()
}

func (s *Writer) Copy(r core.Records) error {
	for r.Next() {
		if err := s.write(r.Record()); err != nil {
			return err
		}
		if s.records == 0 {
			s.first = time.Now()
		}
		s.records++
	}
	return nil
}

// write writes one event and flushes it.
func (s *Writer) write(data []byte) error {
	s.event = append(append(append(s.event[:0], "data: "...), data...), "\n\n"...)
	n, err := s.w.Write(s.event)
	s.bytes += int64(n)
	if err == nil {
		err = s.rc.Flush()
	}
	return err
}

// Fail writes the failure's event and flushes it.
func (s *Writer) Fail(f core.Failure) { s.write(s.fail(f)) }

func (s *Writer) Wrote() (int, int64, time.Time) { return s.records, s.bytes, s.first }

var _ core.Encoder = (*Writer)(nil)

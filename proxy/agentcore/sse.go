package agentcore

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// sse writes a stream's records as the SDK does: text/event-stream, one
// "data: <record>\n\n" event per record, each flushed as it is written, no
// end marker; a failure is one last data event.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	event   []byte
	records int
	bytes   int64
	first   time.Time
}

func newSSE(w http.ResponseWriter) *sse { return &sse{w: w, rc: http.NewResponseController(w)} }

func (s *sse) Begin() error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	return s.rc.Flush()
}

func (s *sse) Copy(r core.Records) error {
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
func (s *sse) write(data []byte) error {
	s.event = append(append(append(s.event[:0], "data: "...), data...), "\n\n"...)
	n, err := s.w.Write(s.event)
	s.bytes += int64(n)
	if err == nil {
		err = s.rc.Flush()
	}
	return err
}

// streamError is the SDK's final event for an exception mid-stream;
// error_type is the failure's reason (the SDK's is the exception class).
type streamError struct {
	Error     string `json:"error"`
	ErrorType string `json:"error_type"`
	Message   string `json:"message"`
}

func (s *sse) Fail(f core.Failure) {
	b, _ := json.Marshal(streamError{f.Message, f.Reason, "An error occurred during streaming"})
	s.write(b)
}

func (s *sse) Wrote() (int, int64, time.Time) { return s.records, s.bytes, s.first }

var _ core.Encoder = (*sse)(nil)

// Package frames is the stream writer every front door shares: each
// record framed as prefix, record, suffix ("", "\n" for ndjson; "data: ",
// "\n\n" for server-sent events), with the one flush policy, and a
// failure after the first byte as one last frame in the door's shape.
package frames

import (
	"net/http"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Writer writes a stream's records to the caller and decides when what it
// wrote is flushed (a core.Encoder). Its one flush policy: records that
// arrived in one read from the agent go out in one write, and what was
// written is flushed before the records wait for the agent (core.Waiter).
// So every record reaches the caller as soon as the agent produced it,
// without a syscall per record when the agent sends many at once. Records
// that cannot say when they wait are flushed one by one.
type Writer struct {
	w           http.ResponseWriter
	rc          *http.ResponseController
	contentType string
	prefix      string
	suffix      string
	fail        func(core.Failure) []byte

	line      []byte // the frame being written
	pending   bool   // written since the last flush
	perRecord bool   // flush after every record: the records are no Waiter
	flushErr  error  // the first flush that failed, reported at the next write

	records int
	bytes   int64
	first   time.Time
}

// New is the writer of one stream to w, answered as contentType, each
// record framed as prefix, record, suffix; fail is the JSON of the last
// frame for a failure after the first byte.
func New(w http.ResponseWriter, contentType, prefix, suffix string, fail func(core.Failure) []byte) *Writer {
	return &Writer{w: w, rc: http.NewResponseController(w), contentType: contentType,
		prefix: prefix, suffix: suffix, fail: fail}
}

// Begin answers 200 with the stream's headers and flushes them, before
// the first record, so the caller knows the call was accepted.
func (f *Writer) Begin() error {
	h := f.w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	f.w.WriteHeader(http.StatusOK)
	return f.rc.Flush()
}

// Copy writes every record of r and flushes. It returns the first error
// writing a record to the caller (who has left, most likely), and nil
// when r ended: r.Err says how.
func (f *Writer) Copy(r core.Records) error {
	if wr, ok := r.(core.Waiter); ok {
		wr.BeforeWait(f.flush)
	} else {
		f.perRecord = true
	}
	if f.line == nil {
		f.line = make([]byte, 0, 512) // grows to the largest record
	}
	// The loop is the per-record path: one copy into line, one write.
	for r.Next() {
		k, err := f.write(r.Record())
		f.bytes += int64(k)
		f.pending = true
		if f.perRecord {
			f.flush()
		}
		if err == nil {
			err = f.flushErr
		}
		if err != nil {
			return err
		}
		if f.records == 0 {
			f.first = time.Now()
		}
		f.records++
	}
	// A flush that fails once every record is written is not reported:
	// the stream is over, and its outcome is the records' own.
	f.flush()
	return nil
}

// write writes one frame.
func (f *Writer) write(data []byte) (int, error) {
	f.line = append(append(append(f.line[:0], f.prefix...), data...), f.suffix...)
	return f.w.Write(f.line)
}

// flush flushes what was written since the last flush, if anything.
func (f *Writer) flush() {
	if f.pending && f.flushErr == nil {
		f.flushErr = f.rc.Flush()
	}
	f.pending = false
}

// Fail writes the stream's last frame, the failure in the door's shape,
// and flushes it. A caller that left is not told.
func (f *Writer) Fail(fl core.Failure) {
	k, _ := f.write(f.fail(fl))
	f.bytes += int64(k)
	f.rc.Flush()
}

// Wrote is what went out, for the call's log line and metrics: the
// records and bytes written, and when the first record was.
func (f *Writer) Wrote() (records int, bytes int64, first time.Time) {
	return f.records, f.bytes, f.first
}

var _ core.Encoder = (*Writer)(nil)

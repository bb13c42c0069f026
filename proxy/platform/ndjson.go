package platform

import (
	"net/http"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// NDJSON writes a stream's records to the caller, one compact JSON value
// per line, and decides when what it wrote is flushed. Its one flush
// policy: records that arrived in one read from the agent go out in one
// write, and what was written is flushed before the records wait for the
// agent (core.Waiter). So every record reaches the caller as soon as the
// agent produced it, without a syscall per record when the agent sends
// many at once. Records that cannot say when they wait are flushed one by
// one.
type NDJSON struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	line      []byte // the record being written, with its newline
	pending   bool   // written since the last flush
	perRecord bool   // flush after every record: the records are no Waiter
	flushErr  error  // the first flush that failed, reported at the next write

	records int
	bytes   int64
	first   time.Time
}

// Wrote is what went out, for the call's log line and metrics: the
// records and bytes written, and when the first record was.
func (n *NDJSON) Wrote() (records int, bytes int64, first time.Time) {
	return n.records, n.bytes, n.first
}

// NewNDJSON is the writer of one stream to w.
func NewNDJSON(w http.ResponseWriter) *NDJSON {
	return &NDJSON{w: w, rc: http.NewResponseController(w)}
}

// Begin answers 200 with the stream's headers and flushes them, before
// the first record, so the caller knows the call was accepted.
func (n *NDJSON) Begin() error {
	h := n.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	n.w.WriteHeader(http.StatusOK)
	return n.rc.Flush()
}

// Copy writes every record of r and flushes. It returns the first error
// writing a record to the caller (who has left, most likely), and nil
// when r ended: r.Err says how.
func (n *NDJSON) Copy(r core.Records) error {
	if wr, ok := r.(core.Waiter); ok {
		wr.BeforeWait(n.flush)
	} else {
		n.perRecord = true
	}
	if n.line == nil {
		n.line = make([]byte, 0, 512) // grows to the largest record
	}
	// The loop is the per-record path: one copy into line, one write.
	for r.Next() {
		n.line = append(append(n.line[:0], r.Record()...), '\n')
		k, err := n.w.Write(n.line)
		n.bytes += int64(k)
		n.pending = true
		if n.perRecord {
			n.flush()
		}
		if err == nil {
			err = n.flushErr
		}
		if err != nil {
			return err
		}
		if n.records == 0 {
			n.first = time.Now()
		}
		n.records++
	}
	// A flush that fails once every record is written is not reported:
	// the stream is over, and its outcome is the records' own.
	n.flush()
	return nil
}

// flush flushes what was written since the last flush, if anything.
func (n *NDJSON) flush() {
	if n.pending && n.flushErr == nil {
		n.flushErr = n.rc.Flush()
	}
	n.pending = false
}

// Fail writes the stream's last line, the error line of f (ErrorLine),
// and flushes it. A caller that left is not told.
func (n *NDJSON) Fail(f core.Failure) {
	k, _ := n.w.Write(ErrorLine(f))
	n.bytes += int64(k)
	n.rc.Flush()
}

var _ core.Encoder = (*NDJSON)(nil)

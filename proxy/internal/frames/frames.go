// Package frames is the stream writer every front door shares: each
// record framed as prefix, record, suffix ("", "\n" for ndjson; "data: ",
// "\n\n" for server-sent events), with the one flush policy; hooks for
// what a door adds around the records (frames that open and close the
// stream, a wrapper around each record's data such as a JSON-RPC response
// with its request's id), and a failure after the first byte as one last
// frame in the door's shape.
package frames

import (
	"io"
	"net/http"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Hooks are what a door adds to a stream besides framing its records;
// a nil hook adds nothing. Each gives the data of frames, which the
// Writer frames and flushes as it does the records'.
type Hooks struct {
	// Begin is the data of the frames that open the stream, sent with its
	// headers before the first record (A2A: the task, submitted, and its
	// working status).
	Begin func() [][]byte
	// Record appends the data of record's frame to dst and returns it: a
	// wrapper around each record (A2A: a JSON-RPC response carrying the
	// request's id). Nil: the record as it is.
	Record func(dst, record []byte) []byte
	// RecordTo, when set, is asked first for each record: a non-nil
	// write writes the record's frame data itself to the stream, its
	// pieces never gathered into one buffer (an A2A file part's base64,
	// megabytes, written from where it is kept); nil: Record frames it.
	RecordTo func(record []byte) (write func(w io.Writer) error)
	// End is the data of the frames that close the stream once its
	// records ended, err being how (nil: cleanly): a closing frame such
	// as "[DONE]", A2A's final status-update. A failure is written after
	// them, by Fail.
	End func(err error) [][]byte
	// EndTo, set instead of End, writes the closing frames itself, each
	// with frame: its data is pieces written one after the other, never
	// copied into one, for frames that repeat the whole answer (the
	// OpenAI door's Responses events carry its text four times: a Text's
	// Blocks between the JSON around it).
	EndTo func(err error, frame func(data ...[]byte) error)
	// Fail is the data of the last frame for a failure after the first
	// byte, in the door's shape; nil data writes none.
	Fail func(core.Failure) []byte
}

// Writer writes a stream's records to the caller and decides when what it
// wrote is flushed (a core.Encoder). Its one flush policy: records that
// arrived in one read from the agent go out in one write, and what was
// written is flushed before the records wait for the agent (core.Waiter).
// So every record reaches the caller as soon as the agent produced it,
// without a syscall per record when the agent sends many at once. Records
// that cannot say when they wait are flushed one by one. What the hooks
// add around the records is flushed with them.
type Writer struct {
	w           http.ResponseWriter
	rc          *http.ResponseController
	contentType string
	prefix      string
	suffix      string
	hooks       Hooks

	line      []byte // the frame being written
	pending   bool   // written since the last flush
	perRecord bool   // flush after every record: the records are no Waiter
	flushErr  error  // the first flush that failed, reported at the next write

	records int
	bytes   int64
	first   time.Time
}

// New is the writer of one stream to w, answered as contentType, each
// frame's data framed as prefix, data, suffix; hooks add what the door
// sends around the records.
func New(w http.ResponseWriter, contentType, prefix, suffix string, hooks Hooks) *Writer {
	return &Writer{w: w, rc: http.NewResponseController(w), contentType: contentType,
		prefix: prefix, suffix: suffix, hooks: hooks}
}

// Begin answers 200 with the stream's headers, and the frames of the
// Begin hook, and flushes them, before the first record, so the caller
// knows the call was accepted.
func (f *Writer) Begin() error {
	h := f.w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	f.w.WriteHeader(http.StatusOK)
	if f.hooks.Begin != nil {
		if err := f.frames(f.hooks.Begin()); err != nil {
			return err
		}
	}
	f.pending = false
	return f.rc.Flush()
}

// Copy writes every record of r, then the frames of the End hook, and
// flushes. It returns the first error writing a record to the caller
// (who has left, most likely), and nil when r ended: r.Err says how.
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
		k, err := f.write(r.Record(), f.hooks.Record)
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
	switch {
	case f.hooks.EndTo != nil:
		f.hooks.EndTo(r.Err(), f.pieces)
	case f.hooks.End != nil:
		f.frames(f.hooks.End(r.Err()))
	}
	// A flush that fails once every record is written is not reported:
	// the stream is over, and its outcome is the records' own.
	f.flush()
	return nil
}

// write writes one frame, its data data, or what wrap makes of it. A
// record the RecordTo hook writes itself is written so, between the
// prefix and the suffix.
func (f *Writer) write(data []byte, wrap func(dst, data []byte) []byte) (int, error) {
	if f.hooks.RecordTo != nil && wrap != nil {
		if to := f.hooks.RecordTo(data); to != nil {
			c := counter{w: f.w}
			_, err := io.WriteString(&c, f.prefix)
			if err == nil {
				err = to(&c)
			}
			if err == nil {
				_, err = io.WriteString(&c, f.suffix)
			}
			return c.n, err
		}
	}
	f.line = append(f.line[:0], f.prefix...)
	if wrap != nil {
		f.line = wrap(f.line, data)
	} else {
		f.line = append(f.line, data...)
	}
	f.line = append(f.line, f.suffix...)
	return f.w.Write(f.line)
}

// frames writes a hook's frames, unflushed, and counts their bytes.
func (f *Writer) frames(data [][]byte) error {
	for _, d := range data {
		k, err := f.write(d, nil)
		f.bytes += int64(k)
		f.pending = true
		if err != nil {
			return err
		}
	}
	return nil
}

// pieces writes one frame, unflushed, its data the pieces in order, each
// written as it is, and counts its bytes.
func (f *Writer) pieces(data ...[]byte) error {
	k, err := io.WriteString(f.w, f.prefix)
	f.bytes += int64(k)
	f.pending = true
	for _, d := range data {
		if err != nil {
			return err
		}
		k, err = f.w.Write(d)
		f.bytes += int64(k)
	}
	if err == nil {
		k, err = io.WriteString(f.w, f.suffix)
		f.bytes += int64(k)
	}
	return err
}

// flush flushes what was written since the last flush, if anything.
func (f *Writer) flush() {
	if f.pending && f.flushErr == nil {
		f.flushErr = f.rc.Flush()
	}
	f.pending = false
}

// Fail writes the stream's last frame, the failure in the door's shape
// (the Fail hook), and flushes it. A caller that left is not told.
func (f *Writer) Fail(fl core.Failure) {
	if f.hooks.Fail == nil {
		return
	}
	data := f.hooks.Fail(fl)
	if data == nil {
		return
	}
	k, _ := f.write(data, nil)
	f.bytes += int64(k)
	f.rc.Flush()
}

// Wrote is what went out, for the call's log line and metrics: the
// records and bytes written, and when the first record was.
func (f *Writer) Wrote() (records int, bytes int64, first time.Time) {
	return f.records, f.bytes, f.first
}

var _ core.Encoder = (*Writer)(nil)

// counter counts what is written through it.
type counter struct {
	w io.Writer
	n int
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

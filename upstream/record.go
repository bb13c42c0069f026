package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/rawjson"
)

const (
	// readBufferSize is the bufio.Reader under every deframer: big enough
	// that a typical event is parsed in place, small enough per open stream
	// (thousands may sit idle). Larger records are assembled beside it.
	readBufferSize = 4 << 10

	// defaultMaxRecord caps a record when NewStream is given no limit.
	defaultMaxRecord = 8 << 20
)

// utf8BOM is dropped when a reply starts with it: it marks the encoding,
// it is not content (the WHATWG event-stream decoder strips it too).
var utf8BOM = []byte("\xEF\xBB\xBF")

// frame is what every deframer shares: the buffered reply, the current
// record (one buffer, reused), the size cap, and how the stream ended.
type frame struct {
	br   *bufio.Reader
	max  int
	rec  bytes.Buffer
	tmp  []byte // scratch for repairing UTF-8
	err  error
	done bool
	// started is set once the first Next has skipped a byte order mark.
	started bool

	// closeEnd is set when the reply has neither a Content-Length nor
	// chunks, so that only the agent closing the connection ends it: its
	// io.EOF does not show the last record whole, only the record's own
	// end does.
	closeEnd bool
}

// errCutRecord ends a stream whose reply ended inside a record: the record
// is dropped, and the caller is told the agent disconnected.
var errCutRecord = fmt.Errorf("agent reply ended inside a record: %w", io.ErrUnexpectedEOF)

func (f *frame) Record() []byte { return f.rec.Bytes() }

func (f *frame) Err() error { return f.err }

// Close does nothing: the reader is the deframer's caller's.
func (f *frame) Close() {}

// begin is how Next starts: it reports whether the stream may go on, and
// the first time skips a byte order mark at the start of the reply.
func (f *frame) begin() bool {
	if f.done {
		return false
	}
	if !f.started {
		f.started = true
		skipBOM(f.br)
	}
	return true
}

// stop ends the stream with err, nil for a clean end. It returns false so
// that Next can end with "return s.stop(err)".
func (f *frame) stop(err error) bool {
	f.done = true
	f.err = err
	f.rec.Reset()
	return false
}

// setJSON makes src the current record, compacted, if src is one valid
// JSON value, and reports whether it was. Numbers are copied as written,
// never through float64. Invalid UTF-8 inside strings, which json.Valid
// lets through, becomes U+FFFD so that every record is valid UTF-8.
func (f *frame) setJSON(src []byte) bool {
	f.rec.Reset()
	f.rec.Grow(len(src)) // compacting never lengthens: no allocation below
	b, ok := rawjson.AppendCompact(f.rec.AvailableBuffer(), src)
	if !ok {
		return false
	}
	f.rec.Write(b) // b is rec's own free space: this only sets its length
	if !utf8.Valid(b) {
		f.tmp = appendValidUTF8(f.tmp[:0], b)
		f.rec.Reset()
		f.rec.Write(f.tmp)
	}
	return true
}

// takeMin is the least a record's data is before takeJSON takes its
// buffer rather than copy it: smaller ones cost less to copy than to scan
// for whitespace first.
const takeMin = 64 << 10

// takeJSON is setJSON for src, a part of *buf, a buffer of the
// deframer's own that it is done with. A large src without a whitespace
// byte, which compacting leaves as it is, is checked in place and *buf's
// array becomes the current record's: a record of megabytes (an agent's
// image) is then held once, not twice. *buf is then the record's old
// buffer, empty, for the deframer to go on with.
func (f *frame) takeJSON(buf *[]byte, src []byte) bool {
	if len(src) < takeMin || hasSpace(src) {
		return f.setJSON(src)
	}
	// Nothing to drop: every byte is written where it is, so src is
	// unchanged whether or not it is JSON.
	b, ok := rawjson.AppendCompact(src[:0], src)
	if !ok || len(b) != len(src) || !utf8.Valid(b) {
		return f.setJSON(src)
	}
	f.rec.Reset()
	spare := f.rec.AvailableBuffer()
	f.rec = *bytes.NewBuffer(b)
	*buf = spare
	return true
}

// hasSpace reports whether b holds a byte that JSON counts as whitespace.
func hasSpace(b []byte) bool {
	return bytes.IndexByte(b, ' ') >= 0 || bytes.IndexByte(b, '\n') >= 0 ||
		bytes.IndexByte(b, '\t') >= 0 || bytes.IndexByte(b, '\r') >= 0
}

// setOutput makes {"output":"<text>"} the current record.
func (f *frame) setOutput(text []byte) {
	f.rec.Reset()
	f.rec.Grow(len(`{"output":""}`) + len(text) + len(text)/8)
	b := f.rec.AvailableBuffer()
	b = append(b, `{"output":`...)
	b = rawjson.AppendBytes(b, text, rawjson.ReplaceInvalid)
	b = append(b, '}')
	f.rec.Write(b)
}

// yield checks the current record before Next returns it: a record over
// the cap ends the stream with core.ErrRecordTooLarge, and a record that is
// exactly {"error": …} ends it with the agent's error instead of being
// passed on.
func (f *frame) yield() bool {
	b := f.rec.Bytes()
	if v, ok := errorValue(b); ok {
		return f.stop(agentErrorOf(v))
	}
	if len(b) > f.max {
		return f.stop(core.ErrRecordTooLarge)
	}
	return true
}

// appendGrow appends src to dst, quadrupling dst's capacity when it must
// grow, but not past limit unless src needs it: a buffer that creeps up to
// the record cap costs about 4/3 of the cap in allocations, not the twice
// of doubling or the five times of append's gentler growth, and the
// buffers it leaves behind for the collector (an agent's image of
// megabytes comes in reads of a few KiB) are a third of its size, not all
// of it.
func appendGrow(dst []byte, limit int, src ...byte) []byte {
	if n := len(dst) + len(src); n > cap(dst) {
		grown := make([]byte, len(dst), max(n, min(4*cap(dst), limit), 512))
		copy(grown, dst)
		dst = grown
	}
	return append(dst, src...)
}

// endsInDigit reports whether b ends with a digit: valid JSON that does is
// a number, the one value that shows no end of its own (a cut 12345 was
// perhaps 123456).
func endsInDigit(b []byte) bool {
	return len(b) > 0 && '0' <= b[len(b)-1] && b[len(b)-1] <= '9'
}

// readFailure labels a read error that cut the reply short.
func readFailure(err error) error {
	return fmt.Errorf("reading agent reply: %w", err)
}

// stickyReader returns its reader's first error again on every later Read.
// bufio.Reader hands a read error out only once, and Peek may be the call
// that receives it and drops it; a deframer that peeks must not lose it.
type stickyReader struct {
	r   io.Reader
	err error
}

func (s *stickyReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.err = err
	return n, err
}

// skipBOM drops a leading UTF-8 byte order mark. It reads past the first
// byte only when that byte could start one, so it never delays a reply.
func skipBOM(br *bufio.Reader) {
	if b, _ := br.Peek(1); len(b) == 1 && b[0] == utf8BOM[0] {
		if b, _ := br.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
			br.Discard(len(utf8BOM))
		}
	}
}

// errorValue reports whether the compact JSON record rec is an object with
// exactly one key, "error", and returns that key's value. It looks at the
// first key only, without decoding the record, since it runs on every one.
func errorValue(rec []byte) ([]byte, bool) {
	if len(rec) < len(`{"error":0}`) || rec[0] != '{' || rec[1] != '"' || rec[len(rec)-1] != '}' {
		return nil, false
	}
	end := stringEnd(rec, 1)
	if end >= len(rec) || rec[end] != ':' || !rawjson.KeyIs(rec[1:end], "error") {
		return nil, false
	}
	start := end + 1
	if valueEnd(rec, start) != len(rec)-1 {
		return nil, false // more keys follow
	}
	return rec[start : len(rec)-1], true
}

// stringEnd returns the index just past the string literal starting at
// b[i] == '"'. b is valid compact JSON.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the value starting at b[i]. b is
// valid compact JSON.
func valueEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// agentErrorOf builds the error an agent reported as the compact JSON value
// v: a string is the message; an object gives its "message" and "code"
// (a string, or a number kept as written); anything else, or an object
// without a message, is shown as its compact JSON text.
func agentErrorOf(v []byte) *core.AgentError {
	e := &core.AgentError{Message: string(v)}
	switch v[0] {
	case '"':
		json.Unmarshal(v, &e.Message)
	case '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			break
		}
		e.Raw = e.Message // v, copied
		var msg string
		if json.Unmarshal(obj["message"], &msg) == nil && msg != "" {
			e.Message = msg
		}
		if c := obj["code"]; len(c) > 0 {
			switch {
			case c[0] == '"':
				json.Unmarshal(c, &e.Code)
			case c[0] == '-' || '0' <= c[0] && c[0] <= '9':
				e.Code = string(c)
			}
		}
	}
	return e
}

// textError is an agent error whose text is not JSON: the text is the
// message, with invalid UTF-8 replaced.
func textError(text []byte) *core.AgentError {
	return &core.AgentError{Message: string(appendValidUTF8(nil, text))}
}

// appendValidUTF8 appends b with each invalid byte replaced by U+FFFD.
func appendValidUTF8(dst, b []byte) []byte {
	start := 0
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, b[start:i]...)
			dst = append(dst, "\uFFFD"...)
			start = i + 1
		}
		i += size
	}
	return append(dst, b[start:]...)
}

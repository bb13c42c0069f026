package upstream

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// jsonStream reads a reply of JSON values, decoded incrementally so that
// each record goes out as soon as its value is complete. A reply that
// opens with an array yields each element as its own record (the stream
// route sends one line per element); any values after it, and every
// value of a reply that does not open with an array, are records whole.
// A number that the end of the reply may have cut is not passed on (see
// cutNumber).
type jsonStream struct {
	frame
	in    budgetReader
	dec   *json.Decoder
	raw   json.RawMessage
	state int
}

const (
	jsonStart  = iota // nothing read yet
	jsonArray         // inside the opening array
	jsonValues        // reading top-level values
)

// jsonSlack is how far past the record cap the decoder may read while a
// value is incomplete: the whitespace and commas around a value and the
// indentation that compacting removes.
const jsonSlack = 4 << 10

func (s *jsonStream) Next() bool {
	if s.done {
		return false
	}
	if s.state == jsonStart {
		c, err := s.firstByte()
		if err == io.EOF {
			return s.stop(nil) // an empty reply has no records
		}
		if err != nil {
			return s.stop(readFailure(err))
		}
		s.in = budgetReader{r: s.br, limit: int64(s.max) + jsonSlack}
		s.dec = json.NewDecoder(&s.in)
		s.state = jsonValues
		if c == '[' {
			if _, err := s.dec.Token(); err != nil {
				return s.fail(err)
			}
			s.state = jsonArray
		}
	}
	if s.state == jsonArray {
		if s.dec.More() {
			return s.decode()
		}
		if _, err := s.dec.Token(); err != nil { // the closing ']'
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return s.fail(err)
		}
		s.state = jsonValues
	}
	return s.decode()
}

// firstByte skips a byte order mark and whitespace, and peeks at the
// first byte of the first value.
func (s *jsonStream) firstByte() (byte, error) {
	skipBOM(s.br)
	for {
		b, err := s.br.Peek(1)
		if err != nil {
			return 0, err
		}
		if !isJSONSpace(b[0]) {
			return b[0], nil
		}
		s.br.Discard(1)
	}
}

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func (s *jsonStream) decode() bool {
	if err := s.dec.Decode(&s.raw); err != nil {
		if err == io.EOF && s.state == jsonValues {
			return s.stop(nil)
		}
		return s.fail(err)
	}
	s.in.limit = s.dec.InputOffset() + int64(s.max) + jsonSlack
	if s.cutNumber() {
		return s.stop(errCutRecord)
	}
	if !s.setJSON(s.raw) {
		return s.fail(fmt.Errorf("invalid value %.40q", s.raw)) // the decoder let it through: not expected
	}
	return s.yield()
}

// cutNumber reports whether the value just decoded is a number that the
// end of the reply may have cut: the decoder ends a number at the first
// byte after it, or at io.EOF, and only the byte shows it whole. An array
// element must be followed by "," or "]"; a top-level value may end the
// reply, unless only a close ended it.
func (s *jsonStream) cutNumber() bool {
	if !endsInDigit(s.raw) || !s.closeEnd && s.state != jsonArray {
		return false
	}
	var next [1]byte
	n, _ := s.dec.Buffered().Read(next[:])
	return n == 0
}

// fail ends the stream on a decoder error, telling apart the reply cut
// short by a read error, the value over the size cap and the reply that is
// not JSON.
func (s *jsonStream) fail(err error) bool {
	switch {
	case s.in.over:
		return s.stop(core.ErrRecordTooLarge)
	case s.in.err != nil:
		return s.stop(readFailure(s.in.err))
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	return s.stop(fmt.Errorf("decoding agent json: %w", err))
}

// budgetReader lets the decoder read no further than limit, which each
// completed record moves on: a value that never ends cannot grow the
// decoder's buffer past the record cap.
type budgetReader struct {
	r     io.Reader
	read  int64 // bytes handed out
	limit int64
	over  bool  // the limit was hit
	err   error // the read error, not io.EOF, that ended the reply
}

func (b *budgetReader) Read(p []byte) (int, error) {
	room := b.limit - b.read
	if room <= 0 {
		b.over = true
		return 0, core.ErrRecordTooLarge
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

package upstream

import (
	"bufio"
	"bytes"
	"io"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// linesStream reads one record per line: ndjson, JSON Lines, and JSON text
// sequences (RFC 7464), whose records start with an RS byte. A line that
// is not JSON becomes {"output": line}; blank lines are skipped. A last
// line without its "\n" counts only when it is complete JSON, and, when
// only a close ended the reply, not a number (see lastLine).
type linesStream struct {
	frame
	eof  bool
	line []byte // a line longer than the read buffer, gathered here
}

// recordSeparator starts each record of application/json-seq.
const recordSeparator = "\x1e"

func (s *linesStream) Next() bool {
	if !s.begin() {
		return false
	}
	for !s.eof {
		line, err := s.readLine()
		if err != nil {
			return s.stop(err)
		}
		line = bytes.TrimLeft(line, recordSeparator)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if s.eof {
			return s.lastLine(line)
		}
		// A line gathered in s.line (not one in the read buffer) may
		// become the record.
		var ok bool
		if len(s.line) > 0 {
			ok = s.takeJSON(&s.line, line)
		} else {
			ok = s.setJSON(line)
		}
		if !ok {
			s.setOutput(line)
		}
		return s.yield()
	}
	return s.stop(nil)
}

// lastLine makes the record of a last line that has no "\n", which the
// end of the reply may have cut: text, or JSON that does not parse, may
// have lost its rest, and so may a number when only a close ended the
// reply. Such a line is dropped and the stream fails.
func (s *linesStream) lastLine(line []byte) bool {
	if !s.setJSON(line) || s.closeEnd && endsInDigit(line) {
		return s.stop(errCutRecord)
	}
	return s.yield()
}

// readLine returns the next line without its "\n" or "\r\n". A line is
// gathered only up to the size cap: past it the stream fails rather than
// holding the rest. A line cut short by a read error is dropped.
func (s *linesStream) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.br.ReadSlice('\n')
		switch err {
		case nil:
			line := frag
			if len(s.line) > 0 {
				s.line = appendGrow(s.line, s.max+readBufferSize, frag...)
				line = s.line
			}
			return s.checkLine(line[:len(line)-1])
		case bufio.ErrBufferFull:
			s.line = appendGrow(s.line, s.max+readBufferSize, frag...)
			// One byte over the cap may still be the "\r" of a "\r\n".
			if len(s.line)-1 > s.max {
				return nil, core.ErrRecordTooLarge
			}
		case io.EOF:
			s.eof = true
			s.line = appendGrow(s.line, s.max+readBufferSize, frag...)
			return s.checkLine(s.line)
		default:
			return nil, readFailure(err)
		}
	}
}

func (s *linesStream) checkLine(line []byte) ([]byte, error) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > s.max {
		return nil, core.ErrRecordTooLarge
	}
	return line, nil
}

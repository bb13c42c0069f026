package upstream

import (
	"io"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// textStream turns each read of a text reply into {"output": text} at once,
// without waiting to fill a buffer: a token streamed by the agent goes out
// as soon as it arrives. A UTF-8 character split across reads is never
// split across records: the bytes of an incomplete last character wait
// for the next read. Text never fails as too large: a read whose record
// would pass the cap goes out as several records.
//
// Text has no records for the end of the reply to cut, except a last
// character left incomplete: U+FFFD after a clean end, a cut record when
// only a close ended the reply.
type textStream struct {
	frame
	buf     []byte // the bytes held back, then a read
	out     []byte // text read and not yet sent, in buf
	tail    []byte // an incomplete character after out, in buf
	pending error  // the error that came with the last read
	empty   int    // reads in a row that returned nothing
}

const (
	// textChunk is the most one read asks for.
	textChunk = 32 << 10

	// maxEmptyReads in a row end the stream with io.ErrNoProgress, as
	// bufio.Reader does.
	maxEmptyReads = 100
)

func newTextStream(fr frame) *textStream {
	return &textStream{frame: fr, buf: make([]byte, utf8.UTFMax-1+textChunk)}
}

func (s *textStream) Next() bool {
	if !s.begin() {
		return false
	}
	for {
		if len(s.out) > 0 {
			return s.send()
		}
		if err := s.pending; err != nil {
			if err != io.EOF || len(s.tail) == 0 {
				return s.stop(readErrorOrNil(err)) // an incomplete character is dropped
			}
			if s.closeEnd {
				return s.stop(errCutRecord) // a close may have cut the character
			}
			s.out, s.tail = s.tail, nil // a character never completed: U+FFFD
			continue
		}
		held := copy(s.buf, s.tail)
		n, err := s.br.Read(s.buf[held : held+textChunk])
		s.pending = err
		if n == 0 {
			if err == nil {
				if s.empty++; s.empty >= maxEmptyReads {
					s.pending = io.ErrNoProgress
				}
			}
			s.tail = s.buf[:held]
			continue
		}
		s.empty = 0
		text := s.buf[:held+n]
		cut := len(text) - incompleteSuffix(text)
		s.out, s.tail = text[:cut], text[cut:]
	}
}

// send makes the text read the current record, or as much of it as fits
// in the cap.
func (s *textStream) send() bool {
	out := s.out
	// Escaping grows text at most six times (a control byte becomes
	// \u00XX); only a small cap needs a closer look.
	if room := s.max - len(`{"output":""}`); len(out)*6 > room {
		out = out[:fitText(out, room)]
		if len(out) == 0 {
			return s.stop(core.ErrRecordTooLarge)
		}
	}
	s.setOutput(out)
	s.out = s.out[len(out):]
	return s.yield()
}

func readErrorOrNil(err error) error {
	if err == io.EOF {
		return nil
	}
	return readFailure(err)
}

// incompleteSuffix is the length of the start of a UTF-8 character that b
// ends with, if more bytes could complete it, else 0.
func incompleteSuffix(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if utf8.FullRune(b[len(b)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}

// fitText is the length of the longest run of whole characters at the
// start of text whose JSON string, as setOutput writes it, fits
// in room bytes besides its quotes.
func fitText(text []byte, room int) int {
	used := 0
	for i := 0; i < len(text); {
		size, width := 1, 1
		switch c := text[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			width = 2
		case c < 0x20:
			width = len(`\u0000`)
		case c >= utf8.RuneSelf:
			var r rune
			r, size = utf8.DecodeRune(text[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				width = len("\uFFFD")
			case r == '\u2028' || r == '\u2029':
				width = len(`\u2028`)
			default:
				width = size
			}
		}
		if used+width > room {
			return i
		}
		used += width
		i += size
	}
	return len(text)
}

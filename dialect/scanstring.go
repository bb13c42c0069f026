package dialect

import (
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Strings in a record, for scan: where one ends, eight bytes at a time
// while none needs a look, and its text as encoding/json decodes it.

// stringEnd returns the index just past the string at the cursor, and
// whether it is plain: no escape and valid UTF-8, its text as written.
func (s *scan) stringEnd() (int, bool) {
	b := s.b
	plain, ascii := true, true
	for i := s.i + 1; i < len(b); i++ {
		// The bytes that need a look: most need none. Eight at a time
		// while none of them does, then one at a time.
		for i+8 <= len(b) && !hasSpecial(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && !stringSpecial[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			if !ascii && plain {
				plain = utf8.Valid(b[s.i+1 : i])
			}
			s.ascii = ascii
			return i + 1, plain
		case c < 0x20:
			s.bad = true
			return i, false
		case c >= utf8.RuneSelf:
			ascii = false
		default: // '\\'
			plain = false
			i++
			if i >= len(b) {
				s.bad = true
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					s.bad = true
					return i, false
				}
				i += 4
			default:
				s.bad = true
				return i, false
			}
		}
	}
	s.bad = true
	return len(b), false
}

// hasSpecial reports whether one of the eight bytes of x may be one of
// stringSpecial (a control character, '"', '\\', past ASCII); it may say so
// of none, never the other way.
func hasSpecial(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	control := (x - 0x20*lo) & ^x & hi
	q := x ^ ('"' * lo)
	quote := (q - lo) & ^q & hi
	e := x ^ ('\\' * lo)
	escape := (e - lo) & ^e & hi
	return control|quote|escape|x&hi != 0
}

// stringSpecial are the bytes inside a string that stringEnd looks at:
// its end, an escape, a control character, a byte past ASCII.
var stringSpecial = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// unquote is the text of a JSON string's inside, valid and not plain, as
// encoding/json decodes it: escapes, a surrogate pair as one character, a
// lone surrogate and each byte of invalid UTF-8 as U+FFFD.
func unquote(in []byte) string {
	var b strings.Builder
	b.Grow(len(in) + len(in)/2)
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c == '\\':
			switch e := in[i+1]; e {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r := hex4(in[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
						if d := utf16.DecodeRune(r, hex4(in[i+2:])); d != utf8.RuneError {
							b.WriteRune(d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b.WriteRune(r)
				continue
			default: // '"', '\\', '/'
				b.WriteByte(e)
			}
			i += 2
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRune(in[i:])
			b.WriteRune(r)
			i += size
		}
	}
	return b.String()
}

// hex4 is the value of the four hex digits that start b (checked).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

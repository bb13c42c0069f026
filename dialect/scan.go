package dialect

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// scan reads the few fields of a record that a mapper's fast path needs,
// in one pass over the record and without allocating but for the strings
// it returns (the per-token records: a text delta and the like). It reads
// a record exactly as encoding/json would decode it into the mapper's
// struct, or not at all: a record it cannot read so (a key repeated, a key
// that only case-folds to a field, a key with an escape or past ASCII, a
// field of another type than the struct's, a shape the fast path leaves
// alone) sets bad, and the mapper decodes it with encoding/json as before.
// So the outcome of every record is the same either way; FuzzFastPaths
// checks it.
type scan struct {
	b     []byte
	i     int
	depth int  // the objects and arrays the cursor is in
	bad   bool // not read: leave the record to encoding/json
	ascii bool // the last string stringEnd read is ASCII
}

// maxScanDepth is how deeply values may nest, as in encoding/json.
const maxScanDepth = 10000

// top reads rec, one JSON object, calling fn with each member as object
// does, and reports whether it was read whole.
func (s *scan) top(rec []byte, fn func(key []byte)) bool {
	*s = scan{b: rec}
	s.object(fn)
	s.space()
	return !s.bad && s.i == len(s.b)
}

func (s *scan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the first byte of the value at the cursor, 0 at the end.
func (s *scan) peek() byte {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return s.b[s.i] // a compact record: no space to skip
	}
	s.space()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// null reads a null at the cursor and reports whether it was one.
func (s *scan) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object reads the object at the cursor: fn is called with each member's
// key (its bytes between the quotes) and the cursor at its value, which fn
// reads (str, object, …) or leaves, to be skipped. It reports whether
// there was an object: a null is none, as encoding/json leaves a struct
// for it; any other value is bad.
func (s *scan) object(fn func(key []byte)) bool {
	if s.null() {
		return false
	}
	if s.peek() != '{' || s.depth >= maxScanDepth {
		s.bad = true
		return false
	}
	s.i++
	s.depth++
	ok := s.members(fn)
	s.depth--
	return ok
}

// members reads the members of an object after its '{'.
func (s *scan) members(fn func(key []byte)) bool {
	if s.peek() == '}' {
		s.i++
		return true
	}
	for !s.bad {
		if s.peek() != '"' {
			s.bad = true
			return false
		}
		start := s.i + 1
		end, plain := s.stringEnd()
		// A key with an escape, or past ASCII, could match a field only as
		// encoding/json folds it.
		if !plain || s.bad || !s.ascii {
			s.bad = true
			return false
		}
		s.i = end
		if s.peek() != ':' {
			s.bad = true
			return false
		}
		s.i++
		s.space()
		at := s.i
		fn(s.b[start : end-1])
		if s.i == at && !s.bad {
			s.skip(s.depth)
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			s.bad = true
		}
	}
	return false
}

// array reads the array at the cursor, as object does its members: fn is
// called with each element's index. It reports whether there was an array
// (a null is none).
func (s *scan) array(fn func(i int)) bool {
	if s.null() {
		return false
	}
	if s.peek() != '[' || s.depth >= maxScanDepth {
		s.bad = true
		return false
	}
	s.i++
	s.depth++
	ok := s.elements(fn)
	s.depth--
	return ok
}

// elements reads the elements of an array after its '['.
func (s *scan) elements(fn func(i int)) bool {
	if s.peek() == ']' {
		s.i++
		return true
	}
	for n := 0; !s.bad; n++ {
		s.space()
		at := s.i
		fn(n)
		if s.i == at && !s.bad {
			s.skip(s.depth)
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			s.bad = true
		}
	}
	return false
}

// str reads the string at the cursor into *dst; a null leaves *dst, as
// encoding/json does; any other value is bad. The string is decoded as
// encoding/json decodes it (escapes, surrogate pairs, invalid UTF-8 as
// U+FFFD).
func (s *scan) str(dst *string) {
	if s.null() {
		return
	}
	if s.peek() != '"' {
		s.bad = true
		return
	}
	start := s.i
	end, plain := s.stringEnd()
	if s.bad {
		return
	}
	s.i = end
	if plain {
		*dst = string(s.b[start+1 : end-1])
		return
	}
	*dst = unquote(s.b[start+1 : end-1])
}

// name reads a string that names a kind of record (a type, a kind) into
// *dst, as str does, without a copy when it is one of known, the ones the
// mapper's fast path looks for.
func (s *scan) name(dst *string, known ...string) {
	if s.peek() == '"' {
		end, plain := s.stringEnd()
		if s.bad {
			return
		}
		if plain {
			v := s.b[s.i+1 : end-1]
			for _, k := range known {
				if string(v) == k {
					*dst, s.i = k, end
					return
				}
			}
		}
	}
	s.str(dst)
}

// check reads a string or null, as str does, for a field whose value the
// fast path does not use: it is only checked.
func (s *scan) check() {
	if s.null() {
		return
	}
	if s.peek() != '"' {
		s.bad = true
		return
	}
	s.i, _ = s.stringEnd()
}

// raw reads the value at the cursor, whatever it is, and returns its text
// (a slice of the record: valid until the record changes).
func (s *scan) raw() []byte {
	s.space()
	start := s.i
	s.skip(s.depth)
	return s.b[start:s.i]
}

// boolean reads true or false into *dst; a null leaves it; any other value
// is bad.
func (s *scan) boolean(dst *bool) {
	switch {
	case s.null():
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		*dst, s.i = true, s.i+4
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		*dst, s.i = false, s.i+5
	default:
		s.bad = true
	}
}

// once marks the field bit of a struct read: a key seen twice is bad (the
// last would win in encoding/json, merged into the first for objects).
func (s *scan) once(seen *uint32, bit uint32) {
	if *seen&bit != 0 {
		s.bad = true
	}
	*seen |= bit
}

// other checks a key no case of fn read: one that case-folds to one of the
// struct's fields but is not it would be that field to encoding/json, so
// it is bad. fields are all the struct's: a key that is one of them
// exactly is a json.RawMessage field, any value.
func (s *scan) other(key []byte, fields ...string) {
	for _, f := range fields {
		if len(f) == len(key) && f != string(key) && strings.EqualFold(f, string(key)) {
			s.bad = true
		}
	}
}

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

// skip reads the value at the cursor, checking it is valid JSON, and sets
// bad if it is not.
func (s *scan) skip(depth int) {
	c := s.peek()
	if (c == '{' || c == '[') && depth >= maxScanDepth {
		s.bad = true
		return
	}
	switch {
	case c == '"':
		s.i, _ = s.stringEnd()
	case c == '{':
		s.i++
		if s.peek() == '}' {
			s.i++
			return
		}
		for !s.bad {
			if s.peek() != '"' {
				s.bad = true
				return
			}
			s.i, _ = s.stringEnd()
			if s.bad || s.peek() != ':' {
				s.bad = true
				return
			}
			s.i++
			s.skip(depth + 1)
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return
			default:
				s.bad = true
			}
		}
	case c == '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return
		}
		for !s.bad {
			s.skip(depth + 1)
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return
			default:
				s.bad = true
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		s.number()
	case c == 't' && bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
	case c == 'f' && bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
	case c == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")):
		s.i += 4
	default:
		s.bad = true
	}
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scan) number() {
	b, i := s.b, s.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		s.bad = true
		return
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			s.bad = true
			return
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			s.bad = true
			return
		}
		i = j
	}
	s.i = i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

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

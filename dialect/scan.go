package dialect

import (
	"bytes"
	"strings"
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

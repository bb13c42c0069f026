package dialect

import "bytes"

// Values in a record that scan passes over unread: checked to be valid
// JSON (encoding/json would refuse the whole record otherwise), nesting
// bounded as encoding/json bounds it.

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

package rawjson

// maxDepth is how deeply values may nest, as in encoding/json.
const maxDepth = 10000

// AppendCompact appends src, one JSON value with optional whitespace
// around and inside it, to dst without the insignificant whitespace, and
// reports whether src was valid. It does what json.Compact does, in one
// pass without the standard scanner's per-byte function calls: records
// are compacted on the per-record path. Strings are copied as written.
func AppendCompact(dst, src []byte) ([]byte, bool) {
	var stack []byte // '{' or '[' for each open container
	i := skipSpace(src, 0)
	for {
		// A value.
		if i >= len(src) {
			return dst, false
		}
		switch c := src[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxDepth {
				return dst, false
			}
			dst = append(dst, c)
			i = skipSpace(src, i+1)
			if i < len(src) && (c == '{' && src[i] == '}' || c == '[' && src[i] == ']') {
				dst = append(dst, src[i])
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				var ok bool
				if dst, i, ok = appendKey(dst, src, i); !ok {
					return dst, false
				}
			}
			continue
		case c == '"':
			end, ok := stringEnd(src, i)
			if !ok {
				return dst, false
			}
			dst = append(dst, src[i:end]...)
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end, ok := numberEnd(src, i)
			if !ok {
				return dst, false
			}
			dst = append(dst, src[i:end]...)
			i = end
		default:
			end, ok := literalEnd(src, i)
			if !ok {
				return dst, false
			}
			dst = append(dst, src[i:end]...)
			i = end
		}
		// After a value: close containers, or a comma and the next value.
		for {
			i = skipSpace(src, i)
			if len(stack) == 0 {
				return dst, i == len(src)
			}
			if i >= len(src) {
				return dst, false
			}
			top, c := stack[len(stack)-1], src[i]
			if c == ',' {
				dst = append(dst, ',')
				i = skipSpace(src, i+1)
				if top == '{' {
					var ok bool
					if dst, i, ok = appendKey(dst, src, i); !ok {
						return dst, false
					}
				}
				break
			}
			if top == '{' && c == '}' || top == '[' && c == ']' {
				dst = append(dst, c)
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return dst, false
		}
	}
}

// appendKey appends an object key and its colon, leaving i at the value.
func appendKey(dst, src []byte, i int) ([]byte, int, bool) {
	if i >= len(src) || src[i] != '"' {
		return dst, i, false
	}
	end, ok := stringEnd(src, i)
	if !ok {
		return dst, i, false
	}
	dst = append(dst, src[i:end]...)
	i = skipSpace(src, end)
	if i >= len(src) || src[i] != ':' {
		return dst, i, false
	}
	dst = append(dst, ':')
	return dst, skipSpace(src, i+1), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i],
// checking its escapes and that it holds no control characters.
func stringEnd(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// numberEnd returns the index just past the number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
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
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// literalEnd returns the index just past true, false or null at b[i].
func literalEnd(b []byte, i int) (int, bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return i, false
}

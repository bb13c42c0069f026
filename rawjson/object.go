package rawjson

import (
	"bytes"
	"encoding/json"
)

// Members calls fn with each member of the JSON object obj, in order: its
// key as written (quoted, escapes kept; see Key) and its value, both
// slices of obj, nothing copied. It stops when fn returns false. It
// reports whether obj is one JSON object and fn never stopped it; values
// are only delimited, not checked, so obj should be valid JSON (json.Valid)
// for the values to be. It never panics, whatever obj holds.
func Members(obj []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return skipSpace(obj, i+1) == len(obj)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return false
		}
		end, ok := stringEnd(obj, i)
		if !ok {
			return false
		}
		key := obj[i:end]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = skipSpace(obj, i+1)
		end, ok = memberEnd(obj, i)
		if !ok {
			return false
		}
		if !fn(key, obj[i:end]) {
			return false
		}
		i = skipSpace(obj, end)
		if i >= len(obj) {
			return false
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return skipSpace(obj, i+1) == len(obj)
		default:
			return false
		}
	}
}

// Key is the name of a member key given by Members.
func Key(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	json.Unmarshal(raw, &s) // a string Members delimited
	return s
}

// KeyIs reports whether a member key given by Members is name.
func KeyIs(raw []byte, name string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == name
	}
	return Key(raw) == name
}

// memberEnd returns the index just past the value starting at b[i]: a
// string, a number or literal, or a container up to its matching bracket
// (the strings inside skipped whole).
func memberEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return stringEnd(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return numberEnd(b, i)
	case c != '{' && c != '[':
		return literalEnd(b, i)
	}
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			end, ok := stringEnd(b, i)
			if !ok {
				return i, false
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return i, false
}

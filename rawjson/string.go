package rawjson

import (
	"unicode/utf8"
	"unsafe"
)

// Invalid says how AppendString writes a byte that is not part of valid
// UTF-8. Either way it becomes U+FFFD, one per bad byte, as
// encoding/json does; the two differ only in how it is spelled.
type Invalid uint8

const (
	// EscapeInvalid writes the escape \ufffd, byte for byte what
	// encoding/json's Marshal writes (dialect's emitted lines, which tests
	// compare with Marshal's).
	EscapeInvalid Invalid = iota
	// ReplaceInvalid writes U+FFFD itself, three bytes (upstream's text
	// replies, whose room is measured in those bytes).
	ReplaceInvalid
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string literal as encoding/json's
// Marshal writes it without HTML escaping: ", \ and control characters
// escaped (\n, \r, \t, \b, \f, else \u00XX), U+2028 and U+2029 escaped,
// <, > and & left alone (the lines are not HTML); invalid UTF-8 as
// invalid says.
func AppendString(dst []byte, s string, invalid Invalid) []byte {
	return append(AppendContents(append(dst, '"'), s, invalid), '"')
}

// AppendContents appends what AppendString writes between the quotes:
// for text a writer keeps escaped, to be quoted whole later.
func AppendContents(dst []byte, s string, invalid Invalid) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			if invalid == EscapeInvalid {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, "\uFFFD"...)
			}
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// AppendBytes is AppendString of b's text, read in place: the string it
// reads b as is never kept, and b does not change while it is read
// (converting would copy every record's text once more).
func AppendBytes(dst, b []byte, invalid Invalid) []byte {
	return AppendString(dst, unsafe.String(unsafe.SliceData(b), len(b)), invalid)
}

// AppendBytesContents is AppendContents of b's text, read in place as
// AppendBytes reads it.
func AppendBytesContents(dst, b []byte, invalid Invalid) []byte {
	return AppendContents(dst, unsafe.String(unsafe.SliceData(b), len(b)), invalid)
}

package foundry

import (
	"fmt"
	"net/http"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// textInput is body, UTF-8 text that is not JSON, as a JSON string: the
// method's input. Nothing is escaped that JSON does not require ("<", "&"
// and ">" stay one byte each), and the string must fit in limit
// (limits.request_bytes), as the body had to: a control character takes
// six bytes (\u0001), so a body under the limit can make a string six
// times its size, and the string is what the agent's request holds.
func textInput(body []byte, limit int64) ([]byte, error) {
	n := quotedLen(body)
	if n > limit {
		return nil, &core.RequestError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf(
			"the body as a JSON string is %d bytes, over the limit of %d (a control character takes 6)", n, limit)}
	}
	return appendQuoted(make([]byte, 0, n), body), nil
}

// quotedLen is the length of appendQuoted's string for s.
func quotedLen(s []byte) int64 {
	n := int64(2)
	for _, c := range s {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20:
			n += 6
		default:
			n++
		}
	}
	return n
}

// appendQuoted appends s, valid UTF-8, to dst as a JSON string.
func appendQuoted(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i, c := range s {
		var esc string
		switch c {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		default:
			if c >= 0x20 {
				continue
			}
		}
		dst = append(dst, s[start:i]...)
		if esc != "" {
			dst = append(dst, esc...)
		} else {
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

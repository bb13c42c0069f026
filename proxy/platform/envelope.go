package platform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// Envelope is a normalized platform request.
type Envelope struct {
	Method string          // class_method, the route's default when absent
	Input  json.RawMessage // a compact JSON object, "{}" when absent or null
}

func badRequest(format string, args ...any) error {
	return &core.RequestError{Msg: fmt.Sprintf(format, args...)}
}

// The REST API's defaults when a request names no method.
const (
	defaultUnaryMethod  = "query"
	defaultStreamMethod = "stream_query"
)

// maxMethodName is the longest class_method accepted, in bytes.
const maxMethodName = 256

// validMethodName reports whether name can be a class_method: an ASCII
// identifier, as Python method names are, with "." and "-" also allowed
// after the first character for agents in other languages behind "*".
// None of these characters needs escaping in a path segment.
func validMethodName(name string) bool {
	if name == "" || len(name) > maxMethodName {
		return false
	}
	for i, c := range []byte(name) {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// Decode accepts every envelope variant the platform sends: the
// object itself or a JSON string holding it (decoded one level, top level
// only), class_method or classMethod, a missing or empty method (the
// route's default), a missing or null input ({}). Extra keys are ignored;
// the envelope's own keys are matched exactly (no other case), and one
// given twice is an error, as are class_method and classMethod naming two
// methods (the same method under both is accepted). The input is
// compacted in place: body's memory is reused, and env.Input is a slice
// of it.
func Decode(body []byte, stream bool) (Envelope, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return Envelope{}, badRequest(`request body is empty; want {"class_method": "…", "input": {…}}`)
	}
	wrapped := body[0] == '"'
	if wrapped {
		if !json.Valid(body) {
			return Envelope{}, badRequest("request body is not valid JSON: %v", jsonError(body))
		}
		body = bytes.TrimSpace(unquote(body))
		if len(body) == 0 {
			return Envelope{}, badRequest(`request body is an empty string; want {"class_method": "…", "input": {…}}`)
		}
	}
	if !json.Valid(body) {
		if wrapped {
			return Envelope{}, badRequest(`request body is a JSON string, but the text it holds is not valid JSON (%v); want {"class_method": "…", "input": {…}}`, jsonError(body))
		}
		return Envelope{}, badRequest("request body is not valid JSON: %v", jsonError(body))
	}
	if body[0] != '{' {
		if wrapped {
			return Envelope{}, badRequest(`request body is a JSON string holding %s; want {"class_method": "…", "input": {…}}`, kindOf(body))
		}
		return Envelope{}, badRequest(`request body must be a JSON object {"class_method": "…", "input": {…}}, got %s`, kindOf(body))
	}

	var snake, camel, in []byte
	var dup string
	rawjson.Members(body, func(key, value []byte) bool {
		var field *[]byte
		switch {
		case rawjson.KeyIs(key, "class_method"):
			field = &snake
		case rawjson.KeyIs(key, "classMethod"):
			field = &camel
		case rawjson.KeyIs(key, "input"):
			field = &in
		default:
			return true
		}
		if *field != nil {
			dup = rawjson.Key(key)
			return false
		}
		*field = value
		return true
	})
	if dup != "" {
		return Envelope{}, badRequest("request body has the key %q twice", dup)
	}

	var env Envelope
	var err error
	if env.Method, err = methodOf(snake, camel); err != nil {
		return Envelope{}, err
	}
	if env.Method != "" && !validMethodName(env.Method) {
		return Envelope{}, badRequest("class_method %q is not a method name (letters, digits, _, . and -, starting with a letter or _, at most %d bytes)", core.Clip(env.Method), maxMethodName)
	}
	if env.Method == "" {
		env.Method = defaultUnaryMethod
		if stream {
			env.Method = defaultStreamMethod
		}
	}

	switch {
	case in == nil || isNull(in):
		env.Input = json.RawMessage("{}")
	case in[0] == '{':
		// In place: compacting only ever drops bytes already read.
		var ok bool
		if env.Input, ok = rawjson.AppendCompact(in[:0], in); !ok {
			return Envelope{}, badRequest("input nests too deeply")
		}
	default:
		return Envelope{}, badRequest("input must be a JSON object, got %s", kindOf(in))
	}
	return env, nil
}

// methodOf is the method a body names under class_method or classMethod
// (raw values, nil when absent; null is absent too). Both may be given
// only with the same method: neither spelling wins over the other, so a
// caller never gets a method it did not mean.
func methodOf(snake, camel []byte) (string, error) {
	method, named, err := methodNamed("class_method", snake)
	if err != nil {
		return "", err
	}
	other, otherNamed, err := methodNamed("classMethod", camel)
	switch {
	case err != nil:
		return "", err
	case !otherNamed:
		return method, nil
	case named && other != method:
		return "", badRequest("request body names two methods, class_method %q and classMethod %q; give one", core.Clip(method), core.Clip(other))
	}
	return other, nil
}

// methodNamed is the method the raw value of key names, if it names one.
func methodNamed(key string, raw []byte) (method string, named bool, err error) {
	if raw == nil || isNull(raw) {
		return "", false, nil
	}
	if raw[0] != '"' {
		return "", false, badRequest("%s must be a string, got %s", key, kindOf(raw))
	}
	return jsonString(raw), true, nil
}

// jsonString is the valid JSON string s decoded, as encoding/json
// decodes it (invalid UTF-8 as U+FFFD).
func jsonString(s []byte) string {
	if v := s[1 : len(s)-1]; bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v) // nothing to decode: the common case
	}
	var v string
	json.Unmarshal(s, &v)
	return v
}

// unquote decodes the valid JSON string s, quotes included, as
// encoding/json does, into s's own memory: every escape is longer than
// what it stands for, so the text written never overtakes the text read.
// Only invalid UTF-8, which decodes longer (each bad byte becomes U+FFFD),
// is decoded into a copy.
func unquote(s []byte) []byte {
	src := s[1 : len(s)-1]
	if !utf8.Valid(src) {
		var v string
		json.Unmarshal(s, &v)
		return []byte(v)
	}
	w := 0
	for r := 0; r < len(src); {
		c := src[r]
		if c != '\\' {
			s[w] = c
			w, r = w+1, r+1
			continue
		}
		switch e := src[r+1]; e {
		case 'b':
			s[w] = '\b'
		case 'f':
			s[w] = '\f'
		case 'n':
			s[w] = '\n'
		case 'r':
			s[w] = '\r'
		case 't':
			s[w] = '\t'
		case 'u':
			c := hex4(src[r+2:])
			r += 6
			if utf16.IsSurrogate(c) {
				if len(src) >= r+6 && src[r] == '\\' && src[r+1] == 'u' {
					if d := utf16.DecodeRune(c, hex4(src[r+2:])); d != utf8.RuneError {
						c, r = d, r+6
					} else {
						c = utf8.RuneError
					}
				} else {
					c = utf8.RuneError
				}
			}
			w += utf8.EncodeRune(s[w:], c)
			continue
		default: // '"', '\\', '/'
			s[w] = e
		}
		w, r = w+1, r+2
	}
	return s[:w]
}

// hex4 is the value of the four hex digits that start b.
func hex4(b []byte) rune {
	var v rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		v = v<<4 | rune(c)
	}
	return v
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// kindOf names the JSON type of a valid value, for messages.
func kindOf(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

func jsonError(b []byte) error {
	var v any
	return json.Unmarshal(b, &v)
}

package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sidecar-dev/sidecar/upstream"
)

// envelope is a normalized platform request.
type envelope struct {
	method string          // class_method, the route's default when absent
	input  json.RawMessage // a compact JSON object, "{}" when absent or null
}

// RequestError is a request the sidecar rejects as the caller's fault; it
// is answered 400 (or Status, when set) with Msg as the detail.
type RequestError struct {
	Status int
	Msg    string
}

func (e *RequestError) Error() string { return e.Msg }

func badRequest(format string, args ...any) error {
	return &RequestError{Msg: fmt.Sprintf(format, args...)}
}

// The REST API's defaults when a request names no method.
const (
	defaultUnaryMethod  = "query"
	defaultStreamMethod = "stream_query"
)

// decodeEnvelope accepts every envelope variant the platform sends: the
// object itself or a JSON string holding it (decoded one level, top level
// only), class_method or classMethod, a missing or empty method (the
// route's default), a missing or null input ({}). Extra keys are ignored.
func decodeEnvelope(body []byte, stream bool) (envelope, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return envelope{}, badRequest(`request body is empty; want {"class_method": "…", "input": {…}}`)
	}
	if body[0] == '"' {
		var s string
		if err := json.Unmarshal(body, &s); err != nil {
			return envelope{}, badRequest("request body is not valid JSON: %v", err)
		}
		body = bytes.TrimSpace([]byte(s))
		if len(body) == 0 {
			return envelope{}, badRequest(`request body is an empty string; want {"class_method": "…", "input": {…}}`)
		}
	}
	// A struct, not a map: one allocation less per key. (encoding/json
	// matches these names regardless of case, which only widens the
	// accepted spellings.)
	var fields struct {
		ClassMethod      json.RawMessage `json:"class_method"`
		ClassMethodCamel json.RawMessage `json:"classMethod"`
		Input            json.RawMessage `json:"input"`
	}
	if body[0] != '{' || json.Unmarshal(body, &fields) != nil {
		if json.Valid(body) {
			return envelope{}, badRequest(`request body must be a JSON object {"class_method": "…", "input": {…}}, got %s`, kindOf(body))
		}
		return envelope{}, badRequest("request body is not valid JSON: %v", jsonError(body))
	}

	var env envelope
	raw := fields.ClassMethod
	if raw == nil || isNull(raw) {
		raw = fields.ClassMethodCamel
	}
	if raw != nil && !isNull(raw) {
		if err := json.Unmarshal(raw, &env.method); err != nil {
			return envelope{}, badRequest("class_method must be a string, got %s", kindOf(raw))
		}
	}
	if env.method == "" {
		env.method = defaultUnaryMethod
		if stream {
			env.method = defaultStreamMethod
		}
	}

	in := fields.Input
	switch {
	case in == nil || isNull(in):
		env.input = json.RawMessage("{}")
	case in[0] == '{':
		env.input, _ = upstream.AppendCompact(make([]byte, 0, len(in)), in) // valid: it came out of Unmarshal
	default:
		return envelope{}, badRequest("input must be a JSON object, got %s", kindOf(in))
	}
	return env, nil
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

// Package jsonrpc reads a JSON-RPC 2.0 message the way every door that
// speaks JSON-RPC (A2A, MCP) must: one message per body, member names
// matched exactly (JSON-RPC's are case-sensitive: encoding/json would
// take "JSONRPC" for "jsonrpc"), a member given twice refused (its value
// would be a guess), members JSON-RPC does not name ignored, ids bounded.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sidecar-dev/sidecar/rawjson"
)

// The error codes of the JSON-RPC 2.0 specification.
const (
	CodeParse          = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

// Request is one JSON-RPC 2.0 message a client sent.
type Request struct {
	// ID is the id as sent: nil for a notification (no id member) and for
	// a client's response.
	ID     json.RawMessage
	Method string
	// Params is nil when absent, else an object.
	Params json.RawMessage
	// Response: the message is a client's response to a server's request
	// (a result or an error, no method), read only under Rules.Responses.
	Response bool
}

// Notification reports whether the message gets no response: a
// notification, or a client's response.
func (r Request) Notification() bool { return r.ID == nil }

// Rules are what a door's protocol allows beyond the base.
type Rules struct {
	// MaxID is the longest id the door takes, in bytes: it is repeated in
	// every message of its answer.
	MaxID int
	// NullID allows "id": null (JSON-RPC 2.0 does; MCP does not).
	NullID bool
	// Responses reads a client's response (result or error with an id,
	// no method) as one, rather than refusing it.
	Responses bool
}

// Error is why a body is not a message the door reads: Code is
// CodeParse or CodeInvalidRequest.
type Error struct {
	Code    int
	Message string
}

// members are the members of a message Read looks at.
var members = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// Read reads body as one JSON-RPC 2.0 message under rules. A batch (an
// array) is refused: no protocol a door speaks has them.
func Read(body []byte, rules Rules) (Request, *Error) {
	invalid := func(msg string) (Request, *Error) {
		return Request{}, &Error{CodeInvalidRequest, msg}
	}
	if !json.Valid(body) {
		return Request{}, &Error{CodeParse, "request body is not valid JSON"}
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		return invalid("batches are not supported: send one JSON-RPC request per POST")
	}
	var req Request
	var version, method []byte
	var result bool
	var seen uint8 // a bit per member of members
	dup := ""
	ok := rawjson.Members(body, func(key, value []byte) bool {
		i := 0
		for i < len(members) && !rawjson.KeyIs(key, members[i]) {
			i++
		}
		if i == len(members) {
			return true
		}
		if seen&(1<<i) != 0 {
			dup = members[i]
			return false
		}
		seen |= 1 << i
		switch members[i] {
		case "jsonrpc":
			version = value
		case "id":
			req.ID = value
		case "method":
			method = value
		case "params":
			req.Params = value
		default:
			result = true
		}
		return true
	})
	const shape = `request is not a JSON-RPC 2.0 request {"jsonrpc": "2.0", "id": …, "method": …, "params": {…}}`
	switch {
	case dup != "":
		return invalid(fmt.Sprintf("member %q is given twice", dup))
	case !ok:
		return invalid(shape)
	case string(version) != `"2.0"`:
		return invalid(shape + `: "jsonrpc" must be "2.0"`)
	case rules.Responses && method == nil && result:
		// A response answers a request the server sent, by its id: one
		// without an id, or with an id no request of the rules could
		// have, answers nothing.
		if req.ID == nil {
			return invalid(`a response must carry the "id" of the request it answers`)
		}
		if !validID(req.ID, rules.NullID) || len(req.ID) > rules.MaxID {
			return invalid(fmt.Sprintf(`a response's "id" must be one a request can have (a string or a number of at most %d bytes)`, rules.MaxID))
		}
		req.Response = true
		req.ID = nil
		return req, nil
	case len(method) == 0 || method[0] != '"':
		return invalid(shape + `: "method" must be a string`)
	case req.ID != nil && !validID(req.ID, rules.NullID):
		if rules.NullID {
			return invalid(shape + `: "id" must be a string, a number or null`)
		}
		return invalid(shape + `: "id" must be a string or a number`)
	case len(req.ID) > rules.MaxID:
		return invalid(fmt.Sprintf(`"id" is longer than %d bytes`, rules.MaxID))
	case req.Params != nil && req.Params[0] != '{':
		return invalid(shape + `: "params" must be an object`)
	}
	json.Unmarshal(method, &req.Method) // a string json.Valid checked
	return req, nil
}

// validID reports whether id is a string or a number, or null where null
// is allowed.
func validID(id json.RawMessage, null bool) bool {
	return id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9' || null && string(id) == "null"
}

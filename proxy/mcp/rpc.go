package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/rawjson"
)

// The JSON-RPC and MCP error codes the door answers with.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	// codeSessionNotFound is what the TypeScript SDK's server answers an
	// unknown Mcp-Session-Id with (2025 revisions).
	codeSessionNotFound = -32001
	// codeHeaderMismatch: the MCP headers disagree with the body, or one
	// is missing (2026-07-28).
	codeHeaderMismatch = -32020
	// codeUnsupportedVersion: a protocol version the door does not speak
	// (2026-07-28's UnsupportedProtocolVersionError).
	codeUnsupportedVersion = -32022
)

// maxID is the longest JSON-RPC id or progress token the door takes, in
// bytes: each is repeated in every message of its answer.
const maxID = 256

// rpcError is a JSON-RPC error; data, when set, its data member (JSON).
type rpcError struct {
	code    int
	message string
	data    []byte
}

// request is one JSON-RPC 2.0 message a client sent.
type request struct {
	id       json.RawMessage // as sent; nil for a notification or a response
	method   string
	params   json.RawMessage // nil when absent
	response bool            // a response (result or error, no method)
}

// notification reports whether the message gets no response: a
// notification or a client's response.
func (r request) notification() bool { return r.id == nil }

// readRequest reads body as one JSON-RPC 2.0 message. Member names are
// matched exactly (JSON-RPC's are case-sensitive); a member given twice is
// refused; members JSON-RPC does not name are ignored. A batch (an array)
// is refused: the 2025-06-18 revision removed batches, and no revision the
// door speaks has them.
func readRequest(body []byte) (request, *rpcError) {
	invalid := func(msg string) (request, *rpcError) {
		return request{}, &rpcError{code: codeInvalidRequest, message: msg}
	}
	if !json.Valid(body) {
		return request{}, &rpcError{code: codeParse, message: "request body is not valid JSON"}
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		return invalid("batches are not supported: send one JSON-RPC message per POST")
	}
	var req request
	var version, method []byte
	var result bool
	var seen uint8 // a bit per member of rpcMembers
	dup := ""
	ok := rawjson.Members(body, func(key, value []byte) bool {
		i := memberIndex(key, rpcMembers)
		if i < 0 {
			return true
		}
		name := rpcMembers[i]
		if seen&(1<<i) != 0 {
			dup = name
			return false
		}
		seen |= 1 << i
		switch name {
		case "jsonrpc":
			version = value
		case "id":
			req.id = value
		case "method":
			method = value
		case "params":
			req.params = value
		default:
			result = true
		}
		return true
	})
	const shape = `request is not a JSON-RPC 2.0 message {"jsonrpc": "2.0", "id": …, "method": …, "params": {…}}`
	switch {
	case dup != "":
		return invalid(fmt.Sprintf("member %q is given twice", dup))
	case !ok:
		return invalid(shape)
	case string(version) != `"2.0"`:
		return invalid(shape + `: "jsonrpc" must be "2.0"`)
	case method == nil && result && req.id != nil:
		// A client's response to a server's request: the door sends
		// none, and takes it as MCP says (202).
		req.response = true
		req.id = nil
		return req, nil
	case len(method) == 0 || method[0] != '"':
		return invalid(shape + `: "method" must be a string`)
	case req.id != nil && req.id[0] != '"' && req.id[0] != '-' && (req.id[0] < '0' || req.id[0] > '9'):
		return invalid(shape + `: "id" must be a string or a number`)
	case len(req.id) > maxID:
		return invalid(fmt.Sprintf(`"id" is longer than %d bytes`, maxID))
	case req.params != nil && req.params[0] != '{':
		return invalid(shape + `: "params" must be an object`)
	}
	json.Unmarshal(method, &req.method) // a string json.Valid checked
	return req, nil
}

// rpcMembers are the members of a JSON-RPC message the door reads.
var rpcMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// memberIndex is the index in names of a member key Members gave, -1 for
// none: compared in place, nothing allocated.
func memberIndex(key []byte, names []string) int {
	for i, n := range names {
		if rawjson.KeyIs(key, n) {
			return i
		}
	}
	return -1
}

// params are the members of a request's params the door reads.
type params struct {
	version       string          // _meta's io.modelcontextprotocol/protocolVersion
	versionSet    bool            // it was there
	progressToken json.RawMessage // _meta's progressToken, nil when absent
	name          string          // name (tools/call)
	nameSet       bool
	arguments     json.RawMessage // arguments (tools/call), nil when absent
	protocol      string          // protocolVersion (initialize)
}

// The members of params, and of its _meta, the door reads, in the order
// readParams names them.
var (
	paramMembers = []string{"_meta", "name", "arguments", "protocolVersion"}
	metaMembers  = []string{metaVersion, "progressToken"}
)

// Keys of a request's _meta the door reads (2026-07-28).
const (
	metaVersion    = "io.modelcontextprotocol/protocolVersion"
	metaServerInfo = "io.modelcontextprotocol/serverInfo"
)

// readParams reads req's params. A member of the wrong type is invalid
// params.
func readParams(raw json.RawMessage) (params, *rpcError) {
	var p params
	if raw == nil {
		return p, nil
	}
	var err *rpcError
	bad := func(format string, args ...any) bool {
		err = &rpcError{code: codeInvalidParams, message: fmt.Sprintf(format, args...)}
		return false
	}
	rawjson.Members(raw, func(key, value []byte) bool {
		switch i := memberIndex(key, paramMembers); i {
		case -1:
		case 0: // _meta
			if value[0] != '{' {
				return bad(`params._meta must be an object`)
			}
			rawjson.Members(value, func(key, value []byte) bool {
				switch memberIndex(key, metaMembers) {
				case 0: // metaVersion
					p.versionSet = true
					if value[0] != '"' || json.Unmarshal(value, &p.version) != nil {
						return bad(`params._meta[%q] must be a string`, metaVersion)
					}
				case 1: // progressToken
					if value[0] != '"' && value[0] != '-' && (value[0] < '0' || value[0] > '9') {
						return bad(`params._meta.progressToken must be a string or a number`)
					}
					if len(value) > maxID {
						return bad(`params._meta.progressToken is longer than %d bytes`, maxID)
					}
					p.progressToken = value
				}
				return true
			})
		case 1: // name
			p.nameSet = true
			if value[0] != '"' || json.Unmarshal(value, &p.name) != nil {
				return bad(`params.name must be a string`)
			}
		case 2: // arguments
			if value[0] != '{' && string(value) != "null" {
				return bad(`params.arguments must be an object (the method's input)`)
			}
			if value[0] == '{' {
				p.arguments = value
			}
		case 3: // protocolVersion
			if value[0] != '"' || json.Unmarshal(value, &p.protocol) != nil {
				return bad(`params.protocolVersion must be a string`)
			}
		}
		return err == nil
	})
	return p, err
}

// headerName is the value of an Mcp-Name header: its text, or the
// decoded text of the form =?base64?…?= (2026-07-28's encoding of a value
// that is not plain ASCII). ok is false for a value that is neither.
func headerName(h string) (string, bool) {
	if rest, found := strings.CutPrefix(h, "=?base64?"); found {
		enc, closed := strings.CutSuffix(rest, "?=")
		if !closed {
			return "", false
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || !utf8.Valid(b) {
			return "", false
		}
		return string(b), true
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return "", false
		}
	}
	return h, true
}

// response is a JSON-RPC response to id: result (JSON) or e.
func response(id json.RawMessage, result []byte, e *rpcError) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	if id == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	if e == nil {
		b = append(b, `,"result":`...)
		b = append(b, result...)
		return append(b, '}')
	}
	b = append(b, `,"error":{"code":`...)
	b = fmt.Appendf(b, "%d", e.code)
	b = append(b, `,"message":`...)
	b = appendString(b, e.message)
	if e.data != nil {
		b = append(b, `,"data":`...)
		b = append(b, e.data...)
	}
	return append(b, "}}"...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

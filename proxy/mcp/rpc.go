package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/proxy/internal/jsonrpc"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// The JSON-RPC and MCP error codes the door answers with.
const (
	codeParse          = jsonrpc.CodeParse
	codeInvalidRequest = jsonrpc.CodeInvalidRequest
	codeMethodNotFound = jsonrpc.CodeMethodNotFound
	codeInvalidParams  = jsonrpc.CodeInvalidParams
	codeInternal       = jsonrpc.CodeInternal
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

// readRequest reads body as one JSON-RPC 2.0 message (package jsonrpc's
// rules): a client's response is read as one (MCP answers it 202); an id
// may not be null (MCP's ids are strings or numbers).
func readRequest(body []byte) (request, *rpcError) {
	r, err := jsonrpc.Read(body, jsonrpc.Rules{MaxID: maxID, Responses: true})
	if err != nil {
		return request{}, &rpcError{code: err.Code, message: err.Message}
	}
	return request{id: r.ID, method: r.Method, params: r.Params, response: r.Response}, nil
}

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
	metaSet       bool            // params had a _meta
	version       string          // _meta's io.modelcontextprotocol/protocolVersion
	versionSet    bool            // it was there
	capsSet       bool            // _meta's io.modelcontextprotocol/clientCapabilities was there
	progressToken json.RawMessage // _meta's progressToken, nil when absent
	name          string          // name (tools/call)
	nameSet       bool
	arguments     json.RawMessage // arguments (tools/call), nil when absent
	protocol      string          // protocolVersion (initialize)
	requestID     json.RawMessage // requestId (notifications/cancelled), nil when absent
	// caps are the client's capabilities: initialize's capabilities, a
	// 2026-07-28 request's _meta clientCapabilities; nil when absent.
	caps json.RawMessage
	// inputResponses and requestState are a 2026-07-28 tools/call's
	// answers to the questions of its input-required result (stateless.go),
	// nil and "" when absent.
	inputResponses  json.RawMessage
	requestState    string
	requestStateSet bool
}

// The members of params, and of its _meta, the door reads, in the order
// readParams names them.
var (
	paramMembers = []string{"_meta", "name", "arguments", "protocolVersion", "requestId", "capabilities", "inputResponses", "requestState"}
	metaMembers  = []string{metaVersion, "progressToken", metaCapabilities}
)

// Keys of a request's _meta the door reads (2026-07-28).
const (
	metaVersion      = "io.modelcontextprotocol/protocolVersion"
	metaCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo   = "io.modelcontextprotocol/serverInfo"
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
			p.metaSet = true
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
				case 2: // metaCapabilities
					p.capsSet = true
					if value[0] != '{' {
						return bad(`params._meta[%q] must be an object`, metaCapabilities)
					}
					p.caps = value
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
		case 4: // requestId
			if value[0] != '"' && value[0] != '-' && (value[0] < '0' || value[0] > '9') || len(value) > maxID {
				return bad(`params.requestId must be a string or a number of at most %d bytes`, maxID)
			}
			p.requestID = value
		case 5: // capabilities (initialize)
			if value[0] != '{' {
				return bad(`params.capabilities must be an object`)
			}
			p.caps = value
		case 6: // inputResponses
			if value[0] != '{' {
				return bad(`params.inputResponses must be an object: each input request's key, and the client's answer to it`)
			}
			p.inputResponses = value
		case 7: // requestState
			p.requestStateSet = true
			if value[0] != '"' || json.Unmarshal(value, &p.requestState) != nil {
				return bad(`params.requestState must be a string: the one the input-required result carried, as it was`)
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

// appendString appends s as a JSON string, without HTML escaping (a
// message's <JWT> stays <JWT>, as on A2A's door).
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

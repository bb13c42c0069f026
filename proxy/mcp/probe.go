package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// probe calls tools/call of the method's tool in the stateless revision
// (2026-07-28: no session to open first), with a progress token for a
// stream; its refusals are JSON-RPC errors, a stream's failures the result
// with isError (or a JSON-RPC error) at its end; ids come in the body, so
// it has a LongID.
var probe = core.Probe{
	Section: func(at core.At, method string) string {
		return fmt.Sprintf("{%s, methods: [%s]}", at, method)
	},
	Request: func(base, method string, stream bool) *http.Request {
		return probeRequest(base, method, `1`, stream)
	},
	Refusal: func(body []byte) bool { _, ok := probeRPCError(body); return ok },
	Errors: func(body []byte) ([]string, error) {
		return core.SSEErrors(body, func(data []byte) (string, bool) {
			if msg, ok := probeRPCError(data); ok {
				return msg, true
			}
			var v struct {
				Result struct {
					Content []struct{ Text string }
					IsError bool
				}
			}
			json.Unmarshal(data, &v)
			var text string
			for _, c := range v.Result.Content {
				text += c.Text
			}
			return text, v.Result.IsError
		})
	},
	LongID: func(base, method string, n int) *http.Request {
		return probeRequest(base, method, fmt.Sprintf("%q", strings.Repeat("i", n)), false)
	},
}

// probeRequest is a 2026-07-28 tools/call of method's tool, id id, with a
// progress token when stream, posted to base: the endpoint itself (its
// path on a listener of its own, the mount when mounted).
func probeRequest(base, method, id string, stream bool) *http.Request {
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	if stream {
		meta += `,"progressToken":"p1"`
	}
	r := core.JSONRequest(base, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{"message":"hi"},"_meta":{%s}}}`, id, method, meta))
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", version20260728)
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", method)
	return r
}

// probeRPCError is a JSON-RPC error response's message.
func probeRPCError(body []byte) (string, bool) {
	var v struct {
		JSONRPC string
		Error   *struct {
			Code    int
			Message string
		}
	}
	if json.Unmarshal(body, &v) != nil || v.JSONRPC != "2.0" || v.Error == nil || v.Error.Code == 0 {
		return "", false
	}
	return v.Error.Message, true
}

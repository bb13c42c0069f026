package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// probe calls message/send or message/stream at /; its refusals are
// JSON-RPC errors, a stream's failures SSE events of a JSON-RPC error or
// a failed task; ids come in the body, so it has a LongID.
var probe = core.Probe{
	Section: core.TargetSection,
	Request: func(base, _ string, stream bool) *http.Request {
		return core.JSONRequest(base+"/", probeMessage(`1`, stream))
	},
	Refusal: func(body []byte) bool { _, ok := probeRPCError(body); return ok },
	Errors: func(body []byte) ([]string, error) {
		return core.SSEErrors(body, func(data []byte) (string, bool) {
			if msg, ok := probeRPCError(data); ok {
				return msg, true
			}
			var v struct {
				Result struct {
					Status struct {
						State   string
						Message struct{ Parts []struct{ Text string } }
					}
				}
			}
			json.Unmarshal(data, &v)
			var text string
			for _, p := range v.Result.Status.Message.Parts {
				text += p.Text
			}
			return text, v.Result.Status.State == "failed"
		})
	},
	LongID: func(base, _ string, n int) *http.Request {
		return core.JSONRequest(base+"/", probeMessage(fmt.Sprintf("%q", strings.Repeat("i", n)), false))
	},
	Owned: func(base string, first []byte, auth string) *http.Request {
		var v struct{ Result struct{ ID string } }
		json.Unmarshal(bytes.TrimPrefix(bytes.TrimSpace(first), []byte("data: ")), &v)
		r := core.JSONRequest(base+"/", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, v.Result.ID))
		r.Header.Set("Authorization", auth)
		return r
	},
}

// probeMessage is a message/send (or message/stream) request of id.
func probeMessage(id string, stream bool) string {
	method := "message/send"
	if stream {
		method = "message/stream"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`, id, method)
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

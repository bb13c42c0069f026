package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// probe calls /v1/chat/completions with the method's name as the model;
// its refusals are OpenAI's error object, a stream's failures data events
// of it ([DONE] read as the end).
var probe = core.Probe{
	Section: core.TargetSection,
	Request: func(base, method string, stream bool) *http.Request {
		return core.JSONRequest(base+RouteChat,
			fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"stream":%t}`, method, stream))
	},
	Refusal: func(body []byte) bool { _, ok := probeError(body); return ok },
	Errors: func(body []byte) ([]string, error) {
		return core.SSEErrors([]byte(strings.Replace(string(body), "data: [DONE]\n\n", "", 1)), probeError)
	},
}

// probeError is OpenAI's error object's message.
func probeError(body []byte) (string, bool) {
	var v struct {
		Error *struct{ Message, Type string }
	}
	if json.Unmarshal(body, &v) != nil || v.Error == nil || v.Error.Type == "" {
		return "", false
	}
	return v.Error.Message, true
}

package agentcore

import (
	"encoding/json"
	"net/http"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// probe calls /invocations; its refusals are {"error": …}, a stream's
// failures SSE events with an error_type.
var probe = core.Probe{
	Section: core.TargetSection,
	Request: func(base, _ string, _ bool) *http.Request { return core.JSONRequest(base+"/invocations", `{"q":1}`) },
	Refusal: func(body []byte) bool {
		var v struct{ Error *string }
		return json.Unmarshal(body, &v) == nil && v.Error != nil
	},
	Errors: func(body []byte) ([]string, error) {
		return core.SSEErrors(body, func(data []byte) (string, bool) {
			var v struct {
				Error     string
				ErrorType string `json:"error_type"`
			}
			json.Unmarshal(data, &v)
			return v.Error, v.ErrorType != ""
		})
	},
}

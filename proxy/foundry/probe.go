package foundry

import (
	"encoding/json"
	"net/http"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// probe calls /invocations; its refusals and a stream's failures are
// Foundry's {"error": {"code", "message"}}.
var probe = core.Probe{
	Section: core.TargetSection,
	Request: func(base, _ string, _ bool) *http.Request { return core.JSONRequest(base+"/invocations", `{"q":1}`) },
	Refusal: func(body []byte) bool { _, ok := probeError(body); return ok },
	Errors:  func(body []byte) ([]string, error) { return core.SSEErrors(body, probeError) },
}

// probeError is Foundry's {"error": {"code", "message"}}'s message.
func probeError(body []byte) (string, bool) {
	var v struct {
		Error *struct{ Code, Message string }
	}
	if json.Unmarshal(body, &v) != nil || v.Error == nil || v.Error.Code == "" {
		return "", false
	}
	return v.Error.Message, true
}

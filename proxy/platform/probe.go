package platform

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// probe calls the door on its two routes, the method in the body; its
// refusals are {"detail": …}, a stream's failures ndjson lines with an
// "error".
var probe = core.Probe{
	Request: func(base, method string, stream bool) *http.Request {
		route := core.RouteUnary
		if stream {
			route = core.RouteStream
		}
		return core.JSONRequest(base+route, fmt.Sprintf(`{"class_method":%q,"input":{"q":1}}`, method))
	},
	Refusal: func(body []byte) bool {
		var v struct{ Detail *string }
		return json.Unmarshal(body, &v) == nil && v.Detail != nil
	},
	Errors: func(body []byte) ([]string, error) {
		var errs []string
		for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
			var v struct{ Error json.RawMessage }
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				return nil, fmt.Errorf("line %q: %v", line, err)
			}
			if v.Error != nil {
				errs = append(errs, string(v.Error))
			}
		}
		return errs, nil
	},
}

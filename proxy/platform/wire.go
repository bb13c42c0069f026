package platform

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// BidiNotSupported is the answer of the bidi route: 501, saying what to
// use.
var BidiNotSupported = core.Failure{Status: http.StatusNotImplemented, Reason: "UNIMPLEMENTED", Outcome: metrics.BadRequest,
	Message: "bidi streaming (api_mode bidi_stream) is not supported by the sidecar; " +
		"serve the method as unary (:query) or streaming (:streamQuery)"}

// MethodNotFound words the error as the managed server does, listing only
// the methods of the route that was called.
func MethodNotFound(cfg *config.Config, name string, stream bool) error {
	names := cfg.RouteMethods(stream)
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	msg := fmt.Sprintf("User-specified method `%s` not found. Available methods are: [%s]", name, strings.Join(quoted, ", "))
	if other := cfg.Lookup(name, !stream); other != nil && other.Name != "*" {
		if stream {
			msg += fmt.Sprintf(". `%s` is a unary method: call it with :query (%s)", name, core.RouteUnary)
		} else {
			msg += fmt.Sprintf(". `%s` is a streaming method: call it with :streamQuery (%s)", name, core.RouteStream)
		}
	}
	return &core.RequestError{Status: http.StatusBadRequest, Msg: msg}
}

// contentTypeJSON is every unary answer's Content-Type, one value shared
// by all (a header's values are replaced, never written into).
var contentTypeJSON = []string{"application/json"}

// WriteOutput answers a unary call: 200 with {"output": …}, flushed at
// once so the reply leaves before the call's log line and metrics. It
// returns the bytes written.
func (Door) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	body := make([]byte, 0, len(out)+12)
	body = append(body, `{"output":`...)
	body = append(body, out...)
	body = append(body, "}\n"...)
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	n, err := w.Write(body)
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	return n, err
}

// WriteError answers a call that failed before its first byte. The body
// stays {"detail": …}, the shape of the platform's reference servers: the
// platform shows it to the caller inside its own 400 FAILED_PRECONDITION.
func (Door) WriteError(w http.ResponseWriter, f core.Failure) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	b, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{f.Message})
	w.WriteHeader(f.Status)
	w.Write(append(b, '\n'))
}

// errorDomain is the ErrorInfo domain of every reason the sidecar sends.
const errorDomain = "sidecar"

// ErrorLine is a stream's final line for a failure after the first byte,
// in Google's error model (AIP-193), which the platform's clients parse:
//
//	{"error":{"code":504,"message":"…","status":"DEADLINE_EXCEEDED",
//	  "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TIMEOUT","domain":"sidecar"}]}}
func ErrorLine(f core.Failure) []byte { return append(errorJSON(f), '\n') }

// errorJSON is ErrorLine without its newline.
func errorJSON(f core.Failure) []byte {
	if f.AgentLine != nil {
		b := make([]byte, 0, len(f.AgentLine)+11)
		b = append(b, `{"error":`...)
		b = append(b, f.AgentLine...)
		return append(b, '}')
	}
	type errorInfo struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	}
	type status struct {
		Code    int         `json:"code"`
		Message string      `json:"message"`
		Status  string      `json:"status"`
		Details []errorInfo `json:"details"`
	}
	b, _ := json.Marshal(struct {
		Error status `json:"error"`
	}{status{f.Line.Code, f.Message, f.Line.Status, []errorInfo{{
		"type.googleapis.com/google.rpc.ErrorInfo", f.Reason, errorDomain}}}})
	return b
}

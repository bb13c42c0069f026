package a2a

import (
	"net/http"
	"strconv"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The HTTP+JSON binding's errors (rest.go): google.rpc.Status with an
// ErrorInfo, the A2A errors' statuses and reasons, the sidecar's refusals.

// a2aError is code's HTTP status (§5.4), google.rpc.Code name and, for
// an A2A error, its ErrorInfo reason (§11.6: the error's name in
// UPPER_SNAKE_CASE without "Error"); an internal error has no A2A
// reason.
func a2aError(code int) (status int, name, reason string) {
	switch code {
	case codeTaskNotFound:
		return http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND"
	case codeTaskNotCancel:
		return http.StatusBadRequest, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"
	case codePushUnsupported:
		return http.StatusBadRequest, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED"
	case codeUnsupported:
		return http.StatusBadRequest, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"
	case codeVersionUnsupport:
		return http.StatusBadRequest, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"
	case codeInvalidParams, codeInvalidRequest, codeParse:
		// No error of the specification's table, but the reason
		// @a2a-js/sdk gives its RequestMalformedError, which its
		// client reads back.
		return http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_PARAMS"
	}
	return http.StatusInternalServerError, "INTERNAL", ""
}

// errorDomain is the ErrorInfo domain of the A2A errors (§11.6); the
// sidecar's own refusals (busy, a body over the limit, …) carry their
// reason in the sidecar's domain, as every door's Google-shaped errors.
const (
	errorDomain   = "a2a-protocol.org"
	sidecarDomain = "sidecar"
)

// restError is an HTTP+JSON error answer: the error's status, and a
// google.rpc.Status with an ErrorInfo.
func restError(v version, code int, message string) *core.Answer {
	status, name, reason := a2aError(code)
	domain := errorDomain
	if reason == "" {
		reason, domain = name, sidecarDomain
	}
	body := restStatus(status, name, message, reason, domain)
	if v == p03 {
		body = legacyError(body, code, message)
	}
	return &core.Answer{Status: status, Outcome: metrics.BadRequest, Reason: reason,
		Header: http.Header{"Content-Type": {contentType(v, true)}},
		Body:   append(body, '\n')}
}

// restTooLarge is the HTTP+JSON answer to a message whose part is over
// limits.parts: 413, as a body over limits.request_bytes is, reason
// PART_TOO_LARGE in the sidecar's domain (0.3: with -32602 beside it).
func restTooLarge(v version, message string) *core.Answer {
	body := restStatus(http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT", message, "PART_TOO_LARGE", sidecarDomain)
	if v == p03 {
		body = legacyError(body, codeInvalidParams, message)
	}
	return &core.Answer{Status: http.StatusRequestEntityTooLarge, Outcome: metrics.BadRequest, Reason: "PART_TOO_LARGE",
		Header: http.Header{"Content-Type": {contentType(v, true)}},
		Body:   append(body, '\n')}
}

// legacyError is status, a google.rpc.Status, with 0.3's HTTP+JSON error
// beside its "error": the JSON-RPC code and the message at the top, as
// @a2a-js/sdk's 0.3 server writes them and its 0.3 client reads them (a
// typed TaskNotFoundError, …). A 1.0 client reads "error".
func legacyError(status []byte, code int, message string) []byte {
	b := make([]byte, 0, len(status)+len(message)+32)
	b = append(append(b, `{"code":`...), strconv.Itoa(code)...)
	b = appendString(append(b, `,"message":`...), message)
	return append(append(b, ','), status[1:]...)
}

// restStatus is a google.rpc.Status JSON (AIP-193) with one ErrorInfo:
//
//	{"error":{"code":404,"status":"NOT_FOUND","message":"…",
//	  "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}
func restStatus(code int, status, message, reason, domain string) []byte {
	type errorInfo struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	}
	type rpcStatus struct {
		Code    int         `json:"code"`
		Status  string      `json:"status"`
		Message string      `json:"message"`
		Details []errorInfo `json:"details"`
	}
	b, _ := marshal(struct {
		Error rpcStatus `json:"error"`
	}{rpcStatus{code, status, message, []errorInfo{{"type.googleapis.com/google.rpc.ErrorInfo", reason, domain}}}})
	return b
}

// writeRESTFailure writes a refusal of the sidecar's over HTTP+JSON: its
// own status (a bad input 400, a body over limits.request_bytes 413, busy,
// not ready and draining 503 with Retry-After, …) and reason, in the
// sidecar's domain; the status's google.rpc.Code name.
func writeRESTFailure(w http.ResponseWriter, f core.Failure) {
	status := f.Status
	if status == 0 || f.Outcome == metrics.AgentError || f.Outcome == metrics.Timeout || f.Outcome == metrics.AgentDisconnected {
		status = http.StatusInternalServerError
	}
	name := f.Line.Status
	if name == "" {
		name = statusName(status)
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(restStatus(status, name, f.Message, f.Reason, sidecarDomain), '\n'))
}

// statusName is the google.rpc.Code Google's APIs answer an HTTP status
// with, or the nearest one.
func statusName(status int) string {
	switch status {
	case 400, 405, 413, 415:
		return "INVALID_ARGUMENT"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 408, 504:
		return "DEADLINE_EXCEEDED"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	}
	if status >= 400 && status < 500 {
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"syscall"

	"github.com/sidecar-dev/sidecar/upstream"
)

// failure is how one error reaches the caller: a status and detail before
// the first byte, a code and message in a stream's final line after it.
type failure struct {
	status  int
	code    string
	message string
	// retryAfter, in seconds, is sent with 503s.
	retryAfter int
}

// errNotReady is a call that waited its bounded time for a booting agent.
var errNotReady = errors.New("agent is not ready yet")

// errClientGone is a call whose caller disconnected.
var errClientGone = errors.New("client disconnected")

// statusClientGone is logged (never sent) for a caller that left, as nginx
// and Caddy do.
const statusClientGone = 499

// failureOf is the one place that maps a failure to what the caller sees.
func failureOf(err error) failure {
	var (
		reqErr    *RequestError
		maxErr    *http.MaxBytesError
		inputErr  *upstream.InputError
		statusErr *upstream.StatusError
		dialErr   *upstream.DialError
		timeout   *upstream.TimeoutError
		agentErr  *upstream.AgentError
		replyErr  *upstream.ReplyError
	)
	switch {
	case errors.As(err, &reqErr):
		status := reqErr.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
		return failure{status: status, code: "bad_request", message: reqErr.Msg}
	case errors.As(err, &maxErr):
		return failure{status: http.StatusRequestEntityTooLarge, code: "request_too_large",
			message: "request body exceeds the limit of " + strconv.FormatInt(maxErr.Limit, 10) + " bytes"}
	case errors.As(err, &inputErr):
		return failure{status: http.StatusBadRequest, code: "bad_request", message: inputErr.Error()}
	case errors.As(err, &statusErr):
		status := statusErr.Status
		if status < 400 {
			status = http.StatusBadGateway // a redirect or 1xx is not an answer
		}
		return failure{status: status, code: "agent_status", message: statusErr.Detail}
	case errors.As(err, &dialErr):
		return failure{status: http.StatusBadGateway, code: "agent_unreachable", message: dialErr.Error()}
	case errors.As(err, &timeout):
		return failure{status: http.StatusGatewayTimeout, code: "timeout", message: timeout.Error()}
	case errors.As(err, &agentErr):
		code := agentErr.Code
		if code == "" {
			code = "agent_error"
		}
		return failure{status: http.StatusBadGateway, code: code, message: agentErr.Message}
	case errors.Is(err, upstream.ErrRecordTooLarge):
		return failure{status: http.StatusBadGateway, code: "record_too_large", message: err.Error()}
	case errors.Is(err, upstream.ErrReplyTooLarge):
		return failure{status: http.StatusBadGateway, code: "reply_too_large", message: err.Error()}
	case errors.As(err, &replyErr):
		return failure{status: http.StatusBadGateway, code: "bad_reply", message: replyErr.Msg}
	case errors.Is(err, ErrShuttingDown):
		return failure{status: http.StatusServiceUnavailable, code: "shutting_down", message: err.Error(), retryAfter: 1}
	case errors.Is(err, errBusy):
		return failure{status: http.StatusServiceUnavailable, code: "busy", message: err.Error(), retryAfter: 1}
	case errors.Is(err, errNotReady):
		return failure{status: http.StatusServiceUnavailable, code: "not_ready", message: err.Error(), retryAfter: 1}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return failure{status: http.StatusBadGateway, code: "agent_disconnected",
			message: "agent closed the connection before its reply was complete: " + err.Error()}
	case errors.Is(err, errClientGone), errors.Is(err, context.Canceled):
		return failure{status: statusClientGone, code: "client_gone", message: "client disconnected"}
	default:
		return failure{status: http.StatusBadGateway, code: "agent_failed", message: err.Error()}
	}
}

// writeError answers a call that failed before its first byte.
func writeError(w http.ResponseWriter, f failure) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if f.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(f.retryAfter))
	}
	b, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{f.message})
	w.WriteHeader(f.status)
	w.Write(append(b, '\n'))
}

// errorLine is a stream's final line for a failure after the first byte.
func errorLine(f failure) []byte {
	type body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		Error body `json:"error"`
	}{body{f.code, f.message}})
	return append(b, '\n')
}

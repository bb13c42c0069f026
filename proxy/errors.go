package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"syscall"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// failure is how one error reaches the caller: a status and detail before
// the first byte, a final line in Google's error model (AIP-193) after it.
type failure struct {
	// status is the HTTP status before the first byte (499, never sent,
	// when the caller left).
	status int
	// reason is the ErrorInfo reason: one of reasons, or an agent's own
	// code made a reason token.
	reason string
	// message is what the caller reads. For the sidecar's own failures it
	// never carries internals (socket paths, dial errors): those are in
	// the call's log line.
	message string
	// line is the code and status of the final line.
	line rpc
	// outcome and phase say who ended the call, for the log and metrics.
	outcome metrics.Outcome
	phase   string
	// retryAfter, in seconds, is sent with 503s.
	retryAfter int
	// agentLine is an agent's own error already in Google's shape: the
	// final line carries it unchanged.
	agentLine []byte
}

// rpc is a final line's code (an HTTP status) and status (the canonical
// google.rpc.Code name with that HTTP mapping).
type rpc struct {
	code   int
	status string
}

// reasons is the one table of the sidecar's own reasons: each one's status
// before the first byte, its code and status in a final line after it,
// and who it says ended the call. The README's Errors table is this table.
// A line's code is always one that Google's error model maps a status to,
// so 502s before the first byte are 503 UNAVAILABLE or 500 INTERNAL in it.
var reasons = map[string]struct {
	status  int // 0: the agent's own status
	line    rpc
	outcome metrics.Outcome
}{
	"BAD_REQUEST":        {http.StatusBadRequest, rpc{400, "INVALID_ARGUMENT"}, metrics.BadRequest},
	"REQUEST_TOO_LARGE":  {http.StatusRequestEntityTooLarge, rpc{400, "INVALID_ARGUMENT"}, metrics.BadRequest},
	"NOT_READY":          {http.StatusServiceUnavailable, rpc{503, "UNAVAILABLE"}, metrics.NotReady},
	"BUSY":               {http.StatusServiceUnavailable, rpc{503, "UNAVAILABLE"}, metrics.Busy},
	"SHUTTING_DOWN":      {http.StatusServiceUnavailable, rpc{503, "UNAVAILABLE"}, metrics.ShuttingDown},
	"AGENT_STATUS":       {0, rpc{}, metrics.AgentError}, // the line: rpcOfStatus of the agent's status
	"AGENT_UNREACHABLE":  {http.StatusBadGateway, rpc{503, "UNAVAILABLE"}, metrics.Timeout},
	"TIMEOUT":            {http.StatusGatewayTimeout, rpc{504, "DEADLINE_EXCEEDED"}, metrics.Timeout},
	"AGENT_DISCONNECTED": {http.StatusBadGateway, rpc{503, "UNAVAILABLE"}, metrics.AgentDisconnected},
	"AGENT_ERROR":        {http.StatusBadGateway, rpc{500, "INTERNAL"}, metrics.AgentError},
	"RECORD_TOO_LARGE":   {http.StatusBadGateway, rpc{500, "INTERNAL"}, metrics.AgentError},
	"REPLY_TOO_LARGE":    {http.StatusBadGateway, rpc{500, "INTERNAL"}, metrics.AgentError},
	"BAD_REPLY":          {http.StatusBadGateway, rpc{500, "INTERNAL"}, metrics.AgentError},
	"AGENT_FAILED":       {http.StatusBadGateway, rpc{500, "INTERNAL"}, metrics.AgentError},
	"CALLER_LEFT":        {statusClientGone, rpc{499, "CANCELLED"}, metrics.CallerLeft},
}

// rpcOfStatus is the line for a status that varies (a bad request's 501, an
// agent's 4xx/5xx): the google.rpc.Code Google's APIs answer that HTTP
// status with, or the nearest one.
func rpcOfStatus(status int) rpc {
	switch status {
	case 400:
		return rpc{400, "INVALID_ARGUMENT"}
	case 401:
		return rpc{401, "UNAUTHENTICATED"}
	case 403:
		return rpc{403, "PERMISSION_DENIED"}
	case 404:
		return rpc{404, "NOT_FOUND"}
	case 409:
		return rpc{409, "ABORTED"}
	case 429:
		return rpc{429, "RESOURCE_EXHAUSTED"}
	case 499:
		return rpc{499, "CANCELLED"}
	case 501:
		return rpc{501, "UNIMPLEMENTED"}
	case 502, 503:
		return rpc{503, "UNAVAILABLE"}
	case 504:
		return rpc{504, "DEADLINE_EXCEEDED"}
	}
	if status >= 400 && status < 500 {
		return rpc{400, "FAILED_PRECONDITION"}
	}
	return rpc{500, "INTERNAL"}
}

// sidecarFailure is a failure with one of the sidecar's own reasons.
func sidecarFailure(reason, message string) failure {
	r := reasons[reason]
	f := failure{status: r.status, reason: reason, message: message, line: r.line, outcome: r.outcome}
	if r.status == http.StatusServiceUnavailable {
		f.retryAfter = 1
	}
	return f
}

// withStatus is f with a status of its own before the first byte (a bad
// request's 501, the agent's 4xx), and the line Google's APIs answer it with.
func (f failure) withStatus(status int) failure {
	f.status, f.line = status, rpcOfStatus(status)
	return f
}

// errClientGone is a call whose caller disconnected.
var errClientGone = errors.New("client disconnected")

// statusClientGone is logged (never sent) for a caller that left, as nginx
// and Caddy do.
const statusClientGone = 499

// failureOf is the one place that maps a failure to what the caller sees.
// The sidecar's own failures get a message that names no internals; the
// agent's own messages (its error bodies, its in-band errors) pass on.
func failureOf(err error) failure {
	var (
		reqErr    *RequestError
		maxErr    *http.MaxBytesError
		inputErr  *core.InputError
		statusErr *core.StatusError
		dialErr   *core.DialError
		timeout   *core.TimeoutError
		agentErr  *core.AgentError
		replyErr  *core.ReplyError
	)
	switch {
	case errors.As(err, &reqErr):
		f := sidecarFailure("BAD_REQUEST", reqErr.Msg)
		if reqErr.Status != 0 {
			f = f.withStatus(reqErr.Status)
		}
		return f
	case errors.Is(err, core.ErrNoHandler):
		return sidecarFailure("BAD_REQUEST", core.ErrNoHandler.Error()).withStatus(http.StatusNotImplemented)
	case errors.As(err, &maxErr):
		return sidecarFailure("REQUEST_TOO_LARGE",
			"request body exceeds the limit of "+strconv.FormatInt(maxErr.Limit, 10)+" bytes")
	case errors.As(err, &inputErr):
		return sidecarFailure("BAD_REQUEST", inputErr.Error())
	case errors.As(err, &statusErr):
		status := statusErr.Status
		if status < 400 {
			status = http.StatusBadGateway // a redirect or 1xx is not an answer
		}
		return sidecarFailure("AGENT_STATUS", statusErr.Detail).withStatus(status)
	case errors.As(err, &dialErr):
		f := sidecarFailure("AGENT_UNREACHABLE", "agent unreachable: no connection could be made to it")
		f.phase = "connect"
		return f
	case errors.As(err, &timeout):
		f := sidecarFailure("TIMEOUT", timeout.Error())
		switch timeout.Phase {
		case "connect", "first_byte", "idle":
			f.phase = timeout.Phase
		default:
			f.phase = "total"
		}
		return f
	case errors.As(err, &agentErr):
		return agentFailure(agentErr)
	case errors.Is(err, core.ErrRecordTooLarge):
		return sidecarFailure("RECORD_TOO_LARGE", core.ErrRecordTooLarge.Error())
	case errors.Is(err, core.ErrReplyTooLarge):
		return sidecarFailure("REPLY_TOO_LARGE", core.ErrReplyTooLarge.Error())
	case errors.As(err, &replyErr):
		return sidecarFailure("BAD_REPLY", replyErr.Msg)
	case errors.Is(err, ErrShuttingDown):
		return sidecarFailure("SHUTTING_DOWN", ErrShuttingDown.Error())
	case errors.Is(err, core.ErrBusy):
		return sidecarFailure("BUSY", err.Error())
	case errors.Is(err, core.ErrNotReady):
		return sidecarFailure("NOT_READY", core.ErrNotReady.Error())
	case errors.Is(err, errClientGone):
		return sidecarFailure("CALLER_LEFT", "client disconnected")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return sidecarFailure("AGENT_DISCONNECTED", "agent closed the connection before its reply was complete")
	default:
		return sidecarFailure("AGENT_FAILED", "the call to the agent failed")
	}
}

// agentFailure is an error the agent reported in band. Before the first
// byte (unary) it is a 502 with the agent's message; in a final line it is
// the agent's own error if that is already in Google's shape, else 500
// INTERNAL with its message and, when it gave one, its code as the reason.
func agentFailure(e *core.AgentError) failure {
	f := sidecarFailure("AGENT_ERROR", e.Message)
	if e.Code != "" {
		f.reason = reasonToken(e.Code)
	}
	if isGoogleError(e.Raw) {
		f.agentLine = []byte(e.Raw)
	}
	return f
}

// explain gives err the cause a bare context.Canceled hides, so that no
// caller or log reads "context canceled" alone: the caller left, or the
// call's context was ended with a cause (ErrShuttingDown).
func explain(ctx, request context.Context, err error) error {
	if request.Err() != nil {
		if errors.Is(err, errClientGone) {
			return err
		}
		return fmt.Errorf("%w (%v)", errClientGone, err)
	}
	if errors.Is(err, context.Canceled) {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return fmt.Errorf("%w (%v)", cause, err)
		}
	}
	return err
}

// writeError answers a call that failed before its first byte. The body
// stays {"detail": …}, the shape of the platform's reference servers: the
// platform shows it to the caller inside its own 400 FAILED_PRECONDITION.
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

// errorDomain is the ErrorInfo domain of every reason the sidecar sends.
const errorDomain = "sidecar"

// errorLine is a stream's final line for a failure after the first byte,
// in Google's error model (AIP-193), which the platform's clients parse:
//
//	{"error":{"code":504,"message":"…","status":"DEADLINE_EXCEEDED",
//	  "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TIMEOUT","domain":"sidecar"}]}}
func errorLine(f failure) []byte {
	if f.agentLine != nil {
		b := make([]byte, 0, len(f.agentLine)+11)
		b = append(b, `{"error":`...)
		b = append(b, f.agentLine...)
		return append(b, "}\n"...)
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
	}{status{f.line.code, f.message, f.line.status, []errorInfo{{
		"type.googleapis.com/google.rpc.ErrorInfo", f.reason, errorDomain}}}})
	return append(b, '\n')
}

// rpcStatusNames are the canonical google.rpc.Code names other than OK.
var rpcStatusNames = map[string]bool{
	"CANCELLED": true, "UNKNOWN": true, "INVALID_ARGUMENT": true, "DEADLINE_EXCEEDED": true,
	"NOT_FOUND": true, "ALREADY_EXISTS": true, "PERMISSION_DENIED": true, "RESOURCE_EXHAUSTED": true,
	"FAILED_PRECONDITION": true, "ABORTED": true, "OUT_OF_RANGE": true, "UNIMPLEMENTED": true,
	"INTERNAL": true, "UNAVAILABLE": true, "DATA_LOSS": true, "UNAUTHENTICATED": true,
}

// isGoogleError reports whether the compact JSON object v is already an
// error in Google's shape: an integer code, a message, a canonical status
// name, optionally a details array, and nothing else.
func isGoogleError(v string) bool {
	if v == "" {
		return false
	}
	var e map[string]json.RawMessage
	if json.Unmarshal([]byte(v), &e) != nil {
		return false
	}
	var (
		code    int
		message string
		status  string
		details []json.RawMessage
	)
	for k, raw := range e {
		var err error
		switch k {
		case "code":
			err = json.Unmarshal(raw, &code)
		case "message":
			err = json.Unmarshal(raw, &message)
		case "status":
			err = json.Unmarshal(raw, &status)
		case "details":
			err = json.Unmarshal(raw, &details)
		default:
			return false
		}
		if err != nil || bytes.Equal(raw, []byte("null")) {
			return false
		}
	}
	_, hasCode := e["code"]
	_, hasMessage := e["message"]
	return hasCode && hasMessage && rpcStatusNames[status]
}

// maxReasonLen is AIP-193's limit on an ErrorInfo reason.
const maxReasonLen = 63

// reasonToken makes an agent's own error code an ErrorInfo reason, which
// AIP-193 limits to UPPER_SNAKE_CASE of at most 63 characters starting
// with a letter: "modelOverloaded" and "model-overloaded" become
// MODEL_OVERLOADED, 429 becomes AGENT_ERROR_429, and a code with nothing
// usable in it AGENT_ERROR.
func reasonToken(code string) string {
	b := make([]byte, 0, len(code)+1)
	var prev byte // the last byte of code taken, 0 at a word break
	for i := 0; i < len(code) && len(b) < maxReasonLen; i++ {
		c := code[i]
		switch {
		case 'a' <= c && c <= 'z':
			b, prev = append(b, c-'a'+'A'), c
		case 'A' <= c && c <= 'Z':
			if 'a' <= prev && prev <= 'z' || '0' <= prev && prev <= '9' {
				b = append(b, '_') // a camelCase word break
			}
			b, prev = append(b, c), c
		case '0' <= c && c <= '9':
			b, prev = append(b, c), c
		default:
			if len(b) > 0 && b[len(b)-1] != '_' {
				b = append(b, '_')
			}
			prev = 0
		}
	}
	reason := string(bytes.Trim(b, "_"))
	if len(reason) < 3 || reason[0] < 'A' || reason[0] > 'Z' {
		reason = "AGENT_ERROR_" + reason
	}
	if len(reason) > maxReasonLen {
		reason = reason[:maxReasonLen]
	}
	return string(bytes.TrimRight([]byte(reason), "_"))
}

// failed records on the call that f ended it, with err, the full text, for
// its log line.
func (c *call) failed(f failure, err error) failure {
	c.outcome, c.phase, c.reason, c.err = f.outcome, f.phase, f.reason, err
	return f
}

// callerLeft records a write to the caller that failed: the caller left.
func (c *call) callerLeft(err error) {
	c.failed(sidecarFailure("CALLER_LEFT", ""), fmt.Errorf("%w: writing the reply: %v", errClientGone, err))
}

// logReadiness logs why the agent is not ready, which /healthz does not
// say on the public port, once for each new reason.
func (s *Server) logReadiness(ok bool, detail string) {
	if ok {
		s.notReady.Store(nil)
		return
	}
	if old := s.notReady.Swap(&detail); old == nil || *old != detail {
		s.Logger.Info("agent not ready", zap.String("detail", detail))
	}
}

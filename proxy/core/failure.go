package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"syscall"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/metrics"
)

// RequestError is a request the sidecar rejects as the caller's fault; it
// is answered 400 (or Status, when set) with Msg as the detail.
type RequestError struct {
	Status int
	Msg    string
}

func (e *RequestError) Error() string { return e.Msg }

// NoRoute is the failure of a request for a path a front door does not
// serve: 404, saying what it serves ("POST /invocations and GET /ping").
// Every door answers it, in its own error shape.
func NoRoute(path, serves string) Failure {
	return Failure{Status: http.StatusNotFound, Reason: "NOT_FOUND", Outcome: metrics.BadRequest,
		Message: fmt.Sprintf("no route %q; the sidecar serves %s", Clip(path), serves)}
}

// NotAllowed is the failure of a request whose method path does not take:
// 405, saying which it takes. The door sends allow as the Allow header
// too. Every door answers it, in its own error shape.
func NotAllowed(method, path, allow string) Failure {
	return Failure{Status: http.StatusMethodNotAllowed, Reason: "METHOD_NOT_ALLOWED", Outcome: metrics.BadRequest,
		Message: fmt.Sprintf("method %q not allowed on %s; use %s", Clip(method), Clip(path), allow)}
}

// Failure is how one error reaches the caller: a status and detail before
// the first byte, a final line in Google's error model (AIP-193) after it.
type Failure struct {
	// Status is the HTTP status before the first byte (499, never sent,
	// when the caller left).
	Status int
	// Reason is the ErrorInfo reason: one of reasons, or an agent's own
	// code made a reason token.
	Reason string
	// Message is what the caller reads. For the sidecar's own failures it
	// never carries internals (socket paths, dial errors): those are in
	// the call's log line.
	Message string
	// Line is the code and status of the final line.
	Line RPC
	// Outcome and Phase say who ended the call, for the log and metrics.
	Outcome metrics.Outcome
	Phase   string
	// RetryAfter, in seconds, is sent with 503s.
	RetryAfter int
	// AgentLine is an agent's own error already in Google's shape: the
	// final line carries it unchanged.
	AgentLine []byte
}

// Error is f's message: a Failure is an error too, for a door's Refuse.
func (f Failure) Error() string { return f.Message }

// RPC is a final line's code (an HTTP status) and status (the canonical
// google.rpc.Code name with that HTTP mapping).
type RPC struct {
	Code   int
	Status string
}

// reasons is the one table of the sidecar's own reasons: each one's status
// before the first byte, its code and status in a final line after it,
// and who it says ended the call. docs/errors.md's reasons table is this table.
// A line's code is always one that Google's error model maps a status to,
// so 502s before the first byte are 503 UNAVAILABLE or 500 INTERNAL in it.
var reasons = map[string]struct {
	Status  int // 0: the agent's own status
	Line    RPC
	Outcome metrics.Outcome
}{
	"BAD_REQUEST":        {http.StatusBadRequest, RPC{400, "INVALID_ARGUMENT"}, metrics.BadRequest},
	"REQUEST_TOO_LARGE":  {http.StatusRequestEntityTooLarge, RPC{400, "INVALID_ARGUMENT"}, metrics.BadRequest},
	"NOT_READY":          {http.StatusServiceUnavailable, RPC{503, "UNAVAILABLE"}, metrics.NotReady},
	"BUSY":               {http.StatusServiceUnavailable, RPC{503, "UNAVAILABLE"}, metrics.Busy},
	"SHUTTING_DOWN":      {http.StatusServiceUnavailable, RPC{503, "UNAVAILABLE"}, metrics.ShuttingDown},
	"AGENT_STATUS":       {0, RPC{}, metrics.AgentError}, // the line: rpcOfStatus of the agent's status
	"AGENT_UNREACHABLE":  {http.StatusBadGateway, RPC{503, "UNAVAILABLE"}, metrics.Timeout},
	"TIMEOUT":            {http.StatusGatewayTimeout, RPC{504, "DEADLINE_EXCEEDED"}, metrics.Timeout},
	"AGENT_DISCONNECTED": {http.StatusBadGateway, RPC{503, "UNAVAILABLE"}, metrics.AgentDisconnected},
	"AGENT_ERROR":        {http.StatusBadGateway, RPC{500, "INTERNAL"}, metrics.AgentError},
	"RECORD_TOO_LARGE":   {http.StatusBadGateway, RPC{500, "INTERNAL"}, metrics.AgentError},
	"REPLY_TOO_LARGE":    {http.StatusBadGateway, RPC{500, "INTERNAL"}, metrics.AgentError},
	"QUESTION_TOO_LARGE": {http.StatusBadGateway, RPC{500, "INTERNAL"}, metrics.AgentError},
	"PART_TOO_LARGE":     {http.StatusBadGateway, RPC{500, "INTERNAL"}, metrics.AgentError},
	"BAD_REPLY":          {http.StatusBadGateway, RPC{500, "INTERNAL"}, metrics.AgentError},
	"DIALECT_MISMATCH":   {http.StatusBadGateway, RPC{500, "INTERNAL"}, metrics.AgentError},
	"AGENT_FAILED":       {http.StatusBadGateway, RPC{500, "INTERNAL"}, metrics.AgentError},
	"CALLER_LEFT":        {statusClientGone, RPC{499, "CANCELLED"}, metrics.CallerLeft},
	"UNAUTHENTICATED":    {http.StatusUnauthorized, RPC{401, "UNAUTHENTICATED"}, metrics.Unauthorized},
	"PERMISSION_DENIED":  {http.StatusForbidden, RPC{403, "PERMISSION_DENIED"}, metrics.Unauthorized},
	"AUTH_UNAVAILABLE":   {http.StatusServiceUnavailable, RPC{503, "UNAVAILABLE"}, metrics.NotReady},
	"RATE_LIMITED":       {http.StatusTooManyRequests, RPC{429, "RESOURCE_EXHAUSTED"}, metrics.RateLimited},
}

// rpcOfStatus is the line for a status that varies (a bad request's 501, an
// agent's 4xx/5xx): the google.rpc.Code Google's APIs answer that HTTP
// status with, or the nearest one.
func rpcOfStatus(status int) RPC {
	switch status {
	case 400:
		return RPC{400, "INVALID_ARGUMENT"}
	case 401:
		return RPC{401, "UNAUTHENTICATED"}
	case 403:
		return RPC{403, "PERMISSION_DENIED"}
	case 404:
		return RPC{404, "NOT_FOUND"}
	case 409:
		return RPC{409, "ABORTED"}
	case 429:
		return RPC{429, "RESOURCE_EXHAUSTED"}
	case 499:
		return RPC{499, "CANCELLED"}
	case 501:
		return RPC{501, "UNIMPLEMENTED"}
	case 502, 503:
		return RPC{503, "UNAVAILABLE"}
	case 504:
		return RPC{504, "DEADLINE_EXCEEDED"}
	}
	if status >= 400 && status < 500 {
		return RPC{400, "FAILED_PRECONDITION"}
	}
	return RPC{500, "INTERNAL"}
}

// ReasonFailure is the Failure of one of the sidecar's own reasons.
func ReasonFailure(reason, message string) Failure {
	r := reasons[reason]
	f := Failure{Status: r.Status, Reason: reason, Message: message, Line: r.Line, Outcome: r.Outcome}
	if r.Status == http.StatusServiceUnavailable {
		f.RetryAfter = 1
	}
	return f
}

// WithStatus is f with a status of its own before the first byte (a bad
// request's 501, the agent's 4xx), and the line Google's APIs answer it with.
func (f Failure) WithStatus(status int) Failure {
	f.Status, f.Line = status, rpcOfStatus(status)
	return f
}

// ErrClientGone is a call whose caller disconnected.
var ErrClientGone = errors.New("client disconnected")

// statusClientGone is logged (never sent) for a caller that left, as nginx
// and Caddy do.
const statusClientGone = 499

// FailureOf is the one place that maps a Failure to what the caller sees.
// The sidecar's own failures get a message that names no internals; the
// agent's own messages (its error bodies, its in-band errors) pass on.
func FailureOf(err error) Failure {
	var (
		reqErr     *RequestError
		maxErr     *http.MaxBytesError
		inputErr   *InputError
		statusErr  *StatusError
		dialErr    *DialError
		timeout    *TimeoutError
		agentErr   *AgentError
		replyErr   *ReplyError
		dialectErr *DialectError
		failure    Failure
	)
	switch {
	case errors.As(err, &failure): // already one (a door's or the Server's own refusal)
		return failure
	case errors.As(err, &reqErr):
		f := ReasonFailure("BAD_REQUEST", reqErr.Msg)
		if reqErr.Status != 0 {
			f = f.WithStatus(reqErr.Status)
		}
		return f
	case errors.Is(err, ErrNoHandler):
		return ReasonFailure("BAD_REQUEST", ErrNoHandler.Error()).WithStatus(http.StatusNotImplemented)
	case errors.As(err, &maxErr):
		return ReasonFailure("REQUEST_TOO_LARGE",
			"request body exceeds the limit of "+strconv.FormatInt(maxErr.Limit, 10)+" bytes")
	case errors.As(err, &inputErr):
		return ReasonFailure("BAD_REQUEST", inputErr.Error())
	case errors.As(err, &statusErr):
		status := statusErr.Status
		if status < 400 {
			status = http.StatusBadGateway // a redirect or 1xx is not an answer
		}
		return ReasonFailure("AGENT_STATUS", statusErr.Detail).WithStatus(status)
	case errors.As(err, &dialErr):
		f := ReasonFailure("AGENT_UNREACHABLE", "agent unreachable: no connection could be made to it")
		f.Phase = "connect"
		return f
	case errors.As(err, &timeout):
		f := ReasonFailure("TIMEOUT", timeout.Error())
		switch timeout.Phase {
		case "connect", "first_byte", "idle":
			f.Phase = timeout.Phase
		default:
			f.Phase = "total"
		}
		return f
	case errors.As(err, &agentErr):
		return agentFailure(agentErr)
	case errors.Is(err, ErrRecordTooLarge):
		return ReasonFailure("RECORD_TOO_LARGE", ErrRecordTooLarge.Error())
	case errors.Is(err, ErrQuestionTooLarge):
		return ReasonFailure("QUESTION_TOO_LARGE", ErrQuestionTooLarge.Error())
	case errors.Is(err, ErrPartTooLarge):
		return ReasonFailure("PART_TOO_LARGE", err.Error())
	case errors.Is(err, ErrReplyTooLarge):
		return ReasonFailure("REPLY_TOO_LARGE", ErrReplyTooLarge.Error())
	case errors.As(err, &replyErr):
		return ReasonFailure("BAD_REPLY", replyErr.Msg)
	case errors.As(err, &dialectErr):
		return ReasonFailure("DIALECT_MISMATCH", dialectErr.Error())
	case errors.Is(err, ErrShuttingDown):
		return ReasonFailure("SHUTTING_DOWN", ErrShuttingDown.Error())
	case errors.Is(err, ErrBusy):
		return ReasonFailure("BUSY", err.Error())
	case errors.Is(err, ErrNotReady):
		return ReasonFailure("NOT_READY", ErrNotReady.Error())
	case errors.Is(err, ErrClientGone):
		return ReasonFailure("CALLER_LEFT", "client disconnected")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return ReasonFailure("AGENT_DISCONNECTED", "agent closed the connection before its reply was complete")
	default:
		return ReasonFailure("AGENT_FAILED", "the call to the agent failed")
	}
}

// agentFailure is an error the agent reported in band. Before the first
// byte (unary) it is a 502 with the agent's message; in a final line it is
// the agent's own error if that is already in Google's shape, else 500
// INTERNAL with its message and, when it gave one, its code as the reason.
func agentFailure(e *AgentError) Failure {
	f := ReasonFailure("AGENT_ERROR", e.Message)
	if e.Code != "" {
		f.Reason = reasonToken(e.Code)
	}
	if isGoogleError(e.Raw) {
		f.AgentLine = []byte(e.Raw)
	}
	return f
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

// Clip shortens text the caller sent to what an error or a log line
// carries: at most clipBytes bytes (never splitting a UTF-8 character),
// then how long it was.
func Clip(s string) string {
	if len(s) <= clipBytes {
		return s
	}
	n := clipBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("…(%d bytes)", len(s))
}

// clipBytes is how much caller-supplied text errors and logs carry.
const clipBytes = 200

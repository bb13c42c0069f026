package core

import (
	"errors"
	"fmt"
)

// The errors a call can end with, one for each row of docs/errors.md's failure
// table that is not the caller's own request. Agents return them (wrapped
// or not); the serving side maps them to what the caller sees without
// knowing which Agent answered.

// InputError is a call whose input cannot fill the method's request: a
// path field that is missing or not a scalar. It is the caller's fault.
type InputError struct {
	Field string
	Msg   string
}

func (e *InputError) Error() string { return fmt.Sprintf("input.%s: %s", e.Field, e.Msg) }

// DialError is a call that never reached the agent: the connection was
// refused or could not be made, after every retry the deadline allowed.
type DialError struct {
	Address string
	Err     error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("agent unreachable at %s: %v", e.Address, e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }

// TimeoutError is a call that ran out of one of its clocks.
type TimeoutError struct {
	// Phase is "connect", "first_byte", "idle" or "total".
	Phase string
	// After is the limit that ran out.
	After string
}

func (e *TimeoutError) Error() string {
	switch e.Phase {
	case "first_byte":
		return fmt.Sprintf("agent sent no response within %s", e.After)
	case "idle":
		return fmt.Sprintf("agent sent nothing for %s", e.After)
	case "connect":
		return fmt.Sprintf("could not connect to the agent within %s", e.After)
	default:
		return fmt.Sprintf("call exceeded its total time limit of %s", e.After)
	}
}

// StatusError is an agent reply with a non-2xx status. Detail is the
// agent's own message, read from its body.
type StatusError struct {
	Status int
	Detail string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("agent answered %d: %s", e.Status, e.Detail)
}

// AgentError is an error the agent reported inside its reply.
type AgentError struct {
	// Code is the agent's own code when it gave one, else "".
	Code string
	// Message is the agent's text, or the raw record if it had none.
	Message string
	// Raw is the error as the agent sent it, compact JSON, when it was an
	// object (so an error already in Google's shape can pass on as it
	// is), else "".
	Raw string
}

func (e *AgentError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("agent error %s: %s", e.Code, e.Message)
	}
	return "agent error: " + e.Message
}

// DialectError is a reply the mapping stage read in a dialect it did not
// match: records came, and none of them mapped to anything (a forced
// dialect in front of another framework's stream).
type DialectError struct {
	// Dialect is the dialect the reply was read in.
	Dialect string
	// Records is how many records came.
	Records int
}

func (e *DialectError) Error() string {
	return fmt.Sprintf("the agent's reply did not match dialect %s: none of its %d records mapped to text, a tool call or an end", e.Dialect, e.Records)
}

// ReplyError is a unary reply the sidecar cannot turn into an output.
type ReplyError struct{ Msg string }

func (e *ReplyError) Error() string { return e.Msg }

var (
	// ErrRecordTooLarge ends a stream whose next record is larger than the
	// configured limit; the record is dropped rather than grown in memory.
	ErrRecordTooLarge = errors.New("agent record exceeds the record size limit")
	// ErrQuestionTooLarge is an agent's question (an input_required
	// record) larger than limits.questions.bytes.
	ErrQuestionTooLarge = errors.New("the agent's question exceeds limits.questions.bytes")
	// ErrPartTooLarge is a part of the agent's reply that is not text (an
	// image, audio, a file) larger than limits.parts.bytes, or past
	// limits.parts.total with the parts before it.
	ErrPartTooLarge = errors.New("the agent's part exceeds limits.parts")
	// ErrReplyTooLarge is a unary reply larger than the reply size limit.
	ErrReplyTooLarge = errors.New("agent reply exceeds the reply size limit")
	// ErrNoHandler is a method whose entry names a built-in handler on a
	// sidecar that was given none (see Mux).
	ErrNoHandler = errors.New("this method needs a built-in handler the sidecar was not given")
	// ErrNotReady is a call that waited its bounded time for a booting
	// agent.
	ErrNotReady = errors.New("agent is not ready yet")
	// ErrBusy is a call that found every concurrency slot taken and the
	// queue full, or waited its queue timeout.
	ErrBusy = errors.New("the sidecar is at its concurrency limit")
	// ErrShuttingDown ends the calls still in flight when the drain budget
	// after SIGTERM runs out.
	ErrShuttingDown = errors.New("the sidecar is shutting down")
)

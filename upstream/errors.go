package upstream

import (
	"errors"
	"fmt"
)

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

// ErrReplyTooLarge is a unary reply larger than the reply size limit.
var ErrReplyTooLarge = errors.New("agent reply exceeds the reply size limit")

// ReplyError is a unary reply the sidecar cannot turn into an output.
type ReplyError struct{ Msg string }

func (e *ReplyError) Error() string { return e.Msg }

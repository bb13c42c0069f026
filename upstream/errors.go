package upstream

import "github.com/sidecar-dev/sidecar/proxy/core"

// The client's failures are core's error taxonomy, so the serving side
// maps them without importing this package.
type (
	// DialError is a call that never reached the agent.
	DialError = core.DialError
	// TimeoutError is a call that ran out of one of its clocks.
	TimeoutError = core.TimeoutError
	// StatusError is an agent reply with a non-2xx status.
	StatusError = core.StatusError
	// ReplyError is a unary reply the sidecar cannot turn into an output.
	ReplyError = core.ReplyError
	// AgentError is an error the agent reported inside its reply.
	AgentError = core.AgentError
	// InputError is a call whose input cannot fill the method's request.
	InputError = core.InputError
)

var (
	// ErrReplyTooLarge is a unary reply larger than the reply size limit.
	ErrReplyTooLarge = core.ErrReplyTooLarge
	// ErrRecordTooLarge ends a stream whose next record is larger than
	// the configured limit.
	ErrRecordTooLarge = core.ErrRecordTooLarge
)

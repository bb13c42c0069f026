package state

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Reason is the log line's reason of a call the store failed.
const Reason = "state_store_unavailable"

// Message is what a caller is told when the store failed its call: the
// server's address and the error stay in the log line, not in answers.
const Message = "the sidecar's state store (Redis) did not answer in time; nothing was changed: try again shortly"

// Error is a round trip to the store that failed: the server unreachable,
// slower than the bounds, or refusing the command. A door answers it in
// its protocol's shape with 503 (Message) and logs it (Error()).
type Error struct {
	// Op says what the round trip was for, e.g. "reading task t1".
	Op string
	// Host is the server's host:port.
	Host string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("state store: %s: redis at %s: %v", e.Op, e.Host, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Fail is err of the round trip op as an *Error; nil stays nil, and
// redis.Nil (no such key: an answer, not a failure) is returned as it is.
func (r *Redis) Fail(op string, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	return &Error{Op: op, Host: r.host, Err: err}
}

// IsError reports whether err is a failure of the store (*Error).
func IsError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

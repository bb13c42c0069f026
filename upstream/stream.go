package upstream

import (
	"errors"
	"fmt"
)

// Stream yields the records of an agent's streamed reply, each one compact
// JSON value with no newline in it, in the order the agent sent them.
//
//	for s.Next() {
//		use(s.Record())
//	}
//	if err := s.Err(); err != nil { … }
//
// Err is nil when the reply ended cleanly. An error the agent reported in
// band (SSE "event: error", a record that is exactly {"error": …}) is an
// *AgentError; a record over the size limit is ErrRecordTooLarge; anything
// else is the read error that ended the reply.
type Stream interface {
	// Next advances to the next record; false at the end or on error.
	Next() bool
	// Record is the current record. It stays valid only until the next
	// call to Next.
	Record() []byte
	// Err is the reason the stream ended, nil for a clean end.
	Err() error
}

// ErrRecordTooLarge ends a stream whose next record is larger than the
// configured limit; the record is dropped rather than grown in memory.
var ErrRecordTooLarge = errors.New("agent record exceeds the record size limit")

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

package upstream

// Stream yields the records of an agent's streamed reply, each one compact
// JSON value with no newline in it, in the order the agent sent them: what
// the deframers produce, before a Response gives them a Close
// (ReplyStream, a core.Records).
//
//	for s.Next() {
//		use(s.Record())
//	}
//	if err := s.Err(); err != nil { … }
//
// Err is nil when the reply ended cleanly. An error the agent reported in
// band (SSE "event: error", a record that is exactly {"error": …}) is an
// *core.AgentError; a record over the size limit is core.ErrRecordTooLarge; anything
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

// EventStream is a Stream whose records carry an SSE event type: the
// event-stream deframer's.
type EventStream interface {
	Stream
	// Event is the current record's event type, "" when it had none; cut
	// to 64 bytes. It stays valid only until the next call to Next.
	Event() []byte
}

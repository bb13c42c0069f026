package core

// Control reports whether the current record of r is a control record,
// one that carries no text into an answer on the doors that turn records
// into text (OpenAI, MCP, A2A): a record that came as an SSE event whose
// type is not "message" and that no dialect mapped (a Node server's
// closing "event: done" with data {"done":true}, a progress or heartbeat
// event). An EventSource's onmessage never sees such an event: it goes
// only to listeners of its name, which no door is. The contract passes it
// on, as every record. r tells the event type when it has an Event
// method (upstream's records, and the mapping stage's while it passes a
// stream through; a line the stage wrote has none).
func Control(r Records) bool {
	e, ok := r.(interface{ Event() []byte })
	if !ok {
		return false
	}
	event := e.Event()
	return len(event) > 0 && string(event) != "message"
}

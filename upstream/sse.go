package upstream

import (
	"bytes"
	"io"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// sseStream parses a text/event-stream as the WHATWG HTML standard says
// (§9.2.6, "Interpreting an event stream") with a state machine fed
// whatever each read brings, so that a line, a CRLF or a field name split
// across reads parses the same as in one read. Only the "data" and "event"
// fields matter here; comments, "id", "retry" and unknown fields are
// skipped as they stream by, never buffered, whatever their length.
//
// Each dispatched event becomes one record: its data when that is JSON,
// {"output": data} when it is not. "data: [DONE]" ends the stream cleanly;
// "event: error", or data that is an {"error": …} object (even one that
// string interpolation made invalid JSON, lesson 15 in DESIGN.md), ends it
// with a *core.AgentError.
type sseStream struct {
	frame
	eof bool // the reply ended; the stream ends after the pending event

	// crEnded is set when the last line ended with a CR as the last byte
	// of a read: an LF at the start of the next one belongs to it.
	crEnded bool

	state   int                // where the current line is: lineName, …
	name    [len("retry")]byte // the field name read so far
	nameLen int
	field   int // the current line's field: fieldData, …

	data    []byte // the event's data lines, joined with "\n"
	hasData bool   // a data line was seen, even an empty one
	event   [maxEventName]byte
	// eventLen is the event type's length, saturated one past len(event):
	// "error" ends the stream, and the mapping stage reads the rest
	// (Event), up to maxEventName bytes.
	eventLen int

	// cur is the event type of the current record, for Event.
	cur    [maxEventName]byte
	curLen int
}

// maxEventName is as much of an event type as is kept: the longest a
// dialect names (OpenAI's response.function_call_arguments.delta and
// kin) with room to spare. A longer one is kept cut to this length.
const maxEventName = 64

// Event is the SSE event type of the current record ("" for none), cut to
// maxEventName bytes. It stays valid only until the next call to Next.
func (s *sseStream) Event() []byte { return s.cur[:min(s.curLen, maxEventName)] }

// eventStream is a deframer whose records carry an SSE event type: the
// event-stream deframer (the mapping stage reads it as dialect.EventType).
type eventStream interface {
	core.Records
	Event() []byte
}

// Where the current line is.
const (
	lineName  = iota // reading the field name, up to a colon
	lineSpace        // just past the colon: one space may follow
	lineValue        // reading the value
	lineSkip         // a comment or a field that does not matter
)

// The fields that matter.
const (
	fieldOther = iota
	fieldData
	fieldEvent
)

func (s *sseStream) Next() bool {
	if !s.begin() {
		return false
	}
	for !s.eof {
		if s.br.Buffered() == 0 {
			if _, err := s.br.Peek(1); err != nil {
				if err != io.EOF {
					return s.stop(readFailure(err)) // the pending event is torn: drop it
				}
				s.eof = true
				break
			}
		}
		buf, _ := s.br.Peek(s.br.Buffered())
		n, dispatch, err := s.scan(buf)
		s.br.Discard(n)
		if err != nil {
			return s.stop(err)
		}
		if dispatch {
			return s.dispatch()
		}
	}
	// At the end of the reply an event whose blank line never came is
	// still dispatched when its lines all ended and the reply ended cleanly
	// (the standard drops it; losing the agent's last words helps no one).
	// A data or event line cut short, or a pending event when only a close
	// ended the reply (it may have fallen between two data lines), is a
	// cut record: dropped, and the stream fails.
	if s.cutField() || s.hasData && s.closeEnd {
		return s.stop(errCutRecord)
	}
	if s.hasData {
		return s.dispatch()
	}
	return s.stop(nil)
}

// cutField reports whether the reply ended inside a line that is, or may
// still have become, a data or event field. A comment or another field
// cut short loses nothing.
func (s *sseStream) cutField() bool {
	switch s.state {
	case lineSpace, lineValue: // only data and event fields get here
		return true
	case lineName:
		name := s.name[:s.nameLen]
		return len(name) > 0 && (bytes.HasPrefix([]byte("data"), name) || bytes.HasPrefix([]byte("event"), name))
	}
	return false
}

// scan feeds buf to the parser up to and including the first blank line
// that dispatches an event. It returns the bytes consumed and whether an
// event is ready.
func (s *sseStream) scan(buf []byte) (n int, dispatch bool, err error) {
	if s.crEnded && len(buf) > 0 {
		s.crEnded = false
		if buf[0] == '\n' {
			n = 1
		}
	}
	for n < len(buf) {
		rest := buf[n:]
		eol := indexEOL(rest)
		if eol < 0 {
			return len(buf), false, s.feed(rest)
		}
		if err := s.feed(rest[:eol]); err != nil {
			return n, false, err
		}
		n += eol + 1
		if rest[eol] == '\r' {
			if eol+1 == len(rest) {
				s.crEnded = true
			} else if rest[eol+1] == '\n' {
				n++
			}
		}
		if s.state == lineName && s.nameLen == 0 {
			if s.hasData {
				return n, true, nil
			}
			s.eventLen = 0 // an event without data is not dispatched
			continue
		}
		if err := s.endLine(); err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}

// indexEOL is the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	if lf >= 0 {
		b = b[:lf]
	}
	if cr := bytes.IndexByte(b, '\r'); cr >= 0 {
		return cr
	}
	return lf
}

// feed parses a piece of the current line, which holds no line end.
func (s *sseStream) feed(b []byte) error {
	for len(b) > 0 {
		switch s.state {
		case lineName:
			colon := bytes.IndexByte(b, ':')
			name := b
			if colon >= 0 {
				name = b[:colon]
			}
			if s.nameLen+len(name) > len(s.name) {
				s.state = lineSkip // longer than any field that matters
				return nil
			}
			s.nameLen += copy(s.name[s.nameLen:], name)
			if colon < 0 {
				return nil
			}
			if err := s.startField(); err != nil {
				return err
			}
			b = b[colon+1:]
		case lineSpace:
			if b[0] == ' ' {
				b = b[1:] // exactly one space after the colon is not part of the value
			}
			s.state = lineValue
		case lineValue:
			if s.field == fieldData {
				if len(s.data)+len(b) > s.max {
					return core.ErrRecordTooLarge
				}
				s.data = appendGrow(s.data, s.max, b...)
			} else if s.eventLen <= len(s.event) {
				copy(s.event[min(s.eventLen, len(s.event)):], b)
				s.eventLen = min(s.eventLen+len(b), len(s.event)+1)
			}
			return nil
		case lineSkip:
			return nil
		}
	}
	return nil
}

// startField begins the value of the field whose name was just read.
func (s *sseStream) startField() error {
	switch string(s.name[:s.nameLen]) {
	case "data":
		s.field = fieldData
		if s.hasData {
			if len(s.data) >= s.max {
				return core.ErrRecordTooLarge
			}
			s.data = appendGrow(s.data, s.max, '\n')
		}
		s.hasData = true
	case "event":
		s.field = fieldEvent
		s.eventLen = 0
	default: // comments (an empty name), "id", "retry", unknown fields
		s.field = fieldOther
		s.state = lineSkip
		return nil
	}
	s.state = lineSpace
	return nil
}

// endLine finishes a line that was not blank.
func (s *sseStream) endLine() error {
	var err error
	if s.state == lineName {
		// A line without a colon is a field with an empty value.
		err = s.startField()
	}
	s.state = lineName
	s.nameLen = 0
	return err
}

// dispatch turns the pending event into the current record, or ends the
// stream, and resets the event.
func (s *sseStream) dispatch() bool {
	data := s.data
	isError := s.eventLen == len("error") && string(s.event[:len("error")]) == "error"
	if s.curLen = s.eventLen; s.curLen > 0 {
		s.cur = s.event
	}
	s.data, s.hasData, s.eventLen = s.data[:0], false, 0
	if isError {
		return s.stop(eventError(data))
	}
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		return s.stop(nil) // OpenAI's end marker: stop reading
	}
	// The event's data buffer may become the record's.
	if s.takeJSON(&s.data, data) {
		return s.yield()
	}
	if interpolatedError(data) {
		return s.stop(textError(data))
	}
	s.setOutput(data)
	return s.yield()
}

// eventError is the error an "event: error" carries in its data: a JSON
// value (an {"error": x} object stands for x), or plain text.
func eventError(data []byte) *core.AgentError {
	var f frame
	if !f.setJSON(data) {
		return textError(data)
	}
	v := f.rec.Bytes()
	if inner, ok := errorValue(v); ok {
		v = inner
	}
	return agentErrorOf(v)
}

// interpolatedError reports whether data that is not valid JSON is still
// meant as an {"error": …} object: ADK's Python /run_sse builds its error
// events with an f-string, so a quote in the message breaks the JSON.
func interpolatedError(data []byte) bool {
	b := bytes.TrimSpace(data)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimSpace(b[1:]), []byte(`"error"`))
}

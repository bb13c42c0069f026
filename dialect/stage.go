package dialect

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Agent is the mapping stage as a core.Agent around another: a call whose
// method emits text or ADK events gets its agent's reply mapped; any
// other call is the inner Agent's, untouched.
type Agent struct {
	// Agent answers the calls.
	Agent core.Agent
	// Author is the author of the ADK events emitted (emit adk).
	// Default: "agent".
	Author string
	// SnakeKeys writes ADK events with snake_case keys (adk.keys: snake).
	SnakeKeys bool
	// MaxReply caps what a unary method with emit text or adk reads from
	// its agent's stream, as limits.reply_bytes caps a unary reply: more
	// is core.ErrReplyTooLarge. 0: no cap.
	MaxReply int64
}

// Stream answers c with the inner Agent's records, mapped as c's method
// says.
func (a Agent) Stream(ctx context.Context, c core.Call) (core.Records, error) {
	r, err := a.Agent.Stream(ctx, c)
	if err != nil || c.Method.Emitting() == config.EmitRaw {
		return r, err
	}
	return a.Map(c, r), nil
}

// Unary answers c. With emit text or adk the agent's reply is read as a
// stream and mapped, and the output is the whole of it (Collect).
func (a Agent) Unary(ctx context.Context, c core.Call) (json.RawMessage, error) {
	if c.Method.Emitting() == config.EmitRaw || c.Method.Handler != "" {
		return a.Agent.Unary(ctx, c)
	}
	r, err := a.Agent.Stream(ctx, c)
	if err != nil {
		return nil, err
	}
	m := a.Map(c, r)
	defer m.Close()
	m.max = a.MaxReply
	return m.Collect()
}

// Map wraps r, the records of call c, in the mapping stage.
func (a Agent) Map(c core.Call, r core.Records) *Records {
	author := a.Author
	if author == "" {
		author = "agent"
	}
	var e emitter
	switch c.Method.Emitting() {
	case config.EmitADK:
		e = newADKEmitter(author, a.SnakeKeys)
	default:
		e = &textEmitter{}
	}
	return &Records{in: r, dialect: c.Method.Speaking(), emit: e, notes: c.Notes}
}

// Header is implemented by records that carry the agent's response
// header (upstream.ReplyStream).
type Header interface{ Header() http.Header }

// EventType is implemented by records that carry an SSE event type
// (upstream.ReplyStream): valid until the next Next.
type EventType interface{ Event() []byte }

// Records is a stream of records mapped from a dialect to the emitted
// lines. A stream whose dialect is raw, or that auto-detection cannot
// place, passes through unchanged.
type Records struct {
	in      core.Records
	dialect config.Dialect
	notes   *core.Notes
	m       Mapper
	emit    emitter
	placed  bool // the dialect is known (m set) or the stream passes through
	pass    bool

	events []Event
	tools  map[string]string // tool names by call id, for results without one
	lines  [][]byte          // lines ready, the first is current once taken
	cur    []byte
	done   bool
	err    error
	max    int64 // Collect's cap on the lines' bytes, 0 for none
}

// Next advances to the next line.
func (r *Records) Next() bool {
	for {
		if len(r.lines) > 0 {
			r.cur, r.lines = r.lines[0], r.lines[1:]
			return true
		}
		if r.done {
			r.cur = nil
			return false
		}
		if !r.in.Next() {
			r.done = true
			if !r.placed && r.dialect != config.DialectAuto {
				r.place(nil)
			}
			if r.err = r.in.Err(); r.err == nil && r.m != nil {
				r.apply(r.m.Flush(r.events[:0]))
				r.lines = r.emit.close(r.lines)
			}
			continue
		}
		rec := r.in.Record()
		if !r.placed {
			r.place(rec)
		}
		if r.pass {
			r.cur = rec
			return true
		}
		var event string
		if e, ok := r.in.(EventType); ok {
			event = string(e.Event())
		}
		r.apply(r.m.Map(r.events[:0], event, rec))
	}
}

// place picks the mapper from the method's dialect, or detects it from the
// reply's header and its first record; it notes the dialect on the call.
func (r *Records) place(rec []byte) {
	r.placed = true
	d := r.dialect
	if d == config.DialectAuto {
		var h http.Header
		if hr, ok := r.in.(Header); ok {
			h = hr.Header()
		}
		var event []byte
		if e, ok := r.in.(EventType); ok {
			event = e.Event()
		}
		d = Detect(h, event, rec)
	}
	r.m = NewMapper(d)
	r.pass = r.m == nil
	if r.notes != nil {
		if r.pass {
			r.notes.Dialect = string(config.DialectRaw)
		} else {
			r.notes.Dialect = string(d)
		}
	}
}

// apply turns events into lines; an error ends the stream.
func (r *Records) apply(events []Event) {
	r.events = events
	for _, e := range events {
		switch {
		case e.Kind == Error:
			r.done = true
			r.err = &core.AgentError{Code: e.Code, Message: e.Text, Raw: string(e.JSON)}
			return
		case e.Kind == ToolCall && e.ID != "":
			if r.tools == nil {
				r.tools = map[string]string{}
			}
			r.tools[e.ID] = e.Name
		case e.Kind == ToolResult && e.Name == "":
			e.Name = r.tools[e.ID]
		}
		r.lines = r.emit.line(r.lines, e)
	}
}

// Record is the current line.
func (r *Records) Record() []byte { return r.cur }

// Err is the inner records' error, or the agent's error in its dialect.
func (r *Records) Err() error { return r.err }

// Close closes the inner records.
func (r *Records) Close() { r.in.Close() }

// BeforeWait passes the inner records' Waiter on.
func (r *Records) BeforeWait(f func()) {
	if w, ok := r.in.(core.Waiter); ok {
		w.BeforeWait(f)
	}
}

// Collect reads the whole stream into one output (the emitter's whole
// form: see the README's Dialects section). A stream that passes through
// is the array of its records, as a unary reply in SSE or ndjson is.
func (r *Records) Collect() (json.RawMessage, error) {
	var lines [][]byte
	var n int64
	for r.Next() {
		if n += int64(len(r.cur)); r.max > 0 && n > r.max {
			return nil, core.ErrReplyTooLarge
		}
		lines = append(lines, append([]byte(nil), r.cur...))
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.pass || r.m == nil {
		return joinArray(lines), nil
	}
	return r.emit.whole(), nil
}

func joinArray(lines [][]byte) json.RawMessage {
	b := []byte{'['}
	for i, l := range lines {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l...)
	}
	return append(b, ']')
}

var (
	_ core.Agent   = Agent{}
	_ core.Records = (*Records)(nil)
	_ core.Waiter  = (*Records)(nil)
)

package dialect

import (
	"encoding/json"
	"strings"
)

// a2aMapper reads A2A streaming responses (PROTOCOLS.md §1.3, §2.8), both
// 0.3's JSON-RPC results told apart by "kind" and 1.0's StreamResponse
// wrappers ({"statusUpdate": …}), in a JSON-RPC envelope or bare (the
// REST binding): text from artifact-update parts, from a message and from
// the agent's status message at completed or input-required (a status
// message while working is progress: reasoning), the end at a terminal state or final:true, an error
// from a failed or rejected task or a JSON-RPC error.
type a2aMapper struct{}

type a2aPart struct {
	Kind string          `json:"kind"`
	Text *string         `json:"text"`
	Data json.RawMessage `json:"data"`
}

type a2aMessage struct {
	Role  string    `json:"role"`
	Parts []a2aPart `json:"parts"`
}

type a2aStatus struct {
	State   string      `json:"state"`
	Message *a2aMessage `json:"message"`
}

type a2aResult struct {
	Kind     string     `json:"kind"`
	Final    bool       `json:"final"`
	Status   *a2aStatus `json:"status"`
	Artifact *struct {
		Parts []a2aPart `json:"parts"`
	} `json:"artifact"`
	Artifacts []struct {
		Parts []a2aPart `json:"parts"`
	} `json:"artifacts"`
	Role  string    `json:"role"`
	Parts []a2aPart `json:"parts"`

	// A2A 1.0's StreamResponse: one of these.
	Task           *a2aResult `json:"task"`
	Message        *a2aResult `json:"message"`
	StatusUpdate   *a2aResult `json:"statusUpdate"`
	ArtifactUpdate *a2aResult `json:"artifactUpdate"`
}

func (m a2aMapper) Map(out []Event, event string, rec []byte) []Event {
	if out, ok := a2aFast(out, rec); ok {
		return out
	}
	return m.slow(out, event, rec)
}

// a2aFast maps an artifact update (0.3's kind artifact-update, 1.0's
// artifactUpdate), the chunks of an answer, read in place (scan): the text
// of its artifact's parts. It reports false for any other record, or one
// it cannot read as encoding/json would decode it.
func a2aFast(out []Event, rec []byte) ([]Event, bool) {
	n := len(out)
	var s scan
	var seen uint32
	result := false // the record has a result
	ok := s.top(rec, func(k []byte) {
		switch string(k) {
		case "result":
			s.once(&seen, 1)
			if s.null() {
				return
			}
			result = true
			out = a2aFastResult(&s, out, true)
		case "error":
			s.once(&seen, 2)
			s.bad = s.bad || !s.null()
		default:
			s.other(k, "result", "error")
		}
	})
	if ok && !result {
		// REST: the record is the result itself.
		s = scan{b: rec}
		out = a2aFastResult(&s, out, true)
		s.space()
		ok = !s.bad && s.i == len(s.b)
	}
	if !ok {
		return out[:n], false
	}
	return out, true
}

// a2aFastResult reads the a2aResult at the cursor: an artifact update, or
// (outer) the StreamResponse that wraps one, appending its artifact's
// text.
func a2aFastResult(s *scan, out []Event, outer bool) []Event {
	var kind string
	var final bool
	var seen uint32
	artifact, update := false, false
	s.object(func(k []byte) {
		switch string(k) {
		case "kind":
			s.once(&seen, 1)
			s.name(&kind, "artifact-update")
		case "final":
			s.once(&seen, 2)
			s.boolean(&final)
		case "artifact":
			s.once(&seen, 4)
			if !s.null() {
				artifact = true
				out = a2aFastArtifact(s, out)
			}
		case "artifactUpdate":
			s.once(&seen, 8)
			if !outer {
				s.bad = s.bad || !s.null()
				return
			}
			if !s.null() {
				update = true
				out = a2aFastResult(s, out, false)
			}
		case "status", "artifacts", "role", "parts", "task", "message", "statusUpdate":
			s.bad = s.bad || !s.null()
		default:
			s.other(k, "kind", "final", "status", "artifact", "artifacts", "role", "parts",
				"task", "message", "statusUpdate", "artifactUpdate")
		}
	})
	switch {
	case artifact && update: // the wrapper's alone would count
		s.bad = true
	case outer && !update && kind != "artifact-update":
		s.bad = true
	}
	return out
}

// a2aFastArtifact reads an artifact's parts at the cursor, appending the
// text of each.
func a2aFastArtifact(s *scan, out []Event) []Event {
	var seen uint32
	s.object(func(k []byte) {
		switch string(k) {
		case "parts":
			s.once(&seen, 1)
			s.array(func(int) {
				var text string
				var hasText bool
				var partSeen uint32
				s.object(func(k []byte) {
					switch string(k) {
					case "kind":
						s.once(&partSeen, 1)
						s.check()
					case "text":
						s.once(&partSeen, 2)
						hasText = !s.null()
						if hasText {
							s.str(&text)
						}
					default: // data: json.RawMessage
						s.other(k, "kind", "text", "data")
					}
				})
				if hasText && text != "" {
					out = append(out, Event{Kind: Text, Text: text})
				}
			})
		default:
			s.other(k, "parts")
		}
	})
	return out
}

// slow maps a record decoded by encoding/json: every record as Map maps
// its own.
func (a2aMapper) slow(out []Event, _ string, rec []byte) []Event {
	var env struct {
		Result *a2aResult      `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(rec, &env) != nil {
		return out
	}
	if compact(env.Error) != nil {
		return append(out, errorEvent(env.Error))
	}
	r := env.Result
	if r == nil {
		if json.Unmarshal(rec, &r) != nil || r == nil {
			return out // r nil: the record is null
		}
	}
	switch {
	case r.Task != nil:
		return a2aTask(out, r.Task, false)
	case r.Message != nil:
		return a2aText(out, r.Message.Parts)
	case r.StatusUpdate != nil:
		return a2aTask(out, r.StatusUpdate, false)
	case r.ArtifactUpdate != nil:
		return a2aTask(out, r.ArtifactUpdate, false)
	}
	switch r.Kind {
	case "message":
		return a2aText(out, r.Parts)
	case "task", "status-update", "artifact-update":
		return a2aTask(out, r, r.Final)
	}
	return out
}

// a2aTask maps a task, a status update or an artifact update.
func a2aTask(out []Event, r *a2aResult, final bool) []Event {
	if r.Artifact != nil {
		out = a2aText(out, r.Artifact.Parts)
	}
	for _, a := range r.Artifacts {
		out = a2aText(out, a.Parts)
	}
	if r.Status == nil {
		return out
	}
	state := strings.ToLower(strings.TrimPrefix(r.Status.State, "TASK_STATE_"))
	state = strings.ReplaceAll(state, "_", "-")
	var msg string
	if m := r.Status.Message; m != nil {
		for _, p := range m.Parts {
			if p.Text != nil {
				msg += *p.Text
			}
		}
	}
	switch state {
	case "failed", "rejected":
		if msg == "" {
			msg = "task " + state
		}
		return append(out, Event{Kind: Error, Text: msg, Code: state})
	case "canceled", "cancelled":
		return append(out, Event{Kind: Error, Text: "task canceled", Code: "CANCELLED"})
	}
	answered := state == "completed" || state == "input-required" || state == "auth-required"
	if m := r.Status.Message; m != nil && !strings.EqualFold(strings.TrimPrefix(m.Role, "ROLE_"), "user") {
		if answered {
			out = a2aText(out, m.Parts)
		} else {
			out = a2aProgress(out, m.Parts)
		}
	}
	if answered {
		return append(out, Event{Kind: End, Finish: state})
	}
	if final {
		return append(out, Event{Kind: End, Finish: state})
	}
	return out
}

func a2aText(out []Event, parts []a2aPart) []Event {
	for _, p := range parts {
		if p.Text != nil && *p.Text != "" {
			out = append(out, Event{Kind: Text, Text: *p.Text})
		}
	}
	return out
}

// a2aProgress maps the text of a status message sent while the task is
// still working (@a2a-js/sdk agents and ADK's A2A executor report progress
// there, and the answer in artifacts) as reasoning, kept apart from the
// answer.
func a2aProgress(out []Event, parts []a2aPart) []Event {
	for _, p := range parts {
		if p.Text != nil && *p.Text != "" {
			out = append(out, Event{Kind: Reasoning, Text: *p.Text})
		}
	}
	return out
}

func (a2aMapper) Flush(out []Event) []Event { return out }

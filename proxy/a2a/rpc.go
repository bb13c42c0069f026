package a2a

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/internal/jsonrpc"
	gpart "github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// maxID is the longest taskId, contextId, messageId or JSON-RPC id the door
// takes, in bytes: each is kept with its task and repeated in every event
// of its stream.
const maxID = 256

// request is one JSON-RPC 2.0 request.
type request struct {
	id     json.RawMessage // as sent; nil when the request has none
	notify bool            // no id member: a notification, which gets no response
	method string
	params json.RawMessage // nil when absent
}

// readRequest reads body as one JSON-RPC 2.0 request (package jsonrpc's
// rules; an id may be null, as JSON-RPC allows).
func readRequest(body []byte) (request, *rpcError) {
	r, err := jsonrpc.Read(body, jsonrpc.Rules{MaxID: maxID, NullID: true})
	if err != nil {
		return request{}, &rpcError{err.Code, err.Message}
	}
	return request{id: r.ID, notify: r.Notification(), method: r.Method, params: r.Params}, nil
}

// readTaskID reads params {"id": "<task id>"} of tasks/get and tasks/cancel.
func readTaskID(params json.RawMessage) (string, error) {
	var id string
	var err error
	found := rawjson.Members(params, func(key, value []byte) bool {
		if rawjson.KeyIs(key, "id") {
			id, err = idString("id", value)
		}
		return err == nil
	})
	if err != nil {
		return "", err
	}
	if !found || id == "" {
		return "", errors.New(`params must be {"id": "<task id>"}`)
	}
	return id, nil
}

// idString is the string of an id member: a JSON string of at most maxID
// bytes.
func idString(name string, value []byte) (string, error) {
	var s string
	if value[0] != '"' || json.Unmarshal(value, &s) != nil {
		return "", fmt.Errorf("%s must be a string", name)
	}
	if len(s) > maxID {
		return "", fmt.Errorf("%s is longer than %d bytes", name, maxID)
	}
	return s, nil
}

// message is what the door reads of a message: its text parts, as the
// JSON strings the caller sent, its other parts, and the ids it names.
type message struct {
	texts [][]byte
	data  []json.RawMessage // its data parts' values: an answer's content (questions.go)
	// files are its parts that are not text, data parts too, in order,
	// an inline part's base64 the caller's own, a slice of the request's
	// body: the input's parts.
	files                        []*gpart.Part
	messageID, contextID, taskID string
	// immediate: the caller asked to be answered at once, the task
	// working (configuration.returnImmediately: true in 1.0,
	// configuration.blocking: false in 0.3; either is read in both).
	immediate bool
}

// readMessage reads params {"message": {"parts": […], "messageId": …,
// "contextId": …, "taskId": …}} in either version's shape: a text part is
// {"kind": "text", "text": …} in 0.3, {"text": …} in 1.0. The parts may
// be "content", as 0.3's HTTP+JSON binding names them (Gemini
// Enterprise's messages); an HTTP+JSON body, a SendMessageRequest, is
// params as they are. A data part, {"kind": "data", "data": …} in 0.3,
// {"data": …} in 1.0, {"data": {"data": …}} in 0.3's HTTP+JSON (v p03),
// is read for the answer to a question, and with the file parts ({"raw" |
// "url", …} in 1.0, {"kind": "file", "file": {"bytes" | "uri", …}} in
// 0.3, {"file": {"fileWithBytes" | "fileWithUri", …}} in 0.3's
// HTTP+JSON) for the agent's input (callerPart), checked against lim,
// one part and all of them: a message needs one part of these kinds, of
// any. A part over the caps is a *part.Error, TooLarge.
func readMessage(params json.RawMessage, v version, lim config.Parts) (message, error) {
	errShape := errors.New(`params must be {"message": {"role": …, "parts": […], "messageId": …}}`)
	var m message
	var raw []byte
	rawjson.Members(params, func(key, value []byte) bool {
		switch {
		case rawjson.KeyIs(key, "message"):
			raw = value
		case rawjson.KeyIs(key, "configuration"):
			m.immediate = immediate(value)
		}
		return true
	})
	if len(raw) == 0 || raw[0] != '{' {
		return message{}, errShape
	}
	var err error
	var parts []byte
	rawjson.Members(raw, func(key, value []byte) bool {
		switch rawjson.Key(key) {
		case "parts", "content":
			parts = value
		case "messageId":
			m.messageID, err = idString("messageId", value)
		case "contextId":
			m.contextID, err = idString("contextId", value)
		case "taskId":
			m.taskID, err = idString("taskId", value)
		}
		return err == nil
	})
	if err != nil {
		return message{}, err
	}
	var list []rawElem
	if len(parts) == 0 || parts[0] != '[' || json.Unmarshal(parts, &list) != nil {
		return message{}, errShape
	}
	budget := gpart.NewBudget(lim)
	for i, p := range list {
		text := false
		rawjson.Members(p, func(key, value []byte) bool {
			switch {
			case rawjson.KeyIs(key, "text") && value[0] == '"':
				m.texts = append(m.texts, value)
				text = true
				return false
			case rawjson.KeyIs(key, "data"):
				if v == p03 {
					value = memberOf(value, "data")
				}
				if len(value) > 0 {
					m.data = append(m.data, value)
				}
			}
			return true
		})
		if text {
			continue
		}
		f, ok, err := callerPart(p, v, lim)
		if err == nil && ok {
			err = budget.Take(f)
		}
		if err != nil {
			return message{}, partError{i, err}
		}
		if ok {
			m.files = append(m.files, f)
		}
	}
	if len(m.texts) == 0 && len(m.files) == 0 {
		return message{}, errors.New("the message has no text, file or data part; this agent reads those")
	}
	return m, nil
}

// rawElem is an element of a JSON array, a slice of the JSON it was
// read from, not a copy as a json.RawMessage is: a message's parts are
// read in place, in the request's body, which outlives them.
type rawElem []byte

func (e *rawElem) UnmarshalJSON(b []byte) error {
	*e = b
	return nil
}

// partError is a caller's part the door refuses: its index in the
// message's parts, and why (a *part.Error when the part package says).
type partError struct {
	i   int
	err error
}

func (e partError) Error() string { return fmt.Sprintf("part %d: %v", e.i, e.err) }
func (e partError) Unwrap() error { return e.err }

// tooLargePart reports whether err is a caller's part over limits.parts.
func tooLargePart(err error) bool {
	var pe *gpart.Error
	return errors.As(err, &pe) && pe.TooLarge
}

// memberOf is the value of obj's member name; nil for none.
func memberOf(obj []byte, name string) []byte {
	var v []byte
	rawjson.Members(obj, func(key, value []byte) bool {
		if rawjson.KeyIs(key, name) {
			v = value
			return false
		}
		return true
	})
	return v
}

// parts are the message's parts as a task's history keeps them: its text
// parts joined, then its data parts.
func (m message) parts() []part {
	var ps []part
	if len(m.texts) > 0 {
		var s string
		json.Unmarshal(m.text(), &s)
		ps = append(ps, part{Text: s})
	}
	for _, d := range m.data {
		ps = append(ps, part{Data: d})
	}
	return ps
}

// immediate reports whether a SendMessageConfiguration asks for the
// answer at once: returnImmediately true (1.0) or blocking false (0.3).
func immediate(configuration []byte) bool {
	var yes bool
	rawjson.Members(configuration, func(key, value []byte) bool {
		switch {
		case rawjson.KeyIs(key, "returnImmediately") && string(value) == "true",
			rawjson.KeyIs(key, "blocking") && string(value) == "false":
			yes = true
		}
		return true
	})
	return yes
}

// input is the method's input for the message of task t, the shape every
// conversational door gives (docs/doors.md): {"message": <its text parts
// joined by newlines>, "messages": [{"role": "user", "content": <the
// same text>}], "parts": [<its other parts in the one shape, package
// part's>], "ids": {"context_id": …, "task_id": …}} (parts when it has
// some), its context_id the task's contextId scoped to its owner (core.Owner.Scope: a caller
// naming another's contextId reaches a context of its own). The history is
// this message alone: the agent keeps its own (an answer to its question
// comes as the input's reply, exchange.input). The text is the
// caller's JSON strings as they were sent, never decoded and encoded
// again, and so is a part's base64: the input is at most about twice
// what the caller sent.
func (m message) input(t *task) json.RawMessage {
	text := m.text()
	contextID := t.owner.Scope(t.contextID)
	size := 2*len(text) + len(contextID) + len(t.id) + 128
	for _, f := range m.files {
		size += len(f.Base64) + len(f.MIME) + len(f.Name) + len(f.URI) + len(f.Value) + 64
	}
	b := make([]byte, 0, size)
	b = append(append(b, `{"message":`...), text...)
	b = append(append(b, `,"messages":[{"role":"user","content":`...), text...)
	b = append(b, `}]`...)
	if len(m.files) > 0 {
		b = append(b, `,"parts":[`...)
		for i, f := range m.files {
			if i > 0 {
				b = append(b, ',')
			}
			b = gpart.AppendRecord(b, f)
		}
		b = append(b, ']')
	}
	b = append(b, `,"ids":{"context_id":`...)
	b = appendString(b, contextID)
	b = append(b, `,"task_id":`...)
	b = appendString(b, t.id)
	return append(b, "}}"...)
}

// text is the message's text parts joined by newlines, as one JSON
// string: the one part as it was sent, or the parts' contents joined.
func (m message) text() []byte {
	if len(m.texts) == 0 {
		return []byte(`""`)
	}
	if len(m.texts) == 1 {
		return m.texts[0]
	}
	b := []byte{'"'}
	for i, s := range m.texts {
		if i > 0 {
			b = append(b, `\n`...)
		}
		b = append(b, s[1:len(s)-1]...)
	}
	return append(b, '"')
}

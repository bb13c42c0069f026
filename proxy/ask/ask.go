// Package ask is the one shape of an agent's question, whatever the door:
// the input_required record an agent emits when it needs a person's
// answer to go on, and the reply that reaches it on the next call
// (docs/questions.md).
//
// An agent asks by emitting a record that is an object with the single
// member input_required:
//
//	{"input_required": {"message": "Approve the transfer?",
//	                    "kind": "form",
//	                    "schema": {"type": "object", "properties": {"approve": {"type": "boolean"}}},
//	                    "id": "q1"}}
//
// and ends its reply. The door carries the question to the caller in its
// protocol's own way (A2A input-required, MCP elicitation, the contract's
// record as it is), and calls the method again with the caller's answer in
// the input's reply member:
//
//	{…the input…, "reply": {"id": "q1", "action": "accept", "content": {"approve": true}}}
package ask

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// The kinds of question.
const (
	// KindForm asks for content shaped as Schema (none: free text, or a
	// plain yes or no).
	KindForm = "form"
	// KindURL asks the person to visit URL (a sign-in, a payment) and
	// say when done: the reply carries no content.
	KindURL = "url"
	// KindAuth says the agent needs credentials the caller must supply
	// (A2A's auth-required); it may carry a URL and a schema.
	KindAuth = "auth"
)

// The actions of a reply, as MCP's elicitation names them.
const (
	// Accept: the person answered; Content is the answer.
	Accept = "accept"
	// Decline: the person said no.
	Decline = "decline"
	// Cancel: the person dismissed the question without choosing.
	Cancel = "cancel"
)

// Key is the member a question record has, alone.
const Key = "input_required"

// ErrTooLarge is a question larger than limits.questions.bytes: the call
// ends with QUESTION_TOO_LARGE.
var ErrTooLarge = core.ErrQuestionTooLarge

// Question is an agent's question, read from its input_required record.
type Question struct {
	// ID is the agent's id for the question, echoed in the reply; ""
	// when it gave none.
	ID string `json:"id,omitempty"`
	// Kind is form, url or auth (default form).
	Kind string `json:"kind"`
	// Message is the question, for a person.
	Message string `json:"message"`
	// Schema is the JSON Schema the answer's content must meet, compact;
	// nil for none.
	Schema json.RawMessage `json:"schema,omitempty"`
	// URL is the page a url question sends the person to.
	URL string `json:"url,omitempty"`
	// Raw is the record's input_required object as the agent sent it,
	// compact.
	Raw json.RawMessage `json:"-"`

	resolved *jsonschema.Resolved
}

// Is reports whether rec, one compact record, is a question record: an
// object whose first member is input_required. It reads a few bytes: a
// door calls it on every record.
func Is(rec []byte) bool {
	return bytes.HasPrefix(rec, []byte(`{"input_required":`))
}

// Parse reads rec, a record for which Is holds, as a question. max caps
// the record (limits.questions.bytes): a bigger one is ErrTooLarge. A
// record that is not one well-formed question is a *core.ReplyError that
// says what is wrong, so the call ends with BAD_REPLY rather than passing
// the question on as text.
func Parse(rec []byte, max int64) (*Question, error) {
	if max > 0 && int64(len(rec)) > max {
		return nil, ErrTooLarge
	}
	var body json.RawMessage
	members := 0
	if !rawjson.Members(rec, func(key, value []byte) bool {
		members++
		if rawjson.KeyIs(key, Key) {
			body = value
		}
		return true
	}) {
		return nil, bad("not a JSON object")
	}
	if members != 1 || body == nil {
		return nil, bad("a question record has the single member input_required")
	}
	var q Question
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return nil, bad("want {\"message\": \"…\", \"kind\": \"form|url|auth\", \"schema\": {…}, \"url\": \"…\", \"id\": \"…\"}: %v", err)
	}
	q.Raw = append(json.RawMessage(nil), body...)
	if strings.TrimSpace(q.Message) == "" {
		return nil, bad("message is missing: the question a person reads")
	}
	switch q.Kind {
	case "":
		q.Kind = KindForm
	case KindForm, KindURL, KindAuth:
	default:
		return nil, bad("kind %q is not form, url or auth", q.Kind)
	}
	if q.Kind == KindURL && q.URL == "" {
		return nil, bad("a url question needs url: the page the person visits")
	}
	if q.URL != "" {
		u, err := url.Parse(q.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, bad("url %q is not an absolute http or https URL", q.URL)
		}
	}
	if len(q.Schema) > 0 && string(q.Schema) != "null" {
		var s jsonschema.Schema
		if err := json.Unmarshal(q.Schema, &s); err != nil {
			return nil, bad("schema is not a JSON Schema object: %v", err)
		}
		if s.Type != "object" {
			return nil, bad("schema describes %q, want an object (type: object, with properties)", s.Type)
		}
		r, err := s.Resolve(nil) // no loader: a remote $ref is refused, never fetched
		if err != nil {
			return nil, bad("schema: %v", err)
		}
		q.Schema, _ = rawjson.AppendCompact(nil, q.Schema)
		q.resolved = r
	} else {
		q.Schema = nil
	}
	return &q, nil
}

func bad(format string, args ...any) error {
	return &core.ReplyError{Msg: "input_required: " + fmt.Sprintf(format, args...)}
}

// Reply is the caller's answer to a question, as the agent reads it in
// its input's reply member.
type Reply struct {
	// ID is the question's id, when it had one.
	ID string `json:"id,omitempty"`
	// Action is accept, decline or cancel.
	Action string `json:"action"`
	// Content is the answer of an accepted question: an object meeting
	// the question's schema; absent otherwise.
	Content json.RawMessage `json:"content,omitempty"`
	// Reason says why a cancel came from the sidecar rather than the
	// person: Expired. Empty for every answer a caller gave.
	Reason string `json:"reason,omitempty"`
}

// Expired is the Reason of the cancel a door sends the agent when no
// answer came within limits.questions.wait, or the question was dropped
// to keep limits.questions.waiting: the agent is told its question will
// not be answered, and what it answers is not read.
const Expired = "expired"

// Expiry is the reply that tells the agent its question q expired.
func Expiry(q *Question) Reply {
	r := Reply{Action: Cancel, Reason: Expired}
	if q != nil {
		r.ID = q.ID
	}
	return r
}

// Check reports whether r answers q: an accept's content, when q has a
// schema, meets it; a decline or cancel carries none. max caps the content
// (limits.questions.bytes). The error says what is wrong, for the caller.
func (q *Question) Check(r Reply, max int64) error {
	switch r.Action {
	case Accept:
	case Decline, Cancel:
		return nil
	default:
		return fmt.Errorf("the answer's action %q is not accept, decline or cancel", r.Action)
	}
	if max > 0 && int64(len(r.Content)) > max {
		return fmt.Errorf("the answer is %d bytes, more than limits.questions.bytes (%d)", len(r.Content), max)
	}
	if q.resolved == nil {
		if len(r.Content) > 0 && !json.Valid(r.Content) {
			return errors.New("the answer's content is not JSON")
		}
		return nil
	}
	var v any
	if len(r.Content) == 0 {
		v = map[string]any{}
	} else if err := json.Unmarshal(r.Content, &v); err != nil {
		return fmt.Errorf("the answer's content is not JSON: %v", err)
	}
	if err := q.resolved.Validate(v); err != nil {
		return fmt.Errorf("the answer does not meet the question's schema: %v", err)
	}
	return nil
}

// Resolved is q's schema resolved, to validate with or apply defaults
// from; nil when q has none.
func (q *Question) Resolved() *jsonschema.Resolved { return q.resolved }

// WithReply returns input, a JSON object, with its reply member set to r
// (replacing one it had); the other members are as they were, byte for
// byte. A non-object input is replaced by {"reply": …}.
func WithReply(input json.RawMessage, r Reply) json.RawMessage {
	reply, _ := json.Marshal(r)
	b := make([]byte, 0, len(input)+len(reply)+16)
	b = append(b, '{')
	rawjson.Members(input, func(key, value []byte) bool {
		if rawjson.KeyIs(key, "reply") {
			return true
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, key...), ':'), value...)
		return true
	})
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = append(append(b, `"reply":`...), reply...)
	return append(b, '}')
}

// Record is the compact input_required record of q, as the contract
// passes it on and a dialect's mapping writes it.
func (q *Question) Record() []byte {
	b, _ := json.Marshal(struct {
		Q *Question `json:"input_required"`
	}{q})
	return b
}

package adk

import (
	"encoding/json"
	"net/http"

	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// A run of an ADK agent pauses for a person with a function call: ADK's
// tool confirmation (adk_request_confirmation) or a long-running tool's
// call. A caller of the contract answers it as it answers any agent's
// question (docs/questions.md): the same input again, with reply
// {id: the call's id, action, content}. The run goes on when the next
// message of the session carries the call's function response; answer
// turns the reply into that message, so the ADK agent needs nothing new.
// A caller that sends the function response itself, as message, is
// served as before.

// replyOf is the call's reply input, nil when it has none.
func replyOf(in core.Input) (*ask.Reply, error) {
	raw, ok := in.Fields["reply"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var r ask.Reply
	if json.Unmarshal(raw, &r) != nil {
		return nil, &core.InputError{Field: "reply", Msg: `must be {"id": …, "action": "accept|decline|cancel", "content": {…}}`}
	}
	if r.ID == "" {
		return nil, &core.InputError{Field: "reply.id", Msg: "is required: the id of the question answered (its ADK function call's id)"}
	}
	return &r, nil
}

// answer is the message that resumes the run of session sid with r: a
// user Content of one function response to the call r names, which the
// session's events must hold. A call the session does not hold is not
// found, as a session of another user is; an answer that does not meet
// the question's schema is the caller's error.
func (a *App) answer(c call, user, sid string, r *ask.Reply) (json.RawMessage, error) {
	if sid == "" {
		return nil, &core.InputError{Field: "session_id", Msg: "is required with reply: the session whose run asked"}
	}
	out, err := a.json(c, http.MethodGet, nil, append(a.sessions(user), sid)...)
	if err != nil {
		return nil, sessionError(err)
	}
	name, args, ok := pausedCall(out, r.ID)
	if !ok {
		return nil, &core.StatusError{Status: http.StatusNotFound, Detail: "no question " + r.ID + " in the session: reply.id must name the function call the run paused on"}
	}
	q, err := ask.Parse(dialect.ADKQuestion(r.ID, name, args), 0)
	if err != nil {
		return nil, err
	}
	if err := q.Check(*r, a.Limits.Questions.Bytes); err != nil {
		return nil, &core.InputError{Field: "reply", Msg: err.Error()}
	}
	response, err := responseOf(name, r)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"role": "user", "parts": []any{map[string]any{
		"functionResponse": map[string]any{"id": r.ID, "name": name, "response": response},
	}}})
}

// responseOf is the function response that answers call name with r. A
// tool confirmation's is {confirmed, payload}: confirmed only when the
// person accepted and said so. A long-running tool's is the content of
// an accepted answer, {"action": "decline"|"cancel"} otherwise.
func responseOf(name string, r *ask.Reply) (json.RawMessage, error) {
	if name != dialect.ConfirmationCall {
		if r.Action == ask.Accept {
			if len(r.Content) == 0 {
				return json.RawMessage("{}"), nil
			}
			return r.Content, nil
		}
		return json.Marshal(map[string]string{"action": r.Action})
	}
	var content struct {
		Confirmed bool            `json:"confirmed"`
		Payload   json.RawMessage `json:"payload,omitempty"`
	}
	if r.Action == ask.Accept && len(r.Content) > 0 {
		if err := json.Unmarshal(r.Content, &content); err != nil {
			return nil, &core.InputError{Field: "reply.content", Msg: "must be {\"confirmed\": true|false, \"payload\": …}"}
		}
	}
	if r.Action != ask.Accept {
		content.Confirmed = false
	}
	return json.Marshal(content)
}

// pausedCall finds, in session (as GET …/sessions/{id} returns it, in
// either key case), the function call whose id is id: its name and args.
func pausedCall(session json.RawMessage, id string) (name string, args json.RawMessage, ok bool) {
	type function struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	var s struct {
		Events []struct {
			Content *struct {
				Parts []struct {
					Call      *function `json:"functionCall"`
					CallSnake *function `json:"function_call"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"events"`
	}
	if json.Unmarshal(session, &s) != nil {
		return "", nil, false
	}
	for _, e := range s.Events {
		if e.Content == nil {
			continue
		}
		for _, p := range e.Content.Parts {
			f := p.Call
			if f == nil {
				f = p.CallSnake
			}
			if f != nil && f.ID == id {
				return f.Name, f.Args, true
			}
		}
	}
	return "", nil, false
}

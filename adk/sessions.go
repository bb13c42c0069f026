package adk

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// errSessionNotFound is AdkApp's own wording for a missing session.
const errSessionNotFound = "Session not found. Please create it using .create_session()"

// sessions is the path of user's sessions in the app, one part a segment.
func (a *App) sessions(user string) []string {
	return []string{"apps", a.Name, "users", user, "sessions"}
}

// createSession: create_session(user_id, session_id=None, state=None).
func (a *App) createSession(c call) (json.RawMessage, error) {
	sid, err := optionalString(c.in, "session_id")
	if err != nil {
		return nil, err
	}
	state, ok := c.in.Fields["state"]
	if ok && string(state) != "null" && state[0] != '{' {
		return nil, &core.InputError{Field: "state", Msg: "must be an object"}
	}
	if string(state) == "null" {
		state = nil
	}
	return a.create(c, c.arg("user_id"), sid, state, nil)
}

// create makes a session. The servers differ: Python's POST …/sessions
// takes {sessionId, state, events}, TypeScript's reads only state (a
// chosen id goes in the path, POST …/sessions/{id}, whose body Python
// reads as the state itself). A chosen id goes where idForm learned the
// server takes it.
func (a *App) create(c call, user, sid string, state, events json.RawMessage) (json.RawMessage, error) {
	body := map[string]json.RawMessage{}
	if state != nil {
		body["state"] = state
	}
	if events != nil {
		body["events"] = events
	}
	if sid != "" {
		inPath, err := a.idForm(c)
		if err != nil {
			return nil, err
		}
		if inPath {
			return a.json(c, http.MethodPost, body, append(a.sessions(user), sid)...)
		}
		id, _ := json.Marshal(sid)
		body["sessionId"] = id
		body["session_id"] = id
	}
	return a.json(c, http.MethodPost, body, a.sessions(user)...)
}

// probeUser owns the probe session idForm creates and deletes.
const probeUser = "sidecar-readiness-probe"

// idForm reports whether the server takes a chosen session id in the path
// (POST …/sessions/{id}) instead of the create body. It learns this once,
// on purpose: it creates a session with an id of its own in the body and
// sees whether the server kept it, then deletes it. A caller's id never
// decides it (Python's server trims spaces from ids, so a caller's " x"
// comes back as "x"), and until it is learned no chosen-id session is
// made. Ready learns it before the first call; a create learns it when
// there was no readiness check.
func (a *App) idForm(c call) (bool, error) {
	a.formMu.Lock()
	defer a.formMu.Unlock()
	if a.formKnown {
		return a.idInPath, nil
	}
	parts := a.sessions(probeUser)
	id := "sidecar-probe-" + rand.Text()
	out, err := a.json(c, http.MethodPost, map[string]any{"sessionId": id, "session_id": id, "state": map[string]any{}}, parts...)
	if err != nil {
		return false, fmt.Errorf("creating a probe session: %w", err)
	}
	got := sessionID(out)
	if got == "" {
		return false, &core.ReplyError{Msg: "ADK api server created a session without an id"}
	}
	// A probe session left behind (a failed delete) is harmless: it holds
	// no data and belongs to a user no caller has.
	a.json(c, http.MethodDelete, nil, append(parts, got)...)
	a.formKnown, a.idInPath = true, got != id
	return a.idInPath, nil
}

// sessionID is the id of a session object, or "".
func sessionID(session json.RawMessage) string {
	var s struct {
		ID string `json:"id"`
	}
	json.Unmarshal(session, &s)
	return s.ID
}

// getSession: get_session(user_id, session_id).
func (a *App) getSession(c call) (json.RawMessage, error) {
	out, err := a.json(c, http.MethodGet, nil, append(a.sessions(c.arg("user_id")), c.arg("session_id"))...)
	return out, sessionError(err)
}

// listSessions: list_sessions(user_id) → {"sessions": [...]}, from a bare
// array (Python) or a paged object (TypeScript).
func (a *App) listSessions(c call) (json.RawMessage, error) {
	out, err := a.json(c, http.MethodGet, nil, a.sessions(c.arg("user_id"))...)
	if err != nil {
		return nil, err
	}
	list := out
	if len(out) > 0 && out[0] == '{' {
		var paged struct {
			Sessions json.RawMessage `json:"sessions"`
		}
		if json.Unmarshal(out, &paged) != nil || paged.Sessions == nil {
			return nil, &core.ReplyError{Msg: "ADK api server's session list has no \"sessions\" key"}
		}
		list = paged.Sessions
	}
	if string(list) == "null" {
		list = json.RawMessage("[]")
	}
	if len(list) == 0 || list[0] != '[' {
		return nil, &core.ReplyError{Msg: "ADK api server's session list is not an array"}
	}
	return wrapKey("sessions", list), nil
}

// deleteSession: delete_session(user_id, session_id) → null, whether the
// server answers 200 null or 204.
func (a *App) deleteSession(c call) (json.RawMessage, error) {
	if _, err := a.json(c, http.MethodDelete, nil, append(a.sessions(c.arg("user_id")), c.arg("session_id"))...); err != nil {
		return nil, sessionError(err)
	}
	return json.RawMessage("null"), nil
}

// sessionError words a missing session as AdkApp does.
func sessionError(err error) error {
	var se *core.StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return &core.StatusError{Status: http.StatusNotFound, Detail: errSessionNotFound}
	}
	return err
}

func wrapKey(key string, v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"`)
	b.WriteString(key)
	b.WriteString(`":`)
	b.Write(v)
	b.WriteByte('}')
	return b.Bytes()
}

package adk

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// A door (A2A, the OpenAI-compatible door) calls stream_query with the
// one input shape every conversational door gives: {"message",
// "messages", "ids": {"context_id", "task_id"}}, and no user_id. The
// door's context_id is already scoped to its caller, so it names the
// ADK user and session: both are derived from it, the same on every
// replica and after a restart, so an answer to a question (the same
// input plus reply) reaches the session whose run paused, with no memory
// of the sidecar's. The session is made on the context's first message
// and found again on the next ones; the ADK agent keeps the history
// (messages is not read).

// doorKeyLen is how many hex digits of the context's SHA-256 name its
// user and session: 128 bits, and a path segment whatever the caller's
// contextId holds.
const doorKeyLen = 32

// doorInput is in with user_id and session_id derived from ids.context_id
// when in is a door's input: it has that id and names neither a user nor
// a session. ok reports whether it was one.
func doorInput(in core.Input) (out core.Input, ok bool) {
	if present(in, "user_id") || present(in, "session_id") {
		return in, false
	}
	var ids struct {
		ContextID string `json:"context_id"`
	}
	if json.Unmarshal(in.Fields["ids"], &ids) != nil || ids.ContextID == "" {
		return in, false
	}
	sum := sha256.Sum256([]byte(ids.ContextID))
	key := hex.EncodeToString(sum[:])[:doorKeyLen]
	user, _ := json.Marshal("door-" + key)
	sid, _ := json.Marshal("ctx-" + key)
	out = in
	out.Fields = maps.Clone(in.Fields)
	out.Fields["user_id"], out.Fields["session_id"] = user, sid
	return out, true
}

// present reports whether in has field, not null.
func present(in core.Input, field string) bool {
	v, ok := in.Fields[field]
	return ok && string(v) != "null"
}

// ensureSession makes the door context's session sid of user unless the
// server already has it. Two first messages of one context may race to
// make it: the one whose create fails finds the other's.
func (a *App) ensureSession(c call, user, sid string) error {
	_, err := a.json(c, http.MethodGet, nil, append(a.sessions(user), sid)...)
	var se *core.StatusError
	if err == nil || !errors.As(err, &se) || se.Status != http.StatusNotFound {
		return err
	}
	if _, err = a.create(c, user, sid, nil, nil); err == nil {
		return nil
	}
	if _, again := a.json(c, http.MethodGet, nil, append(a.sessions(user), sid)...); again == nil {
		return nil
	}
	return err
}

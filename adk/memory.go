package adk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// addSessionToMemory: async_add_session_to_memory(session) → null.
func (a *App) addSessionToMemory(c call) (json.RawMessage, error) {
	var session map[string]json.RawMessage
	if json.Unmarshal(c.in.Fields["session"], &session) != nil || session == nil {
		return nil, &core.InputError{Field: "session", Msg: "is required: " + wantSession}
	}
	sid := firstString(session, "id")
	user := firstString(session, "user_id", "userId")
	if sid == "" || user == "" {
		return nil, &core.InputError{Field: "session", Msg: "must carry its id and user_id (or userId)"}
	}
	if err := checkSegment("session", user); err != nil {
		return nil, err
	}
	parts := []string{"apps", a.Name, "users", user, "memory"}
	_, err := a.json(c, http.MethodPatch, map[string]string{"session_id": sid}, parts...)
	if err != nil {
		return nil, missingRoute(err, c.name, "PATCH /apps/{app}/users/{user}/memory", "a memory service")
	}
	return json.RawMessage("null"), nil
}

// searchMemory: async_search_memory(user_id, query). No ADK api server has
// a memory search route, so the sidecar answers without calling it.
func (a *App) searchMemory(c call) (json.RawMessage, error) {
	return nil, &core.StatusError{Status: http.StatusBadRequest, Detail: c.name +
		": ADK api servers have no memory search route, so the sidecar cannot serve it; " +
		"serve it from the agent and map it with a method entry of your own"}
}

// missingRoute turns a server's "no such route" answer into a 4xx that
// names what is missing, instead of the server's 404 page.
func missingRoute(err error, method, route, what string) error {
	var se *core.StatusError
	if !errors.As(err, &se) {
		return err
	}
	switch {
	case se.Status == http.StatusNotFound && strings.Contains(strings.ToLower(se.Detail), "session"):
		return &core.StatusError{Status: http.StatusNotFound, Detail: errSessionNotFound}
	case se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed:
		return &core.StatusError{Status: http.StatusBadRequest, Detail: fmt.Sprintf(
			"%s: the ADK api server does not serve %s (it answered %d: %s)", method, route, se.Status, se.Detail)}
	case se.Status == http.StatusBadRequest:
		return &core.StatusError{Status: http.StatusBadRequest, Detail: fmt.Sprintf(
			"%s needs %s on the ADK api server: %s", method, what, se.Detail)}
	}
	return err
}

// firstString is the first of keys that holds a non-empty string.
func firstString(obj map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		var s string
		if json.Unmarshal(obj[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

package adk

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/upstream"
)

// App serves the "adk.*" handlers for one ADK app.
type App struct {
	// Client reaches the ADK api server.
	Client *upstream.Client
	// Name is the ADK app name (config adk.app).
	Name string
	// Limits bound replies and records.
	Limits config.Limits
	// SnakeKeys renames the field names of sessions and events from the
	// api servers' camelCase to AdkApp's snake_case (config adk.keys).
	SnakeKeys bool

	// How the server takes a chosen session id, learned once with a probe
	// session of the sidecar's own (see idForm), never from a caller's.
	formMu    sync.Mutex
	formKnown bool
	idInPath  bool // the server ignores an id in the create body: it goes in the path
}

// errSessionNotFound is AdkApp's own wording for a missing session.
const errSessionNotFound = "Session not found. Please create it using .create_session()"

// defaultUserID is what AdkApp uses when streaming_agent_run_with_events
// names no user.
const defaultUserID = "default-user-id"

// cleanupTimeout bounds deleting a temporary session after its run.
const cleanupTimeout = 5 * time.Second

// call is one class_method call being served.
type call struct {
	ctx    context.Context
	m      *config.Method
	name   string
	in     upstream.Input
	header http.Header
}

// Unary serves a unary handler method and returns the value of its
// {"output": …}.
func (a *App) Unary(ctx context.Context, m *config.Method, name string, in upstream.Input, h http.Header) (json.RawMessage, error) {
	out, err := a.unary(call{ctx: ctx, m: m, name: name, in: in, header: h})
	if err != nil || !a.SnakeKeys {
		return out, err
	}
	return snakeKeys(out)
}

func (a *App) unary(c call) (json.RawMessage, error) {
	switch c.m.Handler {
	case "adk.create_session":
		return a.createSession(c)
	case "adk.get_session":
		return a.getSession(c)
	case "adk.list_sessions":
		return a.listSessions(c)
	case "adk.delete_session":
		return a.deleteSession(c)
	case "adk.add_session_to_memory":
		return a.addSessionToMemory(c)
	case "adk.search_memory":
		return a.searchMemory(c)
	}
	return nil, fmt.Errorf("handler %s is not served on the unary route", c.m.Handler)
}

// Stream serves a streaming handler method. The stream's errors are
// already explained (timeouts named); close releases it, and deletes a
// session made only for this run.
func (a *App) Stream(ctx context.Context, m *config.Method, name string, in upstream.Input, h http.Header) (upstream.Stream, func(), error) {
	c := call{ctx: ctx, m: m, name: name, in: in, header: h}
	switch m.Handler {
	case "adk.stream_query":
		return a.streamQuery(c, false)
	case "adk.async_stream_query":
		return a.streamQuery(c, true)
	case "adk.streaming_agent_run_with_events":
		return a.runWithEvents(c)
	}
	return nil, nil, fmt.Errorf("handler %s is not served on the streaming route", m.Handler)
}

// send makes one request to the ADK api server at the path of parts, each
// part one segment.
func (a *App) send(c call, verb string, body any, parts ...string) (*upstream.Response, error) {
	path, raw := upstream.SegmentPath(parts...)
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("encoding %s request: %w", c.name, err)
		}
	}
	return a.Client.Send(c.ctx, upstream.Request{
		Method: c.name, Verb: verb, Path: path, RawPath: raw, Body: b, Timeouts: c.m.Timeouts, Header: c.header,
	})
}

// plain reads replies as they come: JSON as JSON, empty as null.
var plain = &config.Method{Reply: config.ReplyAuto, Output: config.OutputWrap}

// json makes a request and reads its whole reply as one JSON value.
func (a *App) json(c call, verb string, body any, parts ...string) (json.RawMessage, error) {
	resp, err := a.send(c, verb, body, parts...)
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	return resp.Output(plain, a.Limits.ReplyBytes, a.Limits.RecordBytes)
}

func (a *App) sessions(user string) []string {
	return []string{"apps", a.Name, "users", user, "sessions"}
}

// createSession: create_session(user_id, session_id=None, state=None).
func (a *App) createSession(c call) (json.RawMessage, error) {
	user, err := requiredString(c.in, "user_id")
	if err != nil {
		return nil, err
	}
	sid, err := optionalString(c.in, "session_id")
	if err != nil {
		return nil, err
	}
	state, ok := c.in.Fields["state"]
	if ok && string(state) != "null" && state[0] != '{' {
		return nil, &upstream.InputError{Field: "state", Msg: "must be an object"}
	}
	if string(state) == "null" {
		state = nil
	}
	return a.create(c, user, sid, state, nil)
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
		return false, &upstream.ReplyError{Msg: "ADK api server created a session without an id"}
	}
	// A probe session left behind (a failed delete) is harmless: it holds
	// no data and belongs to a user no caller has.
	a.json(c, http.MethodDelete, nil, append(parts, got)...)
	a.formKnown, a.idInPath = true, got != id
	return a.idInPath, nil
}

// readyMethod gives readiness requests no clocks of their own: the
// prober's context bounds them.
var readyMethod = &config.Method{}

// maxAppsShown bounds the app names an app-not-found error lists.
const maxAppsShown = 10

// Ready checks that the ADK api server serves the app: GET /list-apps
// must list it. Until that is so the sidecar is not ready, and the error
// (meant for /healthz) names the app and the apps the server has. The
// first time it passes it also learns how the server takes a chosen
// session id (idForm).
func (a *App) Ready(ctx context.Context) error {
	c := call{ctx: ctx, m: readyMethod}
	out, err := a.json(c, http.MethodGet, nil, "list-apps")
	if err != nil {
		return fmt.Errorf("listing the ADK api server's apps: %w", err)
	}
	var apps []string
	if json.Unmarshal(out, &apps) != nil {
		return errors.New("the ADK api server's GET /list-apps is not a list of app names")
	}
	if !slices.Contains(apps, a.Name) {
		return appNotFound(a.Name, apps)
	}
	_, err = a.idForm(c)
	return err
}

// appNotFound says that the server lacks the app, and which it has.
func appNotFound(name string, apps []string) error {
	if len(apps) == 0 {
		return &upstream.Mismatch{Msg: fmt.Sprintf("ADK app %q not found: the api server has no apps", name)}
	}
	shown := make([]string, 0, maxAppsShown)
	for _, app := range apps[:min(len(apps), maxAppsShown)] {
		shown = append(shown, fmt.Sprintf("%q", clip(app, 100)))
	}
	more := ""
	if n := len(apps) - len(shown); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return &upstream.Mismatch{Msg: fmt.Sprintf("ADK app %q not found: the api server has %s%s", name, strings.Join(shown, ", "), more)}
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
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
	user, sid, err := userAndSession(c.in)
	if err != nil {
		return nil, err
	}
	out, err := a.json(c, http.MethodGet, nil, append(a.sessions(user), sid)...)
	return out, sessionError(err)
}

// listSessions: list_sessions(user_id) → {"sessions": [...]}, from a bare
// array (Python) or a paged object (TypeScript).
func (a *App) listSessions(c call) (json.RawMessage, error) {
	user, err := requiredString(c.in, "user_id")
	if err != nil {
		return nil, err
	}
	out, err := a.json(c, http.MethodGet, nil, a.sessions(user)...)
	if err != nil {
		return nil, err
	}
	list := out
	if len(out) > 0 && out[0] == '{' {
		var paged struct {
			Sessions json.RawMessage `json:"sessions"`
		}
		if json.Unmarshal(out, &paged) != nil || paged.Sessions == nil {
			return nil, &upstream.ReplyError{Msg: "ADK api server's session list has no \"sessions\" key"}
		}
		list = paged.Sessions
	}
	if string(list) == "null" {
		list = json.RawMessage("[]")
	}
	if len(list) == 0 || list[0] != '[' {
		return nil, &upstream.ReplyError{Msg: "ADK api server's session list is not an array"}
	}
	return wrapKey("sessions", list), nil
}

// deleteSession: delete_session(user_id, session_id) → null, whether the
// server answers 200 null or 204.
func (a *App) deleteSession(c call) (json.RawMessage, error) {
	user, sid, err := userAndSession(c.in)
	if err != nil {
		return nil, err
	}
	if _, err := a.json(c, http.MethodDelete, nil, append(a.sessions(user), sid)...); err != nil {
		return nil, sessionError(err)
	}
	return json.RawMessage("null"), nil
}

// addSessionToMemory: async_add_session_to_memory(session) → null.
func (a *App) addSessionToMemory(c call) (json.RawMessage, error) {
	raw, ok := c.in.Fields["session"]
	var session map[string]json.RawMessage
	if !ok || json.Unmarshal(raw, &session) != nil || session == nil {
		return nil, &upstream.InputError{Field: "session", Msg: "is required: a session object as get_session returns it"}
	}
	sid := firstString(session, "id")
	user := firstString(session, "user_id", "userId")
	if sid == "" || user == "" {
		return nil, &upstream.InputError{Field: "session", Msg: "must carry its id and user_id (or userId)"}
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
	return nil, &upstream.StatusError{Status: http.StatusBadRequest, Detail: c.name +
		": ADK api servers have no memory search route, so the sidecar cannot serve it; " +
		"serve it from the agent and map it with a method entry of your own"}
}

// sessionError words a missing session as AdkApp does.
func sessionError(err error) error {
	var se *upstream.StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return &upstream.StatusError{Status: http.StatusNotFound, Detail: errSessionNotFound}
	}
	return err
}

// missingRoute turns a server's "no such route" answer into a 4xx that
// names what is missing, instead of the server's 404 page.
func missingRoute(err error, method, route, what string) error {
	var se *upstream.StatusError
	if !errors.As(err, &se) {
		return err
	}
	switch {
	case se.Status == http.StatusNotFound && strings.Contains(strings.ToLower(se.Detail), "session"):
		return &upstream.StatusError{Status: http.StatusNotFound, Detail: errSessionNotFound}
	case se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed:
		return &upstream.StatusError{Status: http.StatusBadRequest, Detail: fmt.Sprintf(
			"%s: the ADK api server does not serve %s (it answered %d: %s)", method, route, se.Status, se.Detail)}
	case se.Status == http.StatusBadRequest:
		return &upstream.StatusError{Status: http.StatusBadRequest, Detail: fmt.Sprintf(
			"%s needs %s on the ADK api server: %s", method, what, se.Detail)}
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

func userAndSession(in upstream.Input) (string, string, error) {
	user, err := requiredString(in, "user_id")
	if err != nil {
		return "", "", err
	}
	sid, err := requiredString(in, "session_id")
	return user, sid, err
}

func requiredString(in upstream.Input, field string) (string, error) {
	s, err := optionalString(in, field)
	if err == nil && s == "" {
		err = &upstream.InputError{Field: field, Msg: "is required"}
	}
	return s, err
}

func optionalString(in upstream.Input, field string) (string, error) {
	v, ok := in.Fields[field]
	if !ok || string(v) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", &upstream.InputError{Field: field, Msg: "must be a string"}
	}
	return s, nil
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

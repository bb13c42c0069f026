package adk

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/upstream"
)

// defaultUserID is what AdkApp uses when streaming_agent_run_with_events
// names no user.
const defaultUserID = "default-user-id"

// cleanupTimeout bounds deleting a temporary session after its run.
const cleanupTimeout = 5 * time.Second

// runRequest is the body of POST /run_sse, in the camelCase every ADK api
// server accepts.
type runRequest struct {
	AppName    string          `json:"appName"`
	UserID     string          `json:"userId"`
	SessionID  string          `json:"sessionId"`
	NewMessage json.RawMessage `json:"newMessage"`
	Streaming  bool            `json:"streaming"`
}

// streamQuery: stream_query(message, user_id, session_id=None,
// run_config=None). One ADK event per line.
func (a *App) streamQuery(c call) (core.Records, func(), error) {
	return a.query(c, false)
}

// asyncStreamQuery: async_stream_query, which also takes session_events
// to seed a new session.
func (a *App) asyncStreamQuery(c call) (core.Records, func(), error) {
	return a.query(c, true)
}

func (a *App) query(c call, async bool) (core.Records, func(), error) {
	user := c.arg("user_id")
	msg, err := content(c.in.Fields["message"], "message")
	if err != nil {
		return nil, nil, err
	}
	sid, err := optionalString(c.in, "session_id")
	if err != nil {
		return nil, nil, err
	}
	events := c.in.Fields["session_events"]
	if string(events) == "null" {
		events = nil
	}
	switch {
	case events != nil && !async:
		return nil, nil, &core.InputError{Field: "session_events", Msg: "is taken by async_stream_query only"}
	case events != nil && sid != "":
		return nil, nil, &core.InputError{Field: "session_events", Msg: "cannot be used together with session_id"}
	case events != nil && events[0] != '[':
		return nil, nil, &core.InputError{Field: "session_events", Msg: "must be a list of events"}
	}
	reply, err := replyOf(c.in)
	if err != nil {
		return nil, nil, err
	}
	if reply != nil {
		// An answer to the run's question resumes the session's run.
		if msg, err = a.answer(c, user, sid, reply); err != nil {
			return nil, nil, err
		}
	} else if msg, err = withParts(msg, c.in.Fields["parts"], a.Limits.Parts); err != nil {
		return nil, nil, err
	} else if c.door {
		if err := a.ensureSession(c, user, sid); err != nil {
			return nil, nil, err
		}
	} else if sid == "" {
		if sid, err = a.newSession(c, user, events, "session_events"); err != nil {
			return nil, nil, err
		}
	}
	return a.run(c, runRequest{
		AppName: a.Name, UserID: user, SessionID: sid, NewMessage: msg, Streaming: streamingMode(c.in.Fields["run_config"]),
	}, nil, nil)
}

// runWithEvents: streaming_agent_run_with_events(request_json). Each line
// is {"events": [event], "session_id": …}; a session created for this run
// alone is deleted when the run ends, however it ends.
func (a *App) runWithEvents(c call) (core.Records, func(), error) {
	raw := c.in.Fields["request_json"]
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	var req map[string]json.RawMessage
	if json.Unmarshal(raw, &req) != nil || req == nil {
		return nil, nil, &core.InputError{Field: "request_json", Msg: "is not a JSON object {message, user_id, session_id?, events?}"}
	}
	in := core.Input{Raw: raw, Fields: req}
	msg, err := content(req["message"], "request_json.message")
	if err != nil {
		return nil, nil, err
	}
	user, err := optionalString(in, "user_id")
	if err != nil {
		return nil, nil, &core.InputError{Field: "request_json.user_id", Msg: "must be a string"}
	}
	if user == "" {
		user = defaultUserID
	}
	sid, err := optionalString(in, "session_id")
	if err != nil {
		return nil, nil, &core.InputError{Field: "request_json.session_id", Msg: "must be a string"}
	}
	events := req["events"]
	if string(events) == "null" {
		events = nil
	}
	if events != nil && events[0] != '[' {
		return nil, nil, &core.InputError{Field: "request_json.events", Msg: "must be a list of events"}
	}
	if events != nil && sid != "" {
		return nil, nil, &core.InputError{Field: "request_json.events", Msg: "seed a new session: they cannot be used together with session_id"}
	}

	var cleanup func()
	if sid == "" {
		if sid, err = a.newSession(c, user, events, "request_json.events"); err != nil {
			return nil, nil, err
		}
		cleanup = a.deleteLater(c, user, sid)
	}
	prefix, _ := json.Marshal(sid)
	wrap := func(dst, rec []byte) []byte {
		dst = append(dst, `{"events":[`...)
		dst = append(dst, rec...)
		dst = append(dst, `],"session_id":`...)
		dst = append(dst, prefix...)
		return append(dst, '}')
	}
	st, closeRun, err := a.run(c, runRequest{AppName: a.Name, UserID: user, SessionID: sid, NewMessage: msg}, wrap, cleanup)
	if err != nil && cleanup != nil {
		cleanup()
	}
	return st, closeRun, err
}

// deleteLater deletes a temporary session, on a context of its own: the
// caller may already be gone.
func (a *App) deleteLater(c call, user, sid string) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.WithValue(context.WithoutCancel(c.ctx), phasesKey{}, (*core.Phases)(nil)), cleanupTimeout)
		defer cancel()
		dc := c
		dc.ctx = ctx
		a.json(dc, http.MethodDelete, nil, append(a.sessions(user), sid)...)
	}
}

// newSession creates a session, seeded with events when there are any,
// and returns its id. A server that drops the events (TypeScript's reads
// only the state) cannot seed one: that is a 400 naming what is missing
// and field, the input that held the events.
func (a *App) newSession(c call, user string, events json.RawMessage, field string) (string, error) {
	out, err := a.create(c, user, "", nil, events)
	if err != nil {
		return "", err
	}
	sid := sessionID(out)
	if sid == "" {
		return "", &core.ReplyError{Msg: "ADK api server created a session without an id"}
	}
	if events != nil {
		var want, got []json.RawMessage
		json.Unmarshal(events, &want)
		var s struct {
			Events []json.RawMessage `json:"events"`
		}
		json.Unmarshal(out, &s)
		got = s.Events
		if len(got) < len(want) {
			a.deleteLater(c, user, sid)()
			return "", &core.StatusError{Status: http.StatusBadRequest, Detail: c.name +
				": this ADK api server does not take events when it creates a session, so " + field + " cannot seed one"}
		}
	}
	return sid, nil
}

// run starts POST /run_sse and deframes its events. wrap, when set,
// rewrites each record; cleanup runs when the stream is closed.
func (a *App) run(c call, req runRequest, wrap func(dst, rec []byte) []byte, cleanup func()) (core.Records, func(), error) {
	resp, err := a.send(c, http.MethodPost, req, "run_sse")
	if err != nil {
		return nil, nil, sessionError(err)
	}
	records, _ := resp.Stream(config.ReplyAuto, a.Limits.RecordBytes)
	s := &events{ReplyStream: records, wrap: wrap, snake: a.SnakeKeys}
	return s, func() {
		resp.Close()
		if cleanup != nil {
			cleanup()
		}
	}, nil
}

// events is the run's stream of ADK events, each record rewritten by wrap
// when it is set, its errors explained by the response's clocks.
type events struct {
	*upstream.ReplyStream
	wrap  func(dst, rec []byte) []byte
	snake bool // rename the event's keys to snake_case
	buf   []byte
}

func (e *events) Record() []byte {
	rec := e.ReplyStream.Record()
	if e.snake {
		if renamed, err := snakeKeys(rec); err == nil { // records are valid JSON
			rec = renamed
		}
	}
	if e.wrap == nil {
		return rec
	}
	e.buf = e.wrap(e.buf[:0], rec)
	return e.buf
}

// content is a message as the server takes it: a string becomes a user
// Content with one text part; an object must be a Content with parts.
func content(v json.RawMessage, field string) (json.RawMessage, error) {
	if len(v) == 0 || string(v) == "null" {
		return nil, &core.InputError{Field: field, Msg: "is required: " + wantContent}
	}
	var text string
	if json.Unmarshal(v, &text) == nil {
		return json.Marshal(map[string]any{"role": "user", "parts": []map[string]string{{"text": text}}})
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(v, &c) != nil || c == nil {
		return nil, &core.InputError{Field: field, Msg: "must be " + wantContent}
	}
	if parts, ok := c["parts"]; !ok || len(parts) == 0 || parts[0] != '[' {
		return nil, &core.InputError{Field: field, Msg: "is a Content without a parts list"}
	}
	if _, ok := c["role"]; !ok {
		c["role"] = json.RawMessage(`"user"`)
	}
	return json.Marshal(c)
}

// streamingMode reports whether run_config asks for SSE streaming (token
// by token, with partial events): streaming_mode "SSE" in either case
// style, as a name or RunConfig's enum value.
func streamingMode(runConfig json.RawMessage) bool {
	var rc map[string]json.RawMessage
	if json.Unmarshal(runConfig, &rc) != nil {
		return false
	}
	for _, k := range []string{"streaming_mode", "streamingMode"} {
		var mode string
		if json.Unmarshal(rc[k], &mode) == nil && strings.EqualFold(strings.TrimPrefix(strings.ToUpper(mode), "STREAMINGMODE."), "sse") {
			return true
		}
	}
	return false
}

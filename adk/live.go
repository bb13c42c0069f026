package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/live"
)

// Dial opens the agent's WebSocket at path (and query) for a
// conversation: proxy's dial, with its headers, clocks and transport.
type Dial = func(ctx context.Context, path string) (live.Conn, error)

// Talk opens the agent's side of a conversation with a method whose
// handler serves conversations (adk.bidi_stream_query), once the inputs
// the table requires of its first input are there.
func (a *App) Talk(ctx context.Context, c core.Call, dial Dial) (live.Conn, error) {
	h := handlers[c.Method.Handler]
	if h.talk == nil {
		return nil, fmt.Errorf("handler %s does not serve conversations", c.Method.Handler)
	}
	cl := call{ctx: ctx, m: c.Method, name: c.Name, in: c.Input, header: c.Header}
	if err := checkRequired(cl.in, h.required); err != nil {
		return nil, err
	}
	return h.talk(a, cl, dial)
}

// bidiStreamQuery opens a conversation as AdkApp's bidi_stream_query
// does: its first input, the call's (the live door's setup input), is
// {user_id, session_id?, live_request?, run_config?}; a session is
// created for user_id when it names none, as stream_query creates one;
// then dial opens the ADK api server's /run_live WebSocket for the app,
// the user and the session, with run_config's response_modalities as its
// modalities. The side it returns writes live_request in place of the
// conversation's first frame toward the agent (the first input itself)
// and every later frame, a LiveRequest, as it is; the server's frames,
// ADK Events, come back as they are (their keys snake_case under
// adk.keys: snake). A server without /run_live (the TypeScript ADK api
// server has none) is a failure that says so.
func (a *App) bidiStreamQuery(cl call, dial Dial) (live.Conn, error) {
	ctx := cl.ctx
	user := cl.arg("user_id")
	sid, err := optionalString(cl.in, "session_id")
	if err != nil {
		return nil, err
	}
	first, err := liveRequest(cl.in.Fields["live_request"])
	if err != nil {
		return nil, err
	}
	modalities, err := responseModalities(cl.in.Fields["run_config"])
	if err != nil {
		return nil, err
	}
	if sid == "" {
		if sid, err = a.newSession(cl, user, nil, ""); err != nil {
			return nil, err
		}
	}
	q := url.Values{"app_name": {a.Name}, "user_id": {user}, "session_id": {sid}}
	if len(modalities) > 0 {
		q["modalities"] = modalities
	}
	conn, err := dial(ctx, "/run_live?"+q.Encode())
	if err != nil {
		return nil, noRunLive(err)
	}
	return &liveSide{Conn: conn, first: first, snake: a.SnakeKeys}, nil
}

// noRunLive words an ADK api server's refusal of the /run_live upgrade
// (a 404 or 405: it has no such WebSocket) so that the caller learns
// what is missing; other errors pass as they are.
func noRunLive(err error) error {
	var ue *live.UpgradeError
	if !errors.As(err, &ue) || (ue.Status != http.StatusNotFound && ue.Status != http.StatusMethodNotAllowed) {
		return err
	}
	// Short enough for a close frame's reason (123 bytes).
	return core.ReasonFailure("AGENT_STATUS", "the ADK api server serves no /run_live WebSocket (its upgrade answered "+ue.Text+")").
		WithStatus(http.StatusBadGateway)
}

// liveRequest is the first input's live_request, the agent's first
// frame: nil when there is none.
func liveRequest(v json.RawMessage) ([]byte, error) {
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	if v[0] != '{' {
		return nil, &core.InputError{Field: "live_request", Msg: "must be a LiveRequest object (content, blob, close, activity_start or activity_end)"}
	}
	return v, nil
}

// responseModalities are run_config's response_modalities (either case
// style), which /run_live takes as its modalities parameters; nil when
// run_config names none. run_config's other settings have no place in
// /run_live's request: the api server builds its own RunConfig.
func responseModalities(runConfig json.RawMessage) ([]string, error) {
	if len(runConfig) == 0 || string(runConfig) == "null" {
		return nil, nil
	}
	var rc map[string]json.RawMessage
	if json.Unmarshal(runConfig, &rc) != nil || rc == nil {
		return nil, &core.InputError{Field: "run_config", Msg: "must be a RunConfig object"}
	}
	for _, k := range []string{"response_modalities", "responseModalities"} {
		v, ok := rc[k]
		if !ok || string(v) == "null" {
			continue
		}
		var m []string
		if json.Unmarshal(v, &m) != nil {
			return nil, &core.InputError{Field: "run_config." + k, Msg: `must be a list of modalities ("TEXT", "AUDIO")`}
		}
		return m, nil
	}
	return nil, nil
}

// liveSide is the agent's side of a bidi_stream_query conversation: the
// /run_live WebSocket, whose first frame from the caller (the first input,
// which Talk read) is replaced by its live_request, or dropped when it has
// none. The relay writes toward one side from one goroutine at a time, so
// opened needs no lock.
type liveSide struct {
	live.Conn
	first  []byte // the live_request; nil: none
	opened bool   // the first input was taken
	snake  bool   // rename the Events' keys to snake_case
}

// Write sends data, or in place of the first input its live_request.
func (s *liveSide) Write(ctx context.Context, typ websocket.MessageType, data []byte) error {
	if !s.opened {
		s.opened = true
		if s.first == nil {
			return nil
		}
		typ, data = websocket.MessageText, s.first
	}
	return s.Conn.Write(ctx, typ, data)
}

// Read is the server's next frame, an Event, its keys snake_case when
// adk.keys says so.
func (s *liveSide) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	typ, data, err := s.Conn.Read(ctx)
	if err == nil && s.snake && typ == websocket.MessageText {
		if renamed, err := snakeKeys(data); err == nil {
			data = renamed
		}
	}
	return typ, data, err
}

// SetReadLimit caps the server's frames as the relay caps every side's.
func (s *liveSide) SetReadLimit(n int64) {
	if l, ok := s.Conn.(interface{ SetReadLimit(int64) }); ok {
		l.SetReadLimit(n)
	}
}

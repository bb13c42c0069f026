package adk

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sidecar-dev/sidecar/adk/adkapp"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/live"
)

// TestHandlers: every handler adkapp.Methods names has a function, unary
// or streaming as the method's mode is, and every function serves a
// method of the table.
func TestHandlers(t *testing.T) {
	served := map[string]bool{}
	for _, am := range adkapp.Methods {
		served[am.Handler] = true
		h, ok := handlers[am.Handler]
		switch streaming := config.Mode(am.Mode).Streaming(); {
		case !ok:
			t.Errorf("%s: handler %s has no function", am.Name, am.Handler)
		case config.Mode(am.Mode) == config.ModeBidi:
			if h.talk == nil {
				t.Errorf("%s (mode bidi): handler %s has no conversation's function", am.Name, am.Handler)
			}
		case streaming && h.stream == nil:
			t.Errorf("%s (mode %q): handler %s has no streaming function", am.Name, am.Mode, am.Handler)
		case !streaming && h.unary == nil:
			t.Errorf("%s (mode %q): handler %s has no unary function", am.Name, am.Mode, am.Handler)
		case !slices.Equal(h.required, am.Required):
			t.Errorf("%s: handler %s requires %v, want the table's %v", am.Name, am.Handler, h.required, am.Required)
		}
	}
	for name, h := range handlers {
		if !served[name] {
			t.Errorf("handler %s serves no method of adkapp.Methods", name)
		}
		if n := btoi(h.unary != nil) + btoi(h.stream != nil) + btoi(h.talk != nil); n != 1 {
			t.Errorf("handler %s: want one function, unary, streaming or a conversation's", name)
		}
	}
}

// TestInputErrors: each handler refuses a call whose inputs are missing
// or malformed before it reaches the server, in AdkApp's words, checking
// the required inputs first and in the table's order.
func TestInputErrors(t *testing.T) {
	const events = `{"message":"hi","user_id":"u"`
	tests := []struct {
		handler, input, want string
	}{
		{"adk.create_session", `{}`, "input.user_id: is required"},
		{"adk.create_session", `{"user_id":null}`, "input.user_id: is required"},
		{"adk.create_session", `{"user_id":""}`, "input.user_id: is required"},
		{"adk.create_session", `{"user_id":1,"session_id":2}`, "input.user_id: must be a string"},
		{"adk.create_session", `{"user_id":"u","session_id":2}`, "input.session_id: must be a string"},
		{"adk.create_session", `{"user_id":"u","state":[1]}`, "input.state: must be an object"},
		{"adk.get_session", `{"session_id":"s"}`, "input.user_id: is required"},
		{"adk.get_session", `{"user_id":"u"}`, "input.session_id: is required"},
		{"adk.get_session", `{"user_id":"u","session_id":{}}`, "input.session_id: must be a string"},
		{"adk.list_sessions", `{"user_id":true}`, "input.user_id: must be a string"},
		{"adk.delete_session", `{"user_id":"u","session_id":""}`, "input.session_id: is required"},
		{"adk.delete_session", `{"user_id":[],"session_id":""}`, "input.user_id: must be a string"},
		{"adk.add_session_to_memory", `{}`, "input.session: is required: a session object as get_session returns it"},
		{"adk.add_session_to_memory", `{"session":null}`, "input.session: is required: a session object as get_session returns it"},
		{"adk.add_session_to_memory", `{"session":"s"}`, "input.session: is required: a session object as get_session returns it"},
		{"adk.add_session_to_memory", `{"session":{"id":"s"}}`, "input.session: must carry its id and user_id (or userId)"},
		{"adk.search_memory", `{}`, "agent answered 400: m: ADK api servers have no memory search route, so the sidecar cannot serve it; serve it from the agent and map it with a method entry of your own"},
		{"adk.stream_query", `{"message":"hi"}`, "input.user_id: is required"},
		{"adk.stream_query", `{"user_id":5}`, "input.user_id: must be a string"},
		{"adk.stream_query", `{"user_id":"u"}`, "input.message: is required: a string or a Content {role, parts}"},
		{"adk.stream_query", `{"user_id":"u","message":null,"session_id":1}`, "input.message: is required: a string or a Content {role, parts}"},
		{"adk.stream_query", `{"user_id":"u","message":42}`, "input.message: must be a string or a Content {role, parts}"},
		{"adk.stream_query", `{"user_id":"u","message":{"role":"user"}}`, "input.message: is a Content without a parts list"},
		{"adk.stream_query", events + `,"session_id":1}`, "input.session_id: must be a string"},
		{"adk.stream_query", events + `,"session_events":[]}`, "input.session_events: is taken by async_stream_query only"},
		{"adk.async_stream_query", `{"user_id":"u"}`, "input.message: is required: a string or a Content {role, parts}"},
		{"adk.async_stream_query", events + `,"session_id":"s","session_events":[]}`, "input.session_events: cannot be used together with session_id"},
		{"adk.async_stream_query", events + `,"session_events":{}}`, "input.session_events: must be a list of events"},
		{"adk.streaming_agent_run_with_events", `{}`, "input.request_json: is required: a JSON string {message, user_id, session_id?, events?}"},
		{"adk.streaming_agent_run_with_events", `{"request_json":null}`, "input.request_json: is required: a JSON string {message, user_id, session_id?, events?}"},
		{"adk.streaming_agent_run_with_events", `{"request_json":"not json"}`, "input.request_json: is not a JSON object {message, user_id, session_id?, events?}"},
		{"adk.streaming_agent_run_with_events", `{"request_json":"{}"}`, "input.request_json.message: is required: a string or a Content {role, parts}"},
		{"adk.streaming_agent_run_with_events", `{"request_json":{"message":"hi","user_id":1}}`, "input.request_json.user_id: must be a string"},
		{"adk.streaming_agent_run_with_events", `{"request_json":{"message":"hi","session_id":1}}`, "input.request_json.session_id: must be a string"},
		{"adk.streaming_agent_run_with_events", `{"request_json":{"message":"hi","events":{}}}`, "input.request_json.events: must be a list of events"},
		{"adk.streaming_agent_run_with_events", `{"request_json":{"message":"hi","events":[],"session_id":"s"}}`, "input.request_json.events: seed a new session: they cannot be used together with session_id"},
		{"adk.bidi_stream_query", `{}`, "input.user_id: is required"},
		{"adk.bidi_stream_query", `{"user_id":"u","session_id":3}`, "input.session_id: must be a string"},
		{"adk.bidi_stream_query", `{"user_id":"..","session_id":"s"}`, `input.user_id: must not be "." or "..", nor hold one between "/": it names a segment of the ADK api server's path`},
		{"adk.bidi_stream_query", `{"user_id":"u","live_request":"hi"}`, "input.live_request: must be a LiveRequest object (content, blob, close, activity_start or activity_end)"},
		{"adk.bidi_stream_query", `{"user_id":"u","run_config":[]}`, "input.run_config: must be a RunConfig object"},
		{"adk.bidi_stream_query", `{"user_id":"u","run_config":{"response_modalities":"TEXT"}}`, `input.run_config.response_modalities: must be a list of modalities ("TEXT", "AUDIO")`},
	}
	a := &App{Name: "app"}
	for _, tt := range tests {
		in, err := core.ParseInput([]byte(tt.input))
		if err != nil {
			t.Fatalf("ParseInput(%s): %v", tt.input, err)
		}
		if got := serveErr(a, tt.handler, in); got != tt.want {
			t.Errorf("%s(%s) error = %q, want %q", tt.handler, tt.input, got, tt.want)
		}
	}
}

// TestWrongRoute: a handler called on the other route, or one that does
// not exist, says so.
func TestWrongRoute(t *testing.T) {
	a := &App{Name: "app"}
	in, _ := core.ParseInput([]byte(`{}`))
	tests := []struct {
		handler string
		stream  bool
		want    string
	}{
		{"adk.create_session", true, "handler adk.create_session is not served on the streaming route"},
		{"adk.stream_query", false, "handler adk.stream_query is not served on the unary route"},
		{"adk.nope", false, "handler adk.nope is not served on the unary route"},
		{"adk.nope", true, "handler adk.nope is not served on the streaming route"},
	}
	for _, tt := range tests {
		c := call{ctx: context.Background(), m: &config.Method{Handler: tt.handler}, name: "m", in: in}
		var err error
		if tt.stream {
			_, _, err = a.stream(c)
		} else {
			_, err = a.unary(c)
		}
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s (stream %v) error = %v, want %q", tt.handler, tt.stream, err, tt.want)
		}
	}
}

// serveErr calls the handler as its mode's route would and returns its
// error's text.
func serveErr(a *App, handler string, in core.Input) string {
	c := call{ctx: context.Background(), m: &config.Method{Handler: handler}, name: "m", in: in}
	var err error
	switch handler {
	case "adk.stream_query", "adk.async_stream_query", "adk.streaming_agent_run_with_events":
		_, _, err = a.stream(c)
	case "adk.bidi_stream_query": // refused before any request: a dial is a failure
		_, err = a.Talk(c.ctx, core.Call{Method: c.m, Name: c.name, Input: in}, func(context.Context, string) (live.Conn, error) {
			return nil, errors.New("dialled")
		})
	default:
		_, err = a.unary(c)
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

package adk

import (
	"encoding/json"

	"github.com/sidecar-dev/sidecar/adk/adkapp"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/live"
	"github.com/sidecar-dev/sidecar/upstream"
)

// handler serves one adk.* handler of adkapp.Methods: a unary, a
// streaming or a conversation's function, and the inputs the table
// requires of every call (of a conversation's first input).
type handler struct {
	unary    func(*App, call) (json.RawMessage, error)
	stream   func(*App, call) (core.Records, func(), error)
	talk     func(*App, call, Dial) (live.Conn, error)
	required []string
	door     bool // serves a door's input shape too (doorInput)
}

// handlers are the functions that serve adkapp.Methods' handlers, each
// with the inputs its rows require: unary and stream check those before
// the function runs, and the function checks the rest. TestHandlers
// checks that every handler the table names has a function here and
// every function a row there.
var handlers = withRequired(map[string]handler{
	"adk.create_session":                  {unary: (*App).createSession},
	"adk.get_session":                     {unary: (*App).getSession},
	"adk.list_sessions":                   {unary: (*App).listSessions},
	"adk.delete_session":                  {unary: (*App).deleteSession},
	"adk.add_session_to_memory":           {unary: (*App).addSessionToMemory},
	"adk.search_memory":                   {unary: (*App).searchMemory},
	"adk.stream_query":                    {stream: (*App).streamQuery, door: true},
	"adk.async_stream_query":              {stream: (*App).asyncStreamQuery, door: true},
	"adk.streaming_agent_run_with_events": {stream: (*App).runWithEvents},
	"adk.bidi_stream_query":               {talk: (*App).bidiStreamQuery},
})

// withRequired gives each handler the inputs adkapp.Methods requires of
// it (rows that share a handler require the same).
func withRequired(hs map[string]handler) map[string]handler {
	for _, am := range adkapp.Methods {
		if h, ok := hs[am.Handler]; ok {
			h.required = am.Required
			hs[am.Handler] = h
		}
	}
	return hs
}

// What a required input that is not a string must be, in the error for a
// call without it.
const (
	wantContent = "a string or a Content {role, parts}"
	wantSession = "a session object as get_session returns it"
	wantRequest = "a JSON string {message, user_id, session_id?, events?}"
)

// shapes are the required inputs that are not strings, with what each
// must be; the handler checks the shape of a present one.
var shapes = map[string]string{
	"message":      wantContent,
	"session":      wantSession,
	"request_json": wantRequest,
}

// checkRequired checks that in holds each of the required inputs, in
// order: a string input a non-empty string, any other one present and not
// null.
func checkRequired(in core.Input, required []string) error {
	for _, field := range required {
		want, shaped := shapes[field]
		if !shaped {
			if _, err := requiredString(in, field); err != nil {
				return err
			}
			continue
		}
		if v, ok := in.Fields[field]; !ok || string(v) == "null" {
			return &core.InputError{Field: field, Msg: "is required: " + want}
		}
	}
	return nil
}

// arg is a required string input, which checkRequired has checked.
func (c call) arg(field string) string {
	var s string
	json.Unmarshal(c.in.Fields[field], &s)
	return s
}

func requiredString(in core.Input, field string) (string, error) {
	s, err := optionalString(in, field)
	if err == nil && s == "" {
		err = &core.InputError{Field: field, Msg: "is required"}
	}
	return s, err
}

func optionalString(in core.Input, field string) (string, error) {
	v, ok := in.Fields[field]
	if !ok || string(v) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", &core.InputError{Field: field, Msg: "must be a string"}
	}
	if pathFields[field] {
		return s, checkSegment(field, s)
	}
	return s, nil
}

// pathFields are the inputs that name a segment of the ADK api server's
// paths (…/users/{user_id}/sessions/{session_id}).
var pathFields = map[string]bool{"user_id": true, "session_id": true}

// checkSegment refuses a value of field that names a path segment and
// holds a "." or ".." part once split on "/". Escaped (%2E, %2F) it stays
// one segment here, but a server that normalises %2E%2E, or a proxy that
// decodes %2F before passing the path on (nginx with a proxy_pass URI),
// would climb, as upstream refuses for a method's path fields.
func checkSegment(field, v string) error {
	if upstream.DotSegments(v) {
		return &core.InputError{Field: field, Msg: `must not be "." or "..", nor hold one between "/": it names a segment of the ADK api server's path`}
	}
	return nil
}

package adkapp

import (
	_ "embed"
	"encoding/json"
)

// Method is one of AdkApp's class methods as the sidecar serves it.
type Method struct {
	// Name is AdkApp's name for the method, the class_method callers send.
	Name string
	// Mode is its api_mode as config.Mode spells it: "" (unary), "async",
	// "stream" or "async_stream"; "bidi" for bidi_stream_query, a
	// conversation (config.ModeBidi), which the platform's classMethods
	// leave out.
	Mode string
	// Handler is the adk.* handler that serves it; a deprecated
	// synchronous name shares its async twin's handler.
	Handler string
	// Required are the inputs the handler requires of every call, in the
	// order it checks them (before any input it reads only when present).
	// Rows that share a handler require the same.
	Required []string
	// Description says what the method does, for the SDK's docstring; the
	// deprecated synchronous names say so, as AdkApp's do.
	Description string
}

// Methods are AdkApp's 14 class methods, in the order the adk preset adds
// them: the 13 the platform's classMethods declare, then the conversation
// bidi_stream_query. A handler's first row gives its default mode and its
// required inputs.
var Methods = []Method{
	{"create_session", "", "adk.create_session", userID, "Deprecated: use async_create_session. " + createSession},
	{"async_create_session", "async", "adk.create_session", userID, createSession},
	{"get_session", "", "adk.get_session", userAndSession, "Deprecated: use async_get_session. " + getSession},
	{"async_get_session", "async", "adk.get_session", userAndSession, getSession},
	{"list_sessions", "", "adk.list_sessions", userID, "Deprecated: use async_list_sessions. " + listSessions},
	{"async_list_sessions", "async", "adk.list_sessions", userID, listSessions},
	{"delete_session", "", "adk.delete_session", userAndSession, "Deprecated: use async_delete_session. " + deleteSession},
	{"async_delete_session", "async", "adk.delete_session", userAndSession, deleteSession},
	{"async_add_session_to_memory", "async", "adk.add_session_to_memory", []string{"session"},
		"Generates memories from session, an ADK Session as JSON; a session without events is read from the session service first."},
	// No ADK api server can search memory, so the handler answers every
	// call with the same 400 and requires nothing.
	{"async_search_memory", "async", "adk.search_memory", nil,
		"Searches the memories of user_id for those matching query."},
	{"stream_query", "stream", "adk.stream_query", userAndMessage,
		"Deprecated: use async_stream_query. Runs the agent on message for user_id, in session_id or a new session, and yields each event as a dict."},
	{"async_stream_query", "async_stream", "adk.async_stream_query", userAndMessage,
		"Runs the agent on message (text, or a Content as a dict) for user_id, in session_id or in a new session seeded with session_events (not both), with run_config (a RunConfig as a dict); yields each event as a dict."},
	{"streaming_agent_run_with_events", "async_stream", "adk.streaming_agent_run_with_events", []string{"request_json"},
		"Runs the agent on request_json, a JSON request (message, user_id, session_id, …) as Agentspace sends it, and yields the events; prefer async_stream_query."},
	// Its required input is that of the conversation's first input, the
	// live door's setup input.
	{"bidi_stream_query", "bidi", "adk.bidi_stream_query", userID,
		"Converses with the agent live: the first input is {user_id, session_id (else a new session), live_request, run_config}, every later one an ADK LiveRequest; yields each event as a dict."},
}

var (
	userID         = []string{"user_id"}
	userAndSession = []string{"user_id", "session_id"}
	userAndMessage = []string{"user_id", "message"}
)

const (
	createSession = "Creates a session for user_id with the initial state, named session_id when given (else the service picks an id), and returns it."
	getSession    = "Returns the session session_id of user_id; an error when there is none."
	listSessions  = "Lists the sessions of user_id."
	deleteSession = "Deletes the session session_id of user_id."
)

// parameters are the parameters schemas of AdkApp's class methods as the
// platform's Python SDK derives them from AdkApp's signatures;
// testdata/parameters.py writes the file and TestParameters checks it
// still does.
//
//go:embed parameters.json
var parameters []byte

// Parameters is the parameters schema of the method called name, or nil.
// Each call decodes its own copy, so a caller may change it.
func Parameters(name string) map[string]any {
	var all map[string]map[string]any
	if err := json.Unmarshal(parameters, &all); err != nil {
		return nil
	}
	return all[name]
}

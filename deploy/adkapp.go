package deploy

import (
	_ "embed"
	"encoding/json"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
)

// adkAppParameters are the parameters schemas of AdkApp's class methods
// as the platform's Python SDK derives them from AdkApp's signatures;
// testdata/adkapp_schema.py writes the file and TestADKAppParameters
// checks it still does.
//
//go:embed adkapp.json
var adkAppParameters []byte

// adkAppDescriptions say what each AdkApp method does, for the SDK's
// docstrings (the deprecated synchronous names say so, as AdkApp's do).
var adkAppDescriptions = map[string]string{
	"create_session":                  "Deprecated: use async_create_session. " + createSession,
	"async_create_session":            createSession,
	"get_session":                     "Deprecated: use async_get_session. " + getSession,
	"async_get_session":               getSession,
	"list_sessions":                   "Deprecated: use async_list_sessions. " + listSessions,
	"async_list_sessions":             listSessions,
	"delete_session":                  "Deprecated: use async_delete_session. " + deleteSession,
	"async_delete_session":            deleteSession,
	"async_add_session_to_memory":     "Generates memories from session, an ADK Session as JSON; a session without events is read from the session service first.",
	"async_search_memory":             "Searches the memories of user_id for those matching query.",
	"stream_query":                    "Deprecated: use async_stream_query. Runs the agent on message for user_id, in session_id or a new session, and yields each event as a dict.",
	"async_stream_query":              "Runs the agent on message (text, or a Content as a dict) for user_id, in session_id or in a new session seeded with session_events (not both), with run_config (a RunConfig as a dict); yields each event as a dict.",
	"streaming_agent_run_with_events": "Runs the agent on request_json, a JSON request (message, user_id, session_id, …) as Agentspace sends it, and yields the events; prefer async_stream_query.",
}

const (
	createSession = "Creates a session for user_id with the initial state, named session_id when given (else the service picks an id), and returns it."
	getSession    = "Returns the session session_id of user_id; an error when there is none."
	listSessions  = "Lists the sessions of user_id."
	deleteSession = "Deletes the session session_id of user_id."
)

// adkAppSpec fills in AdkApp's description and parameters for a method
// served by an adk.* handler: those of the AdkApp method of the same name
// and handler, else those of the (non-deprecated) method the handler
// serves. The map's own description or parameters win.
func adkAppSpec(m *config.Method, cm *ClassMethod) {
	if !strings.HasPrefix(m.Handler, "adk.") {
		return
	}
	name := ""
	for _, am := range config.ADKMethods {
		if am.Handler != m.Handler {
			continue
		}
		if am.Name == m.Name {
			name = am.Name
			break
		}
		if name == "" || (strings.HasPrefix(am.Name, "async_") && !strings.HasPrefix(name, "async_")) {
			name = am.Name
		}
	}
	if name == "" {
		return
	}
	if cm.Description == "" {
		cm.Description = adkAppDescriptions[name]
	}
	if cm.Parameters == nil {
		var all map[string]map[string]any
		if err := json.Unmarshal(adkAppParameters, &all); err == nil {
			cm.Parameters = all[name]
		}
	}
}

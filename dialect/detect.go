package dialect

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
)

// Detect places a reply's dialect from its header, the SSE event type of
// its first record and that record (PROTOCOLS.md §2.9's table), or
// returns DialectRaw when it cannot.
func Detect(h http.Header, event []byte, rec []byte) config.Dialect {
	if h.Get("X-Vercel-Ai-Ui-Message-Stream") != "" || h.Get("X-Vercel-Ai-Data-Stream") != "" {
		return config.DialectVercelUI
	}
	if mt, _, _ := mime.ParseMediaType(h.Get("Content-Type")); strings.HasPrefix(mt, "text/") && mt != "text/event-stream" {
		if _, ok := outputText(rec); ok {
			return dialectText
		}
	}
	ev := string(event)
	switch {
	case strings.HasPrefix(ev, "response."):
		return config.DialectOpenAIResponses
	case ev == "metadata" || langgraphEvents[ev] || strings.Contains(h.Get("Content-Location"), "/runs/"):
		return config.DialectLangGraph
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(rec, &obj) != nil {
		return config.DialectRaw
	}
	var typ, object string
	json.Unmarshal(obj["type"], &typ)
	json.Unmarshal(obj["object"], &object)
	switch {
	case object == "chat.completion.chunk":
		return config.DialectOpenAIChat
	case strings.HasPrefix(typ, "response."):
		return config.DialectOpenAIResponses
	case agentsEvents[typ]:
		return config.DialectOpenAIAgents
	case obj["jsonrpc"] != nil && (obj["error"] != nil || a2aResultShaped(obj["result"])):
		return config.DialectA2A
	case len(obj) == 1 && a2aWrapper(obj):
		return config.DialectA2A
	case aguiTypes[typ]:
		return config.DialectAGUI
	case vercelTypes[typ]:
		return config.DialectVercelUI
	case obj["invocationId"] != nil || obj["invocation_id"] != nil || obj["author"] != nil && isObject(obj["content"]):
		return config.DialectADK
	}
	return config.DialectRaw
}

// a2aResultShaped reports whether v is an A2A streaming result: a 0.3
// result with its kind, or a 1.0 StreamResponse wrapper.
func a2aResultShaped(v json.RawMessage) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil {
		return false
	}
	var kind string
	json.Unmarshal(obj["kind"], &kind)
	switch kind {
	case "task", "message", "status-update", "artifact-update":
		return true
	}
	return len(obj) == 1 && a2aWrapper(obj)
}

// a2aWrapper reports whether obj, of one key, is an A2A 1.0 StreamResponse:
// the key a wrapper's and its value shaped as that wrapper holds (a
// record {"message": "hello"} is not one).
func a2aWrapper(obj map[string]json.RawMessage) bool {
	for k, v := range obj {
		var inner map[string]json.RawMessage
		if json.Unmarshal(v, &inner) != nil {
			return false
		}
		switch k {
		case "message":
			return inner["parts"] != nil && (inner["role"] != nil || inner["messageId"] != nil)
		case "task":
			return inner["id"] != nil && inner["status"] != nil
		case "statusUpdate":
			return inner["status"] != nil
		case "artifactUpdate":
			return inner["artifact"] != nil
		}
	}
	return false
}

func isObject(v json.RawMessage) bool { return len(v) > 0 && v[0] == '{' }

// agentsEvents are the OpenAI Agents SDK's RunStreamEvent types.
var agentsEvents = map[string]bool{
	"raw_model_stream_event": true, "run_item_stream_event": true, "agent_updated_stream_event": true,
}

// langgraphEvents are the SSE event types of a LangGraph run stream.
var langgraphEvents = map[string]bool{
	"messages": true, "messages/partial": true, "messages/complete": true, "messages/metadata": true,
	"updates": true, "values": true,
}

// aguiTypes are the AG-UI event types a run can start with.
var aguiTypes = map[string]bool{
	"RUN_STARTED": true, "TEXT_MESSAGE_START": true, "TEXT_MESSAGE_CONTENT": true, "TEXT_MESSAGE_CHUNK": true,
	"TOOL_CALL_START": true, "STATE_SNAPSHOT": true, "MESSAGES_SNAPSHOT": true, "STEP_STARTED": true,
	"RUN_ERROR": true, "RAW": true, "CUSTOM": true,
}

// vercelTypes are the UI message stream chunk types a stream can start
// with, for a reply whose header was lost on the way.
var vercelTypes = map[string]bool{
	"start": true, "start-step": true, "text-start": true, "text-delta": true, "reasoning-start": true,
	"tool-input-start": true, "tool-input-available": true, "error": true, "message-metadata": true,
}

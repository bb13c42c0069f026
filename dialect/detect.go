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
	case obj["jsonrpc"] != nil:
		return config.DialectA2A
	case len(obj) == 1 && (obj["statusUpdate"] != nil || obj["artifactUpdate"] != nil || obj["task"] != nil || obj["message"] != nil):
		return config.DialectA2A
	case aguiTypes[typ]:
		return config.DialectAGUI
	case vercelTypes[typ]:
		return config.DialectVercelUI
	case obj["author"] != nil || obj["invocationId"] != nil || obj["invocation_id"] != nil:
		return config.DialectADK
	}
	return config.DialectRaw
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

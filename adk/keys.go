package adk

import (
	"bytes"
	"encoding/json"

	"github.com/sidecar-dev/sidecar/rawjson"
)

// userData are the keys whose values belong to the agent or the user, not
// to ADK's schema: their keys are data (state keys, tool arguments,
// artifact names, function call ids) and are never renamed.
var userData = map[string]bool{
	"state": true, "stateDelta": true, "state_delta": true,
	"artifactDelta": true, "artifact_delta": true,
	"args": true, "response": true,
	"customMetadata": true, "custom_metadata": true,
	"requestedAuthConfigs": true, "requested_auth_configs": true,
	"requestedToolConfirmations": true, "requested_tool_confirmations": true,
}

// snakeKeys rewrites the field names of an ADK session or event from the
// api servers' camelCase to AdkApp's snake_case ("invocationId" →
// "invocation_id"), leaving user data alone. Numbers are kept as written.
// Output keys come out sorted.
func snakeKeys(v []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return json.Marshal(renameKeys(tree))
}

func renameKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if userData[k] {
				out[rawjson.Snake(k)] = e
				continue
			}
			out[rawjson.Snake(k)] = renameKeys(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = renameKeys(e)
		}
		return v
	}
	return v
}

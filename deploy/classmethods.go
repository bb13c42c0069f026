package deploy

import "github.com/sidecar-dev/sidecar/config"

// ClassMethod is one entry of the deploy request's spec.classMethods.
type ClassMethod struct {
	Name    string      `json:"name"`
	APIMode config.Mode `json:"api_mode"`
	// Description and Parameters are what the platform's SDK reads as the
	// method's docstring and argument schema; left out when not known.
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	// A2AAgentCard is the agent card, as a JSON string, on the entries of
	// api_mode "a2a_extension" (ModeA2A): where Google's SDK reads it.
	A2AAgentCard string `json:"a2a_agent_card,omitempty"`
}

// ClassMethods is the spec.classMethods list for cfg: every named method
// with its api_mode, description and parameters, in file order. A method
// served by an adk.* handler (the ADK preset's) has AdkApp's description
// and parameters unless the map gives its own. A "*" method serves names
// the sidecar cannot know in advance, so it is not listed; declare those
// names explicitly to make them callable through the platform's SDK.
func ClassMethods(cfg *config.Config) []ClassMethod {
	out := make([]ClassMethod, 0, len(cfg.Methods))
	for _, m := range cfg.Methods {
		if m.Name == "*" || m.Mode == config.ModeBidi {
			// A bidi method is reached through the WebSocket passthrough,
			// not a class method: the container side of the platform's
			// bidi_stream route is unpublished.
			continue
		}
		cm := ClassMethod{Name: m.Name, APIMode: m.Mode, Description: m.Description, Parameters: m.Parameters}
		adkAppSpec(m, &cm)
		out = append(out, cm)
	}
	return out
}

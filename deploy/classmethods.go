package deploy

import "github.com/sidecar-dev/sidecar/config"

// ClassMethods is the spec.classMethods list for cfg: every named method
// with its api_mode, description and parameters, in file order. A method
// served by an adk.* handler (the ADK preset's) has AdkApp's description
// and parameters unless the map gives its own. A "*" method serves names
// the sidecar cannot know in advance, so it is not listed; declare those
// names explicitly to make them callable through the platform's SDK.
func ClassMethods(cfg *config.Config) []config.ClassMethod {
	out := make([]config.ClassMethod, 0, len(cfg.Methods))
	for _, m := range cfg.Methods {
		if m.Name == "*" {
			continue
		}
		cm := config.ClassMethod{Name: m.Name, APIMode: m.Mode, Description: m.Description, Parameters: m.Parameters}
		adkAppSpec(m, &cm)
		out = append(out, cm)
	}
	return out
}

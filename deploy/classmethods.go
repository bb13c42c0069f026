package deploy

import "github.com/sidecar-dev/sidecar/config"

// ClassMethods is the spec.classMethods list for cfg: every named method
// with its api_mode, in file order. A "*" method serves names the sidecar
// cannot know in advance, so it is not listed; declare those names
// explicitly to make them callable through the platform's SDK.
func ClassMethods(cfg *config.Config) []config.ClassMethod {
	out := make([]config.ClassMethod, 0, len(cfg.Methods))
	for _, m := range cfg.Methods {
		if m.Name == "*" {
			continue
		}
		out = append(out, config.ClassMethod{Name: m.Name, APIMode: m.Mode})
	}
	return out
}

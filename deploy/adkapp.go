package deploy

import (
	"strings"

	"github.com/sidecar-dev/sidecar/adk/adkapp"
	"github.com/sidecar-dev/sidecar/config"
)

// adkAppSpec fills in AdkApp's description and parameters for a method
// served by an adk.* handler: those of the AdkApp method of the same name
// and handler, else those of the (non-deprecated) method the handler
// serves. The map's own description or parameters win.
func adkAppSpec(m *config.Method, cm *ClassMethod) {
	if !strings.HasPrefix(m.Handler, "adk.") {
		return
	}
	var spec *adkapp.Method
	for i, am := range adkapp.Methods {
		if am.Handler != m.Handler {
			continue
		}
		if am.Name == m.Name {
			spec = &adkapp.Methods[i]
			break
		}
		if spec == nil || (strings.HasPrefix(am.Name, "async_") && !strings.HasPrefix(spec.Name, "async_")) {
			spec = &adkapp.Methods[i]
		}
	}
	if spec == nil {
		return
	}
	if cm.Description == "" {
		cm.Description = spec.Description
	}
	if cm.Parameters == nil {
		cm.Parameters = adkapp.Parameters(spec.Name)
	}
}

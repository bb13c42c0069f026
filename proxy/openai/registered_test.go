package openai_test

import (
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/doors"
	"github.com/sidecar-dev/sidecar/proxy/openai"
)

// TestRegistered: the door is in the program's list, with its Probe (so
// TestHostileDoors covers it) and its Example (sidecar dev's playground
// lists it).
func TestRegistered(t *testing.T) {
	for _, d := range doors.All {
		if d.Name != openai.Name {
			continue
		}
		if d.Probe.Request == nil || d.Probe.Refusal == nil || d.Probe.Errors == nil || d.Example == nil {
			t.Fatalf("the openai door is registered without its Probe or Example")
		}
		if ex := d.Example("http://localhost:8091", nil); !strings.Contains(ex.Curl, "http://localhost:8091/v1/chat/completions") || ex.Client == "" {
			t.Errorf("Example = %+v", ex)
		}
		return
	}
	t.Errorf("doors.All has no %s door: register it (proxy/doors.All)", openai.Name)
}

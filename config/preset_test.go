package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/adk/adkapp"
)

func TestPresetADK(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(`
upstream: {url: "http://127.0.0.1:8000"}
preset: adk
adk: {app: weather}
methods:
  get_session: {call: "GET /custom/{session_id}"}
  my_tool: {call: POST /tool}
  "*": {}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var names []string
	for _, m := range c.Methods {
		names = append(names, m.Name)
	}
	want := "get_session my_tool create_session async_create_session async_get_session list_sessions async_list_sessions delete_session async_delete_session async_add_session_to_memory async_search_memory stream_query async_stream_query streaming_agent_run_with_events bidi_stream_query *"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("methods = %s\nwant      %s", got, want)
	}
	if m := c.Lookup("get_session", false); m.Handler != "" || m.Path != "/custom/{session_id}" {
		t.Errorf("a declared method was replaced by the preset: %+v", m)
	}
	if m := c.Lookup("streaming_agent_run_with_events", true); m == nil || m.Handler != "adk.streaming_agent_run_with_events" || m.Mode != ModeAsyncStream {
		t.Errorf("streaming_agent_run_with_events = %+v", m)
	}
	if m := c.Lookup("async_search_memory", false); m == nil || m.Handler != "adk.search_memory" || m.Mode != ModeAsync {
		t.Errorf("async_search_memory = %+v", m)
	}
	if c.ADK.App != "weather" {
		t.Errorf("ADK.App = %q", c.ADK.App)
	}

	// The expanded map is itself a valid config that parses to the same methods.
	again, err := Parse("expanded.yaml", c.Expanded())
	if err != nil {
		t.Fatalf("Parse(Expanded()) error: %v\n%s", err, c.Expanded())
	}
	if len(again.Methods) != len(c.Methods) {
		t.Fatalf("expanded map has %d methods, want %d", len(again.Methods), len(c.Methods))
	}
	for i, m := range again.Methods {
		o := c.Methods[i]
		if m.Name != o.Name || m.Mode != o.Mode || m.Handler != o.Handler || m.Path != o.Path || m.AllRoutes != o.AllRoutes {
			t.Errorf("expanded method %d = %+v, want %+v", i, m, o)
		}
	}
}

func TestPresetADKOnly(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\npreset: adk\nadk: {app: weather}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(c.Methods) != 14 {
		t.Errorf("preset alone gives %d methods, want 14", len(c.Methods))
	}
	if m := c.Bidi("bidi_stream_query"); m == nil || m.Handler != "adk.bidi_stream_query" {
		t.Errorf("Bidi(bidi_stream_query) = %+v, want the bidi method of handler adk.bidi_stream_query", m)
	}
}

// TestPresetADKModes: every mode in adkapp.Methods is one config knows.
func TestPresetADKModes(t *testing.T) {
	for _, am := range adkapp.Methods {
		if !slices.Contains(modes, am.Mode) && am.Mode != string(ModeBidi) {
			t.Errorf("adkapp.Methods: %s has mode %q (want %s)", am.Name, am.Mode, oneOf(modes, true))
		}
	}
}

// TestServesADK: the ADK handlers serve methods with the preset or a
// method naming one, never because adk.app is set: adk.app alone names
// the author of emit: adk events.
func TestServesADK(t *testing.T) {
	tests := []struct {
		yaml string
		want bool
	}{
		{"adk: {app: weather}\nmethods: {q: {mode: stream, emit: adk}}\n", false},
		{"methods: {q: {}}\n", false},
		{"preset: adk\nadk: {app: weather}\n", true},
		{"adk: {app: weather}\nmethods: {s: {handler: adk.create_session}}\n", true},
	}
	for _, tt := range tests {
		c, err := Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\n"+tt.yaml))
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.yaml, err)
		}
		if got := c.ServesADK(); got != tt.want {
			t.Errorf("ServesADK() with %q = %v, want %v", tt.yaml, got, tt.want)
		}
	}
}

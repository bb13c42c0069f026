package config

import (
	"strings"
	"testing"
)

// TestKeepAlive: keep_alive_probe decodes path and max_seconds (3600 by
// default), is off without the section, and is printed back.
func TestKeepAlive(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       KeepAlive
	}{
		{"off", minimal, KeepAlive{}},
		{"both", minimal + "keep_alive_probe: {path: /busy, max_seconds: 600}\n", KeepAlive{Path: "/busy", MaxSeconds: 600, Line: 3}},
		{"default max", minimal + "keep_alive_probe:\n  path: /agent/is_busy\n", KeepAlive{Path: "/agent/is_busy", MaxSeconds: MaxKeepAliveSeconds, Line: 3}},
		{"the maximum", minimal + "keep_alive_probe: {path: /busy, max_seconds: 3600}\n", KeepAlive{Path: "/busy", MaxSeconds: 3600, Line: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("sidecar.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if c.KeepAlive != tt.want {
				t.Errorf("Parse(%q).KeepAlive = %+v, want %+v", tt.yaml, c.KeepAlive, tt.want)
			}
			// The printed map, parsed again, keeps the probe.
			again, err := Parse("printed.yaml", c.Expanded())
			if err != nil {
				t.Fatalf("the expanded map: %v\n%s", err, c.Expanded())
			}
			if again.KeepAlive.Path != tt.want.Path || again.KeepAlive.MaxSeconds != tt.want.MaxSeconds {
				t.Errorf("expanded and parsed again: %+v, want %+v\n%s", again.KeepAlive, tt.want, c.Expanded())
			}
		})
	}
}

// TestKeepAliveProblems: a path that is not one of its own (a platform
// route, not clean, not absolute), a max_seconds out of the platform's
// range, an unknown key, a missing path and a platform door turned off
// are each refused, with the line.
func TestKeepAliveProblems(t *testing.T) {
	tests := []struct{ name, section, want string }{
		{"relative", "{path: busy}", `sidecar.yaml:3: keep_alive_probe.path: "busy" does not start with "/"`},
		{"healthz", "{path: /healthz}", `sidecar.yaml:3: keep_alive_probe.path: "/healthz" is one of the platform listener's health routes`},
		{"health", "{path: /health}", `"/health" is one of the platform listener's health routes`},
		{"root", "{path: /}", `"/" is one of the platform listener's health routes`},
		{"contract route", "{path: /api/reasoning_engine}", `"/api/reasoning_engine" is under /api/, where the platform's contract routes are`},
		{"stream route", "{path: /api/stream_reasoning_engine}", `is under /api/`},
		{"bidi route", "{path: /api/bidi_reasoning_engine}", `is under /api/`},
		{"api itself", "{path: /api}", `"/api" is under /api/`},
		{"not clean", "{path: /busy/}", `"/busy/" is not a clean path (want "/busy")`},
		{"dot segments", "{path: /a/../healthz}", `is not a clean path`},
		{"double slash", "{path: //busy}", `is not a clean path`},
		{"query", "{path: '/busy?x=1'}", `want a plain path`},
		{"escape", "{path: /bu%73y}", `want a plain path`},
		{"space", "{path: '/b usy'}", `want a plain path`},
		{"zero", "{path: /busy, max_seconds: 0}", `sidecar.yaml:3: keep_alive_probe.max_seconds: 0 is out of range (want 1 to 3600, the platform's maximum)`},
		{"over the maximum", "{path: /busy, max_seconds: 3601}", `3601 is out of range`},
		{"not a number", "{path: /busy, max_seconds: 1h}", `keep_alive_probe.max_seconds: "1h" is not a whole number`},
		{"unknown key", "{path: /busy, port: 8081}", `keep_alive_probe.port: unknown key (want path or max_seconds)`},
		{"no path", "{max_seconds: 60}", `sidecar.yaml:3: keep_alive_probe.path: missing (want a path such as /busy)`},
		{"not a mapping", "/busy", `sidecar.yaml:3: keep_alive_probe: want a mapping with path and max_seconds`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := minimal + "keep_alive_probe: " + tt.section + "\n"
			_, err := Parse("sidecar.yaml", []byte(yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %v, want a problem containing %q", yaml, err, tt.want)
			}
		})
	}

	yaml := minimal + "protocols: {agent_platform: {enabled: false}}\nkeep_alive_probe: {path: /busy}\n"
	_, err := Parse("sidecar.yaml", []byte(yaml))
	want := `sidecar.yaml:4: keep_alive_probe: the platform's listener serves the probe, and protocols.agent_platform is off`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Parse(%q) = %v, want a problem containing %q", yaml, err, want)
	}
}

package livedoor

import (
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/agentcore"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

const sectionHead = `upstream: {url: "http://127.0.0.1:8000"}
` + liveMethods

// TestSection: the section's keys, its defaults (listen :8082, framing
// platform), and validate --print writing it so that it parses back the
// same.
func TestSection(t *testing.T) {
	for _, tt := range []struct {
		section, listen, mount, framing string
	}{
		{`{method: talk}`, ":8082", "", FramingPlatform},
		{`{mount: /live, method: talk}`, ":8082", "/live", FramingPlatform},
		{`{listen: ":9100", method: fields, framing: raw}`, ":9100", "", FramingRaw},
	} {
		c, err := config.Parse("sidecar.yaml", []byte(sectionHead+"protocols:\n  live: "+tt.section+"\n"), Protocol.Kind)
		if err != nil {
			t.Fatalf("%s: %v", tt.section, err)
		}
		d := c.Protocols.Door(Name)
		o := Protocol.Options(d, core.Host{})
		if d.Listen != tt.listen || d.Mount != tt.mount || o.Framing != tt.framing {
			t.Errorf("%s: listen %q, mount %q, framing %q; want %q, %q, %q", tt.section, d.Listen, d.Mount, o.Framing, tt.listen, tt.mount, tt.framing)
		}
		again, err := config.Parse("printed.yaml", c.Expanded(), Protocol.Kind)
		if err != nil || string(again.Expanded()) != string(c.Expanded()) {
			t.Errorf("%s: the printed map %v:\n%s", tt.section, err, c.Expanded())
		}
	}
}

// TestSectionProblems: each mistake in protocols.live is reported at its
// line: a method that is not bidi, a framing that is not one, a mount
// that collides with another owner of the platform's listener (the
// contract's /api/…, AgentCore's /ws mounted at "/").
func TestSectionProblems(t *testing.T) {
	for _, tt := range []struct{ protocols, want string }{
		{"  live: {method: query}", `protocols.live.method: "query" is not a bidi method of the map`},
		{"  live: {method: nope}", `protocols.live.method: "nope" is not a bidi method of the map`},
		{"  live: {method: talk, framing: json}", `protocols.live.framing: "json" is not a framing (want platform, the platform's bidi framing, or raw)`},
		{"  live: {method: talk, bogus: 1}", `protocols.live.bogus: unknown key`},
		{"  live: {}", `protocols.live.method: missing`},
		{"  live: {mount: /api/live, method: talk}", `protocols.live.mount: "/api/live" claims /api/live/…, which the platform's contract (/api/…) serves`},
		{"  agentcore: {mount: /, method: query, ws: talk}\n  live: {mount: /ws, method: talk}", `protocols.live.mount: "/ws" claims /ws/…, which protocols.agentcore.mount "/" (line 8) serves`},
		{"  live: {mount: /ws, method: talk}\n  agentcore: {mount: /, method: query, ws: talk}", `protocols.agentcore.mount: "/" claims /ws, which protocols.live.mount "/ws" (line 8) serves`},
	} {
		_, err := config.Parse("sidecar.yaml", []byte(sectionHead+"protocols:\n"+tt.protocols+"\n"), agentcore.Protocol.Kind, Protocol.Kind)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("protocols:\n%s\nerror = %v, want one containing %q", tt.protocols, err, tt.want)
		}
	}
}

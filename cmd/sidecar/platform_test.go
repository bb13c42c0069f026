package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// envAgent is an agent that answers every POST with the named variables
// of its environment, as it sees them.
const envAgent = `import json, os
from http.server import BaseHTTPRequestHandler, HTTPServer

NAMES = %s

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({n: os.environ.get(n) for n in NAMES}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
`

// TestPlatformVariables: on Agent Platform (its variables in the
// sidecar's environment), the agent the sidecar starts sees every one of
// them as the platform set it, a mounted A2A door's card, asked through
// the platform's listener, advertises the platform's passthrough URL of
// its mount, and no line the sidecar writes carries their values. With a
// value that is not a plain token, the card keeps the address it was
// asked on and the sidecar warns once, naming the variable and not its
// value.
func TestPlatformVariables(t *testing.T) {
	platform := map[string]string{
		"GOOGLE_CLOUD_AGENT_ENGINE_ID":          "8675309123",
		"GOOGLE_CLOUD_AGENT_ENGINE_LOCATION":    "xq-west9",
		"GOOGLE_CLOUD_PROJECT":                  "sidecar-proj-q7",
		"GOOGLE_CLOUD_LOCATION":                 "xq-west9",
		"GOOGLE_CLOUD_AGENT_ENGINE_REVISION_ID": "rev-5551212",
		"K_REVISION":                            "krev-31337",
		"GOOGLE_APPLICATION_CREDENTIALS":        "/var/creds-4242.json",
	}
	const passthrough = "https://xq-west9-aiplatform.googleapis.com/reasoningEngines/v1/projects/sidecar-proj-q7/locations/xq-west9/reasoningEngines/8675309123/api/a2a"
	tests := []struct {
		name    string
		id      string // GOOGLE_CLOUD_AGENT_ENGINE_ID
		card    string // the card's url; "" for the platform listener's own, then /a2a
		warning bool
	}{
		{"on the platform", platform["GOOGLE_CLOUD_AGENT_ENGINE_ID"], passthrough, false},
		{"an id that is no token", "86/../75?x", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{}
			for k, v := range platform {
				vars[k] = v
			}
			vars["GOOGLE_CLOUD_AGENT_ENGINE_ID"] = tt.id
			var names, env []string
			for k, v := range vars {
				names, env = append(names, k), append(env, k+"="+v)
			}
			quoted, _ := json.Marshal(names)
			script := filepath.Join(t.TempDir(), "envagent.py")
			if err := os.WriteFile(script, fmt.Appendf(nil, envAgent, quoted), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := fmt.Sprintf("upstream: {url: \"http://127.0.0.1:%d\", ready: {path: /health}}\nmethods:\n  env: {call: POST /env}\n"+
				"protocols:\n  a2a: {mount: /a2a, method: env}\n", agentPort(t))
			p := startProc(t, cfg, env, "--", "python3", script)
			p.waitHealth(200)

			// The agent's view of the platform's variables.
			r := post(t, p.base+"/api/reasoning_engine", `{"class_method":"env","input":{}}`)
			var seen struct{ Output map[string]string }
			if err := json.Unmarshal([]byte(r.body), &seen); err != nil || r.status != 200 {
				t.Fatalf("env: %d %s", r.status, r.body)
			}
			for k, v := range vars {
				if seen.Output[k] != v {
					t.Errorf("the agent sees %s=%q, want %q as the platform set it", k, seen.Output[k], v)
				}
			}

			// The card, through the mount on the platform's listener.
			resp, err := testClient.Get(p.base + "/a2a/.well-known/agent-card.json")
			if err != nil {
				t.Fatal(err)
			}
			var c struct {
				URL                 string
				SupportedInterfaces []struct{ URL string }
			}
			err = json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
			want := tt.card
			if want == "" {
				want = p.base + "/a2a"
			}
			if err != nil || c.URL != want || len(c.SupportedInterfaces) == 0 || c.SupportedInterfaces[0].URL != want {
				t.Errorf("the card's url = %q (%+v, %v), want %q", c.URL, c.SupportedInterfaces, err, want)
			}
			// A call through the door, for its log line.
			a := post(t, p.base+"/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`)
			if a.status != 200 || !strings.Contains(a.body, `"result"`) {
				t.Errorf("message/send through the mount: %d %s", a.status, a.body)
			}

			p.cmd.Process.Signal(os.Interrupt)
			if code := p.wait(15 * time.Second); code != 0 {
				t.Errorf("exit code %d", code)
			}
			out := p.out()
			for k, v := range vars {
				if strings.Contains(out, v) {
					t.Errorf("the sidecar's output carries %s's value %q:\n%s", k, v, out)
				}
			}
			warnings := strings.Count(out, `"platform variables ignored"`)
			if tt.warning && (warnings != 1 || !strings.Contains(out, "GOOGLE_CLOUD_AGENT_ENGINE_ID is not a plain token")) {
				t.Errorf("%d warnings naming GOOGLE_CLOUD_AGENT_ENGINE_ID, want 1:\n%s", warnings, out)
			}
			if !tt.warning && warnings != 0 {
				t.Errorf("a warning with the platform's variables all plain:\n%s", out)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/doors"
)

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLI(args []string, env map[string]string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	code = 0
	if err != nil {
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
			errOut.WriteString(ee.msg)
		} else {
			errOut.WriteString(err.Error())
		}
	}
	return out.String(), errOut.String(), code
}

const validConfig = `upstream: {url: "unix:///run/agent.sock"}
methods:
  query: {}
  get_session: {mode: async, call: "GET /sessions/{session_id}"}
  stream_query: {mode: stream}
  "*": {}
`

func TestValidate(t *testing.T) {
	good := writeConfig(t, validConfig)
	bad := writeConfig(t, `upstream: {url: "ftp://x"}
methods:
  query: {mode: sync, colour: red}
  stream_query: {mode: stream, output: as_is}
`)
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantOut  []string
	}{
		{"valid", []string{"validate", "--config", good}, nil, 0, []string{"ok", "3 methods", "unix:///run/agent.sock"}},
		{"valid via env", []string{"validate"}, map[string]string{"SIDECAR_CONFIG": good}, 0, []string{"ok"}},
		{"every problem with its line", []string{"validate", "--config", bad}, nil, 1,
			[]string{":1:", "upstream.url", ":3:", "mode", "colour", ":4:", "output"}},
		{"missing file", []string{"validate", "--config", filepath.Join(t.TempDir(), "nope.yaml")}, nil, 1, []string{"nope.yaml"}},
		{"unknown flag", []string{"validate", "--nope"}, nil, 2, []string{"flag provided but not defined", "Usage"}},
		{"unknown command", []string{"frobnicate"}, nil, 2, []string{`unknown command "frobnicate"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(tt.args, tt.env)
			if code != tt.wantCode {
				t.Fatalf("sidecar %v exit = %d, want %d\nstdout: %s\nstderr: %s", tt.args, code, tt.wantCode, out, errOut)
			}
			all := out + errOut
			for _, w := range tt.wantOut {
				if !strings.Contains(all, w) {
					t.Errorf("sidecar %v output %q lacks %q", tt.args, all, w)
				}
			}
		})
	}
}

func TestClassMethods(t *testing.T) {
	out, errOut, code := runCLI([]string{"class-methods", "--config", writeConfig(t, validConfig)}, nil)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("class-methods output %q is not a JSON array: %v", out, err)
	}
	want := []map[string]any{
		{"name": "query", "api_mode": ""},
		{"name": "get_session", "api_mode": "async"},
		{"name": "stream_query", "api_mode": "stream"},
	}
	if len(got) != len(want) {
		t.Fatalf("class-methods = %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != 2 || got[i]["name"] != want[i]["name"] || got[i]["api_mode"] != want[i]["api_mode"] {
			t.Errorf("entry %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"validate", "--help"}} {
		out, _, code := runCLI(args, nil)
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "class-methods") {
			t.Errorf("sidecar %v = %d %q, want usage on stdout", args, code, out)
		}
	}
	out, _, code := runCLI([]string{"version"}, nil)
	if code != 0 || !strings.HasPrefix(out, "sidecar ") {
		t.Errorf("sidecar version = %d %q", code, out)
	}
}

func TestListenAddr(t *testing.T) {
	tests := []struct{ flag, port, configured, want, from string }{
		{"", "", "", ":8080", ""},
		{"", "", "127.0.0.1:9000", "127.0.0.1:9000", ""},
		{"", "7000", "127.0.0.1:9000", "0.0.0.0:7000", "$PORT=7000"},
		{"127.0.0.1:1", "7000", ":9000", "127.0.0.1:1", "--listen"},
	}
	for _, tt := range tests {
		if got, from := listenAddr(tt.flag, tt.port, tt.configured); got != tt.want || from != tt.from {
			t.Errorf("listenAddr(%q, %q, %q) = %q, %q, want %q, %q", tt.flag, tt.port, tt.configured, got, from, tt.want, tt.from)
		}
	}
}

// TestPortFromShell: $PORT set in the shell for the agent (a Node habit)
// is upstream.url's port: sidecar dev, validate and serve refuse it
// saying the port came from $PORT and the address each would listen on
// (dev: 127.0.0.1, serve: 0.0.0.0).
func TestPortFromShell(t *testing.T) {
	cfg := writeConfig(t, "upstream: {url: \"http://127.0.0.1:3000\"}\nmethods: {q: {}}\n")
	env := map[string]string{"PORT": "3000"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--config", cfg, "--dev-listen", "127.0.0.1:0"}, `sidecar: the agent_platform listener 127.0.0.1:3000 (from $PORT=3000) is the agent's address, upstream.url "http://127.0.0.1:3000": every call would come back to the sidecar; $PORT is the sidecar's port, not the agent's: unset it or give --listen`},
		{[]string{"--config", cfg}, `sidecar: the agent_platform listener 0.0.0.0:3000 (from $PORT=3000) is the agent's address`},
		{[]string{"validate", "--config", cfg}, `the agent_platform listener 0.0.0.0:3000 (from $PORT=3000) is the agent's address`},
	}
	for _, tt := range tests {
		_, errOut, code := runCLI(tt.args, env)
		if code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("PORT=3000 sidecar %s = %d %q, want exit 1 with %q", strings.Join(tt.args, " "), code, errOut, tt.want)
		}
	}
	// Without $PORT, dev and validate go past it.
	if _, errOut, code := runCLI([]string{"validate", "--config", cfg}, nil); code != 0 {
		t.Errorf("sidecar validate without PORT = %d %q, want 0", code, errOut)
	}
}

func TestServeBadConfig(t *testing.T) {
	_, errOut, code := runCLI([]string{"--config", writeConfig(t, "methods: {}\n")}, nil)
	if code != 1 || !strings.Contains(errOut, "upstream") {
		t.Errorf("serve with a bad config = %d %q, want exit 1 naming the problem", code, errOut)
	}
}

// TestExampleConfigs: the configs the README and docs/ point users to are valid.
func TestExampleConfigs(t *testing.T) {
	for _, f := range []string{"python", "node", "adk"} {
		path := "../../examples/" + f + "/sidecar.yaml"
		out, errOut, code := runCLI([]string{"validate", "--config", path}, nil)
		if code != 0 || !strings.Contains(out, "ok") {
			t.Errorf("validate %s = %d %s %s", path, code, out, errOut)
		}
	}
	out, _, _ := runCLI([]string{"class-methods", "--config", "../../examples/adk/sidecar.yaml"}, nil)
	var got []map[string]any
	json.Unmarshal([]byte(out), &got)
	if len(got) != 13 {
		t.Fatalf("class-methods for the ADK preset = %d entries, want 13: %s", len(got), out)
	}
	modes := map[string]string{}
	for _, m := range got {
		name, _ := m["name"].(string)
		modes[name], _ = m["api_mode"].(string)
		if d, _ := m["description"].(string); d == "" || m["parameters"] == nil {
			t.Errorf("%s: no description or parameters (AdkApp's): %v", name, m)
		}
	}
	want := map[string]string{"create_session": "", "async_create_session": "async", "get_session": "", "async_get_session": "async",
		"list_sessions": "", "async_list_sessions": "async", "delete_session": "", "async_delete_session": "async",
		"async_add_session_to_memory": "async", "async_search_memory": "async", "stream_query": "stream",
		"async_stream_query": "async_stream", "streaming_agent_run_with_events": "async_stream"}
	for name, mode := range want {
		if m, ok := modes[name]; !ok || m != mode {
			t.Errorf("%s api_mode = %q (listed %v), want %q", name, m, ok, mode)
		}
	}
	printed, _, code := runCLI([]string{"validate", "--print", "--config", "../../examples/adk/sidecar.yaml"}, nil)
	if code != 0 || !strings.Contains(printed, "handler: adk.streaming_agent_run_with_events") || !strings.Contains(printed, "path: /list-apps") {
		t.Errorf("validate --print = %d\n%s", code, printed)
	}
}

// TestDeployRequest: `sidecar deploy-request` prints the create request for
// the method map, and a request it cannot build is exit 1.
func TestDeployRequest(t *testing.T) {
	out, errOut, code := runCLI([]string{"deploy-request", "--config", "../../examples/adk/sidecar.yaml",
		"--image", "us-docker.pkg.dev/p/r/agent:v1", "--display-name", "agent", "--env", "A=b"}, nil)
	if code != 0 {
		t.Fatalf("deploy-request exit %d: %s", code, errOut)
	}
	var body struct {
		Spec struct {
			ContainerSpec struct {
				ImageURI string `json:"imageUri"`
			} `json:"containerSpec"`
			ClassMethods   []map[string]any `json:"classMethods"`
			AgentFramework string           `json:"agentFramework"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if body.Spec.ContainerSpec.ImageURI != "us-docker.pkg.dev/p/r/agent:v1" || len(body.Spec.ClassMethods) != 13 || body.Spec.AgentFramework != "google-adk" {
		t.Errorf("request = %+v", body.Spec)
	}
	if _, _, code := runCLI([]string{"deploy-request", "--config", "../../examples/adk/sidecar.yaml"}, nil); code != 1 {
		t.Errorf("deploy-request without --image = exit %d, want 1", code)
	}
}

// TestA2ACard: sidecar a2a-card prints the card protocols.a2a serves,
// advertising --url, protocols.a2a.url, for a mounted door the
// platform's public URL where its variables are set, or localhost and
// its port, and refuses a map without protocols.a2a.
func TestA2ACard(t *testing.T) {
	cfg := writeConfig(t, "upstream: {url: http://127.0.0.1:8000}\n"+
		"protocols:\n  a2a: {listen: \":9000\", method: stream_query, card: {name: Price agent, description: Prices things}}\n"+
		"methods:\n  stream_query: {mode: stream, call: POST /stream}\n")
	out, errOut, code := runCLI([]string{"a2a-card", "--config", cfg}, nil)
	var card struct {
		Name, Description, URL string
		Capabilities           struct{ Streaming bool }
		SupportedInterfaces    []struct{ URL, ProtocolBinding, ProtocolVersion string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &card) != nil {
		t.Fatalf("a2a-card = %d %q %q", code, out, errOut)
	}
	if card.Name != "Price agent" || card.Description != "Prices things" || card.URL != "http://localhost:9000/" || !card.Capabilities.Streaming || len(card.SupportedInterfaces) != 4 {
		t.Errorf("card = %+v", card)
	}
	out, _, _ = runCLI([]string{"a2a-card", "--config", cfg, "--url", "https://agents.example/price/"}, nil)
	if !strings.Contains(out, `"url": "https://agents.example/price/"`) {
		t.Errorf("a2a-card --url: %s", out)
	}
	withURL := writeConfig(t, "upstream: {url: http://127.0.0.1:8000}\n"+
		"protocols:\n  a2a: {method: stream_query, url: \"https://agents.example/configured/\"}\n"+
		"methods:\n  stream_query: {mode: stream, call: POST /stream}\n")
	out, _, _ = runCLI([]string{"a2a-card", "--config", withURL}, nil)
	if !strings.Contains(out, `"url": "https://agents.example/configured/"`) {
		t.Errorf("a2a-card with protocols.a2a.url: %s", out)
	}
	// Mounted, on Agent Platform: the platform's public URL of the mount,
	// from the variables it injects; --url still wins.
	mounted := writeConfig(t, "upstream: {url: http://127.0.0.1:8000}\n"+
		"protocols:\n  a2a: {mount: /a2a, method: stream_query}\n"+
		"methods:\n  stream_query: {mode: stream, call: POST /stream}\n")
	platform := map[string]string{"GOOGLE_CLOUD_AGENT_ENGINE_ID": "77", "GOOGLE_CLOUD_AGENT_ENGINE_LOCATION": "us-east4", "GOOGLE_CLOUD_PROJECT": "p1"}
	out, _, _ = runCLI([]string{"a2a-card", "--config", mounted}, platform)
	if !strings.Contains(out, `"url": "https://us-east4-aiplatform.googleapis.com/reasoningEngines/v1/projects/p1/locations/us-east4/reasoningEngines/77/api/a2a"`) {
		t.Errorf("a2a-card, mounted, on the platform: %s", out)
	}
	out, _, _ = runCLI([]string{"a2a-card", "--config", mounted, "--url", "https://agents.example/a2a"}, platform)
	if !strings.Contains(out, `"url": "https://agents.example/a2a"`) {
		t.Errorf("a2a-card --url, mounted, on the platform: %s", out)
	}
	if _, errOut, code := runCLI([]string{"a2a-card", "--config", writeConfig(t, validConfig)}, nil); code != 1 || !strings.Contains(errOut, "no protocols.a2a") {
		t.Errorf("a2a-card without protocols.a2a = %d %q", code, errOut)
	}
}

// TestNamesNoDoor: the program names no door. Its source (tests aside)
// imports no door's package: a door's command (a2a-card) comes from its
// registration in proxy/doors, dispatched and listed in the help by its
// name there.
func TestNamesNoDoor(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			for _, door := range []string{"platform", "agentcore", "foundry", "a2a", "mcp", "openai"} {
				if path == "github.com/sidecar-dev/sidecar/proxy/"+door {
					t.Errorf("%s imports %s: a door's code belongs to its registration (proxy/doors)", f, path)
				}
			}
		}
	}
	// Every door's command is in the help, and its --help names its page.
	for _, c := range doors.Commands(doors.All) {
		if out, _, _ := runCLI([]string{"help"}, nil); !strings.Contains(out, "  sidecar "+c.Name+" ") {
			t.Errorf("sidecar help lacks %s:\n%s", c.Name, out)
		}
		if out, _, code := runCLI([]string{c.Name, "--help"}, nil); code != 0 || !strings.HasSuffix(out, "sidecar "+c.Name+": "+c.Doc+"\n") {
			t.Errorf("sidecar %s --help = %d, ends %q, want its page %s", c.Name, code, out[max(0, len(out)-80):], c.Doc)
		}
	}
	if len(doors.Commands(doors.All)) == 0 {
		t.Error("no door brings a command: a2a-card is A2A's")
	}
}

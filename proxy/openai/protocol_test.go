package openai

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

const protocolBase = `
upstream: {url: "http://127.0.0.1:8000"}
methods:
  query: {}
  stream_query: {mode: stream}
`

func parse(t *testing.T, section string) (*config.Config, error) {
	t.Helper()
	return config.Parse("sidecar.yaml", []byte(protocolBase+"protocols:\n  openai: "+section+"\n"), Protocol.Kind)
}

// TestSection: the protocols section's keys, their defaults and checks,
// api_key resolved from the environment when the door is built, and
// printed as written.
func TestSection(t *testing.T) {
	c, err := parse(t, `{listen: ":8091", method: stream_query, model: price-agent, api_key: "${DOOR_KEY}"}`)
	if err != nil {
		t.Fatal(err)
	}
	door := c.Protocols.Door(Name)
	env := map[string]string{"DOOR_KEY": "sekret"}
	o := Protocol.Options(door, core.Host{Getenv: func(n string) string { return env[n] }})
	if door.Listen != ":8091" || o.Method != "stream_query" || o.Model != "price-agent" || o.APIKey != "sekret" || !o.KeySet {
		t.Errorf("Options = %+v, listen %q", o, door.Listen)
	}
	printed := string(c.Expanded())
	if !strings.Contains(printed, `api_key: "${DOOR_KEY}"`) || strings.Contains(printed, "sekret") {
		t.Errorf("Expanded prints the key as %q, want the reference as written", printed)
	}
	if again, err := config.Parse("printed.yaml", c.Expanded(), Protocol.Kind); err != nil || string(again.Expanded()) != printed {
		t.Errorf("the printed map does not parse back the same: %v\n%s", err, printed)
	}
	if _, err := New(c, o); err != nil {
		t.Errorf("New with the key set: %v", err)
	}
	delete(env, "DOOR_KEY")
	o = Protocol.Options(door, core.Host{Getenv: func(n string) string { return env[n] }})
	if _, err := New(c, o); err == nil || !strings.Contains(err.Error(), "DOOR_KEY") {
		t.Errorf("New with $DOOR_KEY unset = %v, want an error naming it: an unset key must not open the door", err)
	}

	c, err = parse(t, `{method: query}`)
	if err != nil {
		t.Fatal(err)
	}
	door = c.Protocols.Door(Name)
	o = Protocol.Options(door, core.Host{})
	if door.Listen != ":8091" || o.Model != "query" || o.KeySet {
		t.Errorf("defaults: listen %q, %+v; want :8091, model query, no key", door.Listen, o)
	}
	if d, err := New(c, o); err != nil || d.stream {
		t.Errorf("New(query) = %v, stream %v", err, d != nil && d.stream)
	}

	for section, want := range map[string]string{
		`{listen: ":8091"}`:                        "protocols.openai.method: missing",
		`{method: nope}`:                           `"nope" is not a method of the map`,
		`{method: query, model: ""}`:               "is not a model id",
		`{method: query, api_key: sekret}`:         "names no environment variable",
		`{method: query, api_key: "${DOOR_KEY"}`:   "names no environment variable",
		`{method: query, api_key: "${A} and ${B"}`: "names no environment variable",
		`{method: query, key: "${DOOR_KEY}"}`:      "key",
		`{method: query, listen: "8091"}`:          "listen",
	} {
		if _, err := parse(t, section); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("protocols.openai %s = %v, want an error saying %q", section, err, want)
		}
	}
}

// TestExample: the registration's example, the playground's, for a door
// whose api_key names its own variables (or none): its curl command, run
// by bash against the door with those variables set, answers a
// chat.completion (the model's id read from /v1/models); its Python
// snippet parses, and run with a stand-in openai module, hands the client
// the key read from the same variables. No $DOOR_KEY unless the map names
// it.
func TestExample(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sed", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	// A stand-in for the openai package: it prints the key it is given.
	stub := t.TempDir()
	if err := os.WriteFile(filepath.Join(stub, "openai.py"), []byte(`class OpenAI:
    def __init__(self, base_url, api_key):
        print("api_key=" + api_key)
        raise SystemExit(0)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSidecar(t, startAgent(t), "")
	for _, tt := range []struct {
		name, section string
		env           []string
		key           string // the key the door takes, "" for none
	}{
		{"one variable", `{method: query, model: price-agent, api_key: "${OPENAI_DOOR_TOKEN}"}`, []string{"OPENAI_DOOR_TOKEN=sekret"}, "sekret"},
		{"text and variables", `{method: query, model: price-agent, api_key: "sk-${KEY_A}\"$${KEY_B}"}`, []string{"KEY_A=one", "KEY_B=two"}, `sk-one"$two`},
		{"no key", `{method: query, model: price-agent}`, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse(t, tt.section)
			if err != nil {
				t.Fatal(err)
			}
			section := c.Protocols.Door(Name)
			env := map[string]string{}
			for _, kv := range tt.env {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			o := Protocol.Options(section, core.Host{Getenv: func(n string) string { return env[n] }})
			if o.APIKey != tt.key {
				t.Fatalf("the door's key = %q, want %q", o.APIKey, tt.key)
			}
			o.Method = "unary" // testdata/openai/agent.py's, in this map
			base := s.serve(t, o)
			ex := Protocol.Example(base, section)
			if strings.Contains(ex.Curl+ex.Client, "DOOR_KEY") {
				t.Errorf("the example reads $DOOR_KEY, which the map does not name:\n%s\n%s", ex.Curl, ex.Client)
			}
			cmd := exec.Command("bash", "-c", ex.Curl)
			cmd.Env = append(os.Environ(), tt.env...)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), `"object":"chat.completion"`) || !strings.Contains(string(out), `"content":"echo: Hello"`) {
				t.Errorf("the example's curl = %v\n%s\n%s", err, out, ex.Curl)
			}
			check := exec.Command("python3", "-c", "import ast, sys; ast.parse(sys.stdin.read())")
			check.Stdin = strings.NewReader(ex.Client)
			if out, err := check.CombinedOutput(); err != nil || ex.ClientLang != "python" || !strings.Contains(ex.Client, base+"/v1") {
				t.Errorf("the example's client snippet (%s) does not parse: %v\n%s\n%s", ex.ClientLang, err, out, ex.Client)
			}
			run := exec.Command("python3", "-")
			run.Stdin = strings.NewReader(ex.Client)
			run.Env = append(os.Environ(), append(tt.env, "PYTHONPATH="+stub)...)
			want := tt.key
			if want == "" {
				want = "none"
			}
			if out, err := run.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "api_key="+want {
				t.Errorf("the example's client, run, gave the key as %q (%v), want api_key=%s\n%s", out, err, want, ex.Client)
			}
		})
	}
}

package openai

import (
	"os/exec"
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

// TestExample: the registration's example, the playground's: its curl
// command, run by bash against a door with a key, answers a
// chat.completion (the model's id read from /v1/models); its Python
// snippet parses.
func TestExample(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sed", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	s := newSidecar(t, startAgent(t), "")
	base := s.serve(t, Options{Method: "unary", Model: "price-agent", APIKey: "sekret", KeySet: true})
	ex := Protocol.Example(base)
	cmd := exec.Command("bash", "-c", ex.Curl)
	cmd.Env = append(cmd.Environ(), "DOOR_KEY=sekret")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"object":"chat.completion"`) || !strings.Contains(string(out), `"content":"echo: Hello"`) {
		t.Errorf("the example's curl = %v\n%s", err, out)
	}
	check := exec.Command("python3", "-c", "import ast, sys; ast.parse(sys.stdin.read())")
	check.Stdin = strings.NewReader(ex.Client)
	if out, err := check.CombinedOutput(); err != nil || ex.ClientLang != "python" || !strings.Contains(ex.Client, base+"/v1") {
		t.Errorf("the example's client snippet (%s) does not parse: %v\n%s\n%s", ex.ClientLang, err, out, ex.Client)
	}
}

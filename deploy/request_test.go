package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/adk/adkapp"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

const pythonMap = `
upstream:
  url: http://127.0.0.1:8000
  ready: {path: /health}
methods:
  query: {call: POST /query}
  stream_query: {mode: stream, call: POST /stream, reply: sse}
  create_session: {mode: async, call: POST /sessions}
  run_events: {mode: async_stream, call: POST /events}
`

const adkMap = `
upstream: {url: "http://127.0.0.1:8000"}
preset: adk
adk: {app: x}
`

func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("t.yaml", []byte(yaml), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func ptr(n int) *int { return &n }

// decode reads a body keeping numbers as json.Number, so a number sent as
// a string shows.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, b)
	}
	if d.More() {
		t.Fatalf("body holds more than one JSON value:\n%s", b)
	}
	return m
}

func keys(v any) []string {
	m, _ := v.(map[string]any)
	var k []string
	for key := range m {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

func obj(t *testing.T, v any, path string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: not an object: %#v", path, v)
	}
	return m
}

func list(t *testing.T, v any, path string) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: not a list: %#v", path, v)
	}
	return l
}

func number(t *testing.T, v any, path string) string {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%s = %#v: want a JSON number", path, v)
	}
	return n.String()
}

// checkClassMethods holds spec.classMethods to the contract: one object
// per method with the keys "name" and "api_mode" (never apiMode, never
// left out when empty), in the map's order, plus "description" and
// "parameters" (what the platform's SDK reads) exactly when known.
func checkClassMethods(t *testing.T, got any, want []ClassMethod) {
	t.Helper()
	l := list(t, got, "spec.classMethods")
	if len(l) != len(want) {
		t.Fatalf("spec.classMethods has %d entries, want %d: %v", len(l), len(want), l)
	}
	for i, e := range l {
		m := obj(t, e, "spec.classMethods[]")
		wantKeys := []string{"api_mode"}
		if want[i].Description != "" {
			wantKeys = append(wantKeys, "description")
		}
		wantKeys = append(wantKeys, "name")
		if want[i].Parameters != nil {
			wantKeys = append(wantKeys, "parameters")
		}
		if k := keys(m); !reflect.DeepEqual(k, wantKeys) {
			t.Errorf("spec.classMethods[%d] keys = %v, want exactly %v", i, k, wantKeys)
		}
		if m["name"] != want[i].Name || m["api_mode"] != string(want[i].APIMode) {
			t.Errorf("spec.classMethods[%d] = %v, want name %q api_mode %q", i, m, want[i].Name, want[i].APIMode)
		}
		if d, _ := m["description"].(string); d != want[i].Description {
			t.Errorf("spec.classMethods[%d].description = %q, want %q", i, d, want[i].Description)
		}
		if want[i].Parameters != nil {
			wp, _ := json.Marshal(want[i].Parameters)
			gp, _ := json.Marshal(m["parameters"])
			if string(wp) != string(gp) {
				t.Errorf("spec.classMethods[%d].parameters = %s, want %s", i, gp, wp)
			}
		}
	}
}

func TestCreateRequestContract(t *testing.T) {
	cfg := parse(t, pythonMap)
	opts := RequestOptions{
		DisplayName: "my agent",
		Description: "echo agent",
		Image:       "us-central1-docker.pkg.dev/p/agents/my-agent:v1",
		Env:         []EnvVar{{"LOG_LEVEL", "debug"}, {"EMPTY", ""}, {"EQ", "a=b"}},
		SecretEnv: []SecretEnvVar{
			{Name: "API_KEY", SecretRef: SecretRef{Secret: "api-key", Version: "3"}},
			{Name: "TOKEN", SecretRef: SecretRef{Secret: "token"}},
		},
		MinInstances: ptr(0),
		MaxInstances: ptr(5),
		CPU:          "2",
		Memory:       "4Gi",
		Concurrency:  ptr(9),
	}
	b, err := CreateRequest(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b, []byte("}\n")) {
		t.Errorf("body does not end in a newline")
	}
	m := decode(t, b)
	if k := keys(m); !reflect.DeepEqual(k, []string{"description", "displayName", "spec"}) {
		t.Errorf("top-level keys = %v", k)
	}
	if m["displayName"] != "my agent" || m["description"] != "echo agent" {
		t.Errorf("displayName/description = %v / %v", m["displayName"], m["description"])
	}
	spec := obj(t, m["spec"], "spec")
	if k := keys(spec); !reflect.DeepEqual(k, []string{"agentFramework", "classMethods", "containerSpec", "deploymentSpec"}) {
		t.Errorf("spec keys = %v", k)
	}
	if cs := obj(t, spec["containerSpec"], "spec.containerSpec"); !reflect.DeepEqual(cs, map[string]any{"imageUri": opts.Image}) {
		t.Errorf("spec.containerSpec = %v", cs)
	}
	if spec["agentFramework"] != "custom" {
		t.Errorf("spec.agentFramework = %v, want custom for a map without ADK", spec["agentFramework"])
	}
	checkClassMethods(t, spec["classMethods"], []ClassMethod{
		{Name: "query", APIMode: ""}, {Name: "stream_query", APIMode: "stream"},
		{Name: "create_session", APIMode: "async"}, {Name: "run_events", APIMode: "async_stream"},
	})

	ds := obj(t, spec["deploymentSpec"], "spec.deploymentSpec")
	if k := keys(ds); !reflect.DeepEqual(k, []string{"containerConcurrency", "env", "maxInstances", "minInstances", "resourceLimits", "secretEnv"}) {
		t.Errorf("spec.deploymentSpec keys = %v", k)
	}
	env := list(t, ds["env"], "env")
	wantEnv := []any{
		map[string]any{"name": "LOG_LEVEL", "value": "debug"},
		map[string]any{"name": "EMPTY", "value": ""},
		map[string]any{"name": "EQ", "value": "a=b"},
	}
	if !reflect.DeepEqual(env, wantEnv) {
		t.Errorf("env = %v, want %v (a list of {name, value}, in order, empty values kept)", env, wantEnv)
	}
	secrets := list(t, ds["secretEnv"], "secretEnv")
	wantSecrets := []any{
		map[string]any{"name": "API_KEY", "secretRef": map[string]any{"secret": "api-key", "version": "3"}},
		map[string]any{"name": "TOKEN", "secretRef": map[string]any{"secret": "token", "version": "latest"}},
	}
	if !reflect.DeepEqual(secrets, wantSecrets) {
		t.Errorf("secretEnv = %v, want %v", secrets, wantSecrets)
	}
	// int32 fields are JSON numbers; minInstances 0 (scale to zero) is sent,
	// not dropped as a zero value.
	for key, want := range map[string]string{"minInstances": "0", "maxInstances": "5", "containerConcurrency": "9"} {
		if got := number(t, ds[key], key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	// resourceLimits is map<string, string>: quantities are strings.
	if rl := obj(t, ds["resourceLimits"], "resourceLimits"); !reflect.DeepEqual(rl, map[string]any{"cpu": "2", "memory": "4Gi"}) {
		t.Errorf("resourceLimits = %v, want string values {cpu: \"2\", memory: \"4Gi\"}", rl)
	}

	// Nothing of this machine: no config path, no working directory, no
	// home or temp directory.
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	for _, s := range []string{"t.yaml", wd, filepath.Dir(wd), home, os.TempDir()} {
		if s != "" && s != "/" && bytes.Contains(b, []byte(s)) {
			t.Errorf("body contains the machine path %q:\n%s", s, b)
		}
	}

	// Deterministic: same input, same bytes.
	again, _ := CreateRequest(cfg, opts)
	if !bytes.Equal(b, again) {
		t.Error("two calls with the same input gave different bodies")
	}
}

func TestCreateRequestADKPreset(t *testing.T) {
	cfg := parse(t, adkMap)
	b, err := CreateRequest(cfg, RequestOptions{DisplayName: "adk", Image: "europe-west1-docker.pkg.dev/p/r/adk:1"})
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, b)
	spec := obj(t, m["spec"], "spec")
	if spec["agentFramework"] != "google-adk" {
		t.Errorf("agentFramework = %v, want google-adk for the ADK preset", spec["agentFramework"])
	}
	// adkapp's TestMethods checks that each has a description and parameters.
	var want []ClassMethod
	for _, am := range adkapp.Methods {
		if config.Mode(am.Mode) == config.ModeBidi {
			continue // a conversation: classMethods leave it out
		}
		want = append(want, ClassMethod{Name: am.Name, APIMode: config.Mode(am.Mode),
			Description: am.Description, Parameters: adkapp.Parameters(am.Name)})
	}
	if len(want) != 13 {
		t.Fatalf("adkapp.Methods has %d methods besides conversations: want AdkApp's 13", len(want))
	}
	checkClassMethods(t, spec["classMethods"], want)
	// Spot checks of what the SDK would derive from AdkApp itself.
	for _, e := range list(t, spec["classMethods"], "classMethods") {
		m := e.(map[string]any)
		params := obj(t, m["parameters"], "parameters")
		switch m["name"] {
		case "async_stream_query":
			if r := params["required"]; !reflect.DeepEqual(r, []any{"message", "user_id"}) {
				t.Errorf("async_stream_query required = %v, want [message user_id]", r)
			}
			if k := keys(params["properties"]); !reflect.DeepEqual(k, []string{"message", "run_config", "session_events", "session_id", "user_id"}) {
				t.Errorf("async_stream_query properties = %v", k)
			}
		case "create_session":
			if !strings.HasPrefix(m["description"].(string), "Deprecated: use async_create_session.") {
				t.Errorf("create_session description %q does not say it is deprecated", m["description"])
			}
		}
	}
	if _, ok := spec["deploymentSpec"]; ok {
		t.Errorf("deploymentSpec sent with no deployment option: %v", spec["deploymentSpec"])
	}

	// An explicit framework wins; a single adk.* handler is enough for the
	// default.
	b, _ = CreateRequest(cfg, RequestOptions{DisplayName: "x", Image: "r/i", Framework: "langgraph"})
	if got := obj(t, decode(t, b)["spec"], "spec")["agentFramework"]; got != "langgraph" {
		t.Errorf("agentFramework = %v, want the given langgraph", got)
	}
	one := parse(t, `
upstream: {url: "http://127.0.0.1:8000"}
adk: {app: x}
methods:
  stream_query: {handler: adk.stream_query}
  query: {call: POST /q}
`)
	if got := DefaultFramework(one); got != FrameworkADK {
		t.Errorf("DefaultFramework with one adk.* handler = %q, want google-adk", got)
	}
	emits := parse(t, `
upstream: {url: "http://127.0.0.1:8000"}
methods:
  stream_query: {mode: stream, call: POST /api/chat, emit: adk}
`)
	if got := DefaultFramework(emits); got != FrameworkADK {
		t.Errorf("DefaultFramework with a method that emits adk = %q, want google-adk", got)
	}
	if got := DefaultFramework(parse(t, "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods: {q: {emit: text}}\n")); got != FrameworkCustom {
		t.Errorf("DefaultFramework with emit text = %q, want custom", got)
	}
}

// TestCreateRequestGolden pins the whole body for the smallest request, so
// a change of shape shows in review.
func TestCreateRequestGolden(t *testing.T) {
	cfg := parse(t, `
upstream: {url: "http://127.0.0.1:8000"}
methods:
  query: {}
  stream_query: {mode: stream}
`)
	b, err := CreateRequest(cfg, RequestOptions{DisplayName: "echo", Image: "us-central1-docker.pkg.dev/p/r/echo:1", MinInstances: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "displayName": "echo",
  "spec": {
    "containerSpec": {
      "imageUri": "us-central1-docker.pkg.dev/p/r/echo:1"
    },
    "classMethods": [
      {
        "name": "query",
        "api_mode": ""
      },
      {
        "name": "stream_query",
        "api_mode": "stream"
      }
    ],
    "agentFramework": "custom",
    "deploymentSpec": {
      "minInstances": 1
    }
  }
}
`
	if string(b) != want {
		t.Errorf("body:\n%s\nwant:\n%s", b, want)
	}
}

func TestCreateRequestDefaults(t *testing.T) {
	// containerConcurrency follows limits.concurrency when not given.
	cfg := parse(t, pythonMap+"limits: {concurrency: 4}\n")
	b, err := CreateRequest(cfg, RequestOptions{DisplayName: "x", Image: "r/i"})
	if err != nil {
		t.Fatal(err)
	}
	ds := obj(t, obj(t, decode(t, b)["spec"], "spec")["deploymentSpec"], "deploymentSpec")
	if got := number(t, ds["containerConcurrency"], "containerConcurrency"); got != "4" {
		t.Errorf("containerConcurrency = %s, want limits.concurrency 4", got)
	}

	// A "*" method is not listed; --method declares what it serves.
	wild := parse(t, `
upstream: {url: "http://127.0.0.1:8000"}
methods:
  query: {}
  "*": {mode: stream}
`)
	b, err = CreateRequest(wild, RequestOptions{DisplayName: "x", Image: "r/i",
		Methods: []ClassMethod{{Name: "chat", APIMode: "stream"}}})
	if err != nil {
		t.Fatal(err)
	}
	checkClassMethods(t, obj(t, decode(t, b)["spec"], "spec")["classMethods"],
		[]ClassMethod{{Name: "query"}, {Name: "chat", APIMode: "stream"}})
}

func TestCreateRequestErrors(t *testing.T) {
	cfg := parse(t, pythonMap)
	onlyWild := parse(t, "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  \"*\": {}\n")
	good := RequestOptions{DisplayName: "x", Image: "r/i"}
	with := func(f func(*RequestOptions)) RequestOptions { o := good; f(&o); return o }
	for _, tc := range []struct {
		name string
		cfg  *config.Config
		opts RequestOptions
		want []string
	}{
		{"nothing", cfg, RequestOptions{}, []string{"display name: required", "image: required"}},
		{"bad image", cfg, with(func(o *RequestOptions) { o.Image = "my image" }), []string{`image "my image"`}},
		{"framework", cfg, with(func(o *RequestOptions) { o.Framework = "Google ADK" }), []string{`framework "Google ADK"`}},
		{"env name", cfg, with(func(o *RequestOptions) { o.Env = []EnvVar{{"1X", ""}} }), []string{`env "1X": not an environment variable name`}},
		{"reserved", cfg, with(func(o *RequestOptions) { o.Env = []EnvVar{{"PORT", "1"}, {"GOOGLE_CLOUD_PROJECT", "p"}} }),
			[]string{"env PORT:", "env GOOGLE_CLOUD_PROJECT: reserved"}},
		{"duplicate", cfg, with(func(o *RequestOptions) {
			o.Env = []EnvVar{{"A", "1"}}
			o.SecretEnv = []SecretEnvVar{{Name: "A", SecretRef: SecretRef{Secret: "s"}}}
		}), []string{"secret env A: already set as env"}},
		{"secret", cfg, with(func(o *RequestOptions) {
			o.SecretEnv = []SecretEnvVar{{Name: "K", SecretRef: SecretRef{Secret: "projects/p/secrets/s", Version: "1 2"}}}
		}), []string{`secret "projects/p/secrets/s"`, `version "1 2"`}},
		{"instances", cfg, with(func(o *RequestOptions) { o.MinInstances, o.MaxInstances = ptr(3), ptr(2) }), []string{"min instances 3 is above max instances 2"}},
		{"negative", cfg, with(func(o *RequestOptions) { o.MinInstances, o.MaxInstances, o.Concurrency = ptr(-1), ptr(0), ptr(0) }),
			[]string{"min instances -1", "max instances 0", "concurrency 0"}},
		{"method twice", cfg, with(func(o *RequestOptions) { o.Methods = []ClassMethod{{Name: "query"}} }), []string{"method query: declared twice"}},
		{"method mode", cfg, with(func(o *RequestOptions) { o.Methods = []ClassMethod{{Name: "m", APIMode: "sync"}} }), []string{`unknown api_mode "sync"`}},
		{"no methods", onlyWild, good, []string{"no class methods"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := CreateRequest(tc.cfg, tc.opts)
			if err == nil {
				t.Fatalf("no error; body:\n%s", b)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	cfg := parse(t, pythonMap)
	if w := Warnings(cfg, RequestOptions{Image: "us-central1-docker.pkg.dev/p/r/i:1", CPU: "4", Memory: "32Gi"}); len(w) != 0 {
		t.Errorf("warnings for a plain request: %q", w)
	}
	tight := parse(t, pythonMap+"limits: {concurrency: 2}\nlisten: 127.0.0.1:8080\nshutdown: {drain: 8s, agent_grace: 3s}\n")
	w := strings.Join(Warnings(tight, RequestOptions{Image: "gcr.io/p/i", CPU: "3", Memory: "64Gi"}), "\n")
	for _, want := range []string{"not in Artifact Registry", `cpu "3"`, `memory "64Gi"`,
		"containerConcurrency 9 is above limits.concurrency 2", "is loopback", "= 11s"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings do not mention %q:\n%s", want, w)
		}
	}
	wild := parse(t, "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {}\n  \"*\": {}\n")
	if w := strings.Join(Warnings(wild, RequestOptions{}), "\n"); !strings.Contains(w, `"*" method`) {
		t.Errorf("no warning for an undeclared \"*\" method: %q", w)
	}
}

func TestUpdateMask(t *testing.T) {
	cfg := parse(t, pythonMap)
	b, err := CreateRequest(cfg, RequestOptions{DisplayName: "x", Description: "d", Image: "r/i", ServiceAccount: "sa@p.iam.gserviceaccount.com",
		MaxInstances: ptr(3), CPU: "2", Concurrency: ptr(5)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := UpdateMask(b)
	if err != nil {
		t.Fatal(err)
	}
	want := "description,display_name,labels,spec.agent_framework,spec.class_methods,spec.container_spec," +
		"spec.deployment_spec.container_concurrency,spec.deployment_spec.env,spec.deployment_spec.max_instances," +
		"spec.deployment_spec.resource_limits,spec.deployment_spec.secret_env,spec.service_account"
	if got != want {
		t.Errorf("UpdateMask =\n %s\nwant\n %s", got, want)
	}
	// Without deployment options, env, secretEnv and labels are still in
	// the mask: variables and labels dropped from the request are removed.
	b, _ = CreateRequest(cfg, RequestOptions{DisplayName: "x", Image: "r/i"})
	got, _ = UpdateMask(b)
	if want := "display_name,labels,spec.agent_framework,spec.class_methods,spec.container_spec,spec.deployment_spec.env,spec.deployment_spec.secret_env"; got != want {
		t.Errorf("UpdateMask = %s, want %s", got, want)
	}
	if _, err := UpdateMask([]byte("[]")); err == nil {
		t.Error("UpdateMask of a non-object: no error")
	}
}

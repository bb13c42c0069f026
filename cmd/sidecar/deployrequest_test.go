package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/deploy"
)

// requestMap is a method map for the deploy request's flags.
const requestMap = "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  query: {}\n  stream_query: {mode: stream}\n"

func ptr(n int) *int { return &n }

func TestRequestFlags(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte(requestMap))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--image", "us-central1-docker.pkg.dev/p/r/i:1", "--display-name", "my agent",
		"--env", "A=1", "--env", "B=x=y", "--secret-env", "KEY=api-key:2", "--secret-env", "TOK=tok",
		"--min-instances", "0", "--max-instances", "4", "--cpu", "2", "--memory", "2Gi", "--concurrency", "3",
		"--method", "chat:async_stream", "--framework", "custom", "--service-account", "sa@p.iam.gserviceaccount.com",
	}
	var f requestFlags
	fs := flag.NewFlagSet("deploy-request", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	want := deploy.RequestOptions{
		DisplayName: "my agent", Image: "us-central1-docker.pkg.dev/p/r/i:1", Framework: "custom",
		ServiceAccount: "sa@p.iam.gserviceaccount.com",
		Methods:        []deploy.ClassMethod{{Name: "chat", APIMode: "async_stream"}},
		Env:            []deploy.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "x=y"}},
		SecretEnv: []deploy.SecretEnvVar{{Name: "KEY", SecretRef: deploy.SecretRef{Secret: "api-key", Version: "2"}},
			{Name: "TOK", SecretRef: deploy.SecretRef{Secret: "tok", Version: "latest"}}},
		MinInstances: ptr(0), MaxInstances: ptr(4), CPU: "2", Memory: "2Gi", Concurrency: ptr(3),
	}
	if got := f.opts; !reflect.DeepEqual(got, want) {
		t.Errorf("Options =\n%+v\nwant\n%+v", got, want)
	}
	var out, errOut bytes.Buffer
	if err := f.write(cfg, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	body, _ := deploy.CreateRequest(cfg, want)
	if out.String() != string(body) {
		t.Errorf("Write printed\n%s\nwant the CreateRequest body\n%s", out.String(), body)
	}
	if errOut.Len() != 0 {
		t.Errorf("warnings for a clean request: %s", errOut.String())
	}

	// --update-mask prints the mask; a warning goes to stderr.
	f.updateMask = true
	f.opts.CPU = "3"
	out.Reset()
	if err := f.write(cfg, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "display_name,labels,spec.agent_framework,") || !strings.HasSuffix(out.String(), "\n") {
		t.Errorf("--update-mask printed %q", out.String())
	}
	if !strings.Contains(errOut.String(), "sidecar deploy-request: warning: cpu \"3\"") {
		t.Errorf("stderr = %q, want the cpu warning", errOut.String())
	}

	for _, bad := range [][]string{{"--env", "NOVALUE"}, {"--secret-env", "K="}, {"--min-instances", "one"},
		{"--method", "a-b"}, {"--method", "m:sync"}} {
		fs := flag.NewFlagSet("deploy-request", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		new(requestFlags).register(fs)
		if err := fs.Parse(bad); err == nil {
			t.Errorf("flags %q parsed without error", bad)
		}
	}
	var missing requestFlags
	err = missing.write(cfg, io.Discard, io.Discard)
	if want := "sidecar deploy-request: display name: required\nsidecar deploy-request: image: required"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Write without flags: err = %v, want every problem on its own line, starting %q", err, want)
	}
}

func TestRequestFlagsExtras(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "context.json")
	if err := os.WriteFile(spec, []byte(`{"memoryBankConfig": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var f requestFlags
	fs := flag.NewFlagSet("deploy-request", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	err := fs.Parse([]string{"--label", "team=agents", "--label", "env=", "--kms-key", "projects/p/locations/l/keyRings/r/cryptoKeys/k",
		"--identity-type", "SERVICE_ACCOUNT", "--network-attachment", "na", "--dns-peering", "corp.example.=p/vpc",
		"--context-spec", "@" + spec, "--api-version", "v1beta1"})
	if err != nil {
		t.Fatal(err)
	}
	got := f.opts
	want := deploy.RequestOptions{
		Labels: map[string]string{"team": "agents", "env": ""}, KMSKey: "projects/p/locations/l/keyRings/r/cryptoKeys/k",
		IdentityType: "SERVICE_ACCOUNT", APIVersion: "v1beta1",
		PSC:         &deploy.PSCInterface{NetworkAttachment: "na", DNSPeering: []deploy.DNSPeering{{Domain: "corp.example.", TargetProject: "p", TargetNetwork: "vpc"}}},
		ContextSpec: json.RawMessage(`{"memoryBankConfig": {}}`),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Options =\n%+v\nwant\n%+v", got, want)
	}
	for _, bad := range [][]string{{"--label", "novalue"}, {"--label", "a=1", "--label", "a=2"}, {"--dns-peering", "corp.=p"},
		{"--context-spec", "{"}, {"--context-spec", "@" + filepath.Join(t.TempDir(), "missing")}} {
		fs := flag.NewFlagSet("deploy-request", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		new(requestFlags).register(fs)
		if err := fs.Parse(bad); err == nil {
			t.Errorf("flags %q parsed without error", bad)
		}
	}
}

// TestDeployRequestKeepAlive: `sidecar deploy-request` writes the map's
// keep_alive_probe as deploymentSpec.keepAliveProbe, and its listen port,
// not 8080, as containerSpec.port and the probe's port.
func TestDeployRequestKeepAlive(t *testing.T) {
	cfg := writeConfig(t, "upstream: {url: http://127.0.0.1:8000}\nlisten: \":8081\"\nkeep_alive_probe: {path: /busy, max_seconds: 900}\nmethods: {query: {}}\n")
	out, errOut, code := runCLI([]string{"deploy-request", "--config", cfg, "--image", "us-docker.pkg.dev/p/r/agent:v1", "--display-name", "agent"}, nil)
	if code != 0 {
		t.Fatalf("deploy-request exit %d: %s", code, errOut)
	}
	var body struct {
		Spec struct {
			ContainerSpec  json.RawMessage `json:"containerSpec"`
			DeploymentSpec json.RawMessage `json:"deploymentSpec"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		json.Compact(&b, raw)
		return b.String()
	}
	if got, want := compact(body.Spec.ContainerSpec), `{"imageUri":"us-docker.pkg.dev/p/r/agent:v1","port":8081}`; got != want {
		t.Errorf("containerSpec = %s, want %s", got, want)
	}
	if got, want := compact(body.Spec.DeploymentSpec), `{"keepAliveProbe":{"httpGet":{"path":"/busy","port":8081},"maxSeconds":900}}`; got != want {
		t.Errorf("deploymentSpec = %s, want %s", got, want)
	}
}

// a2aRequestMap mounts the A2A door on the platform's port.
const a2aRequestMap = "upstream: {url: http://127.0.0.1:8000}\nmethods:\n  query: {}\n  stream_query: {mode: stream}\n" +
	"protocols:\n  a2a: {mount: /a2a, method: stream_query, card: {name: Price agent, description: Prices <things>}}\n"

// TestDeployRequestA2A: `sidecar deploy-request --a2a` writes what
// Google's A2A template declares: spec.agentCard, the card `sidecar
// a2a-card` prints (its HTTP+JSON 1.0 interface first), and classMethods
// of api_mode a2a_extension after the map's, each carrying that card as a
// JSON string; --a2a-url is the URL it advertises. Without the flag the
// request is what it was; the flag without a mounted protocols.a2a is a
// clear error.
func TestDeployRequestA2A(t *testing.T) {
	cfg := writeConfig(t, a2aRequestMap)
	base := []string{"deploy-request", "--config", cfg, "--image", "us-docker.pkg.dev/p/r/agent:v1", "--display-name", "agent"}
	type request struct {
		Spec struct {
			ClassMethods []map[string]any `json:"classMethods"`
			AgentCard    json.RawMessage  `json:"agentCard"`
		} `json:"spec"`
	}
	read := func(args ...string) (request, string) {
		t.Helper()
		out, errOut, code := runCLI(append(slices.Clone(base), args...), nil)
		if code != 0 {
			t.Fatalf("deploy-request %q: exit %d: %s", args, code, errOut)
		}
		var r request
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		return r, errOut
	}

	// Without the flag: the map's two methods, no card.
	plain, _ := read()
	if len(plain.Spec.ClassMethods) != 2 || plain.Spec.AgentCard != nil {
		t.Errorf("without --a2a: classMethods %v, agentCard %s; want the map's two methods and no card", plain.Spec.ClassMethods, plain.Spec.AgentCard)
	}

	const public = "https://us-central1-aiplatform.googleapis.com/reasoningEngines/v1/projects/p/locations/us-central1/reasoningEngines/123/api/a2a"
	for _, url := range []string{"", public} {
		args := []string{"--a2a"}
		if url != "" {
			args = append(args, "--a2a-url", url)
		}
		r, warnings := read(args...)
		cardArgs := []string{"a2a-card", "--config", cfg}
		if url != "" {
			cardArgs = append(cardArgs, "--url", url)
		}
		door, errOut, code := runCLI(cardArgs, nil)
		if code != 0 {
			t.Fatalf("a2a-card: %s", errOut)
		}
		want := reorderedCard(t, door)
		var got map[string]any
		if err := json.Unmarshal(r.Spec.AgentCard, &got); err != nil {
			t.Fatalf("agentCard %s: %v", r.Spec.AgentCard, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("--a2a %q: agentCard =\n%v\nwant the door's card, HTTP+JSON 1.0 first:\n%v", url, got, want)
		}
		if u := got["url"]; url != "" && u != url || url == "" && u != "http://localhost:8080/a2a" {
			t.Errorf("--a2a-url %q: the card's url is %v", url, u)
		}
		if local := strings.Contains(warnings, "the card advertises http://localhost:8080/a2a"); local != (url == "") {
			t.Errorf("--a2a-url %q: stderr %q (a warning for a local URL only)", url, warnings)
		}

		methods := r.Spec.ClassMethods
		if len(methods) < 2 || methods[0]["name"] != "query" || methods[1]["name"] != "stream_query" {
			t.Fatalf("classMethods = %v, want the map's first", methods)
		}
		var names []string
		for _, m := range methods[2:] {
			names = append(names, m["name"].(string))
			if m["api_mode"] != "a2a_extension" {
				t.Errorf("%s: api_mode %v", m["name"], m["api_mode"])
			}
			s, ok := m["a2a_agent_card"].(string)
			var inner map[string]any
			if !ok || json.Unmarshal([]byte(s), &inner) != nil || !reflect.DeepEqual(inner, want) {
				t.Errorf("%s: a2a_agent_card = %#v, want the card as a JSON string", m["name"], m["a2a_agent_card"])
			}
		}
		// The template's operations for a card that streams and has no
		// extended card.
		wantNames := []string{"on_message_send", "on_get_task", "on_list_tasks", "on_cancel_task",
			"on_create_task_push_notification_config", "on_get_task_push_notification_config",
			"on_list_task_push_notification_configs", "on_delete_task_push_notification_config",
			"on_message_send_stream", "on_subscribe_to_task"}
		if !slices.Equal(names, wantNames) {
			t.Errorf("a2a_extension methods = %v, want %v", names, wantNames)
		}
	}

	// The update mask names the card.
	mask, errOut, code := runCLI(append(slices.Clone(base), "--a2a", "--update-mask"), nil)
	if code != 0 || !strings.Contains(mask, "spec.agent_card,") {
		t.Errorf("--a2a --update-mask: %q (exit %d, %s), want spec.agent_card in it", mask, code, errOut)
	}

	// A mount other than the template's /a2a: a warning.
	other := writeConfig(t, strings.Replace(a2aRequestMap, "mount: /a2a", "mount: /agents/a2a", 1))
	_, errOut, code = runCLI([]string{"deploy-request", "--config", other, "--image", "us-docker.pkg.dev/p/r/agent:v1", "--display-name", "agent", "--a2a"}, nil)
	if code != 0 || !strings.Contains(errOut, "protocols.a2a is mounted at /agents/a2a, not /a2a") {
		t.Errorf("--a2a with the door at /agents/a2a: exit %d, stderr %q; want a warning about the mount", code, errOut)
	}

	for _, tc := range []struct {
		yaml string
		args []string
		want string
	}{
		{requestMap, []string{"--a2a"}, "sidecar deploy-request: --a2a: the config has no protocols.a2a"},
		{strings.Replace(a2aRequestMap, "mount: /a2a", `listen: ":9000"`, 1), []string{"--a2a"}, `--a2a: protocols.a2a listens on its own port (:9000), which Agent Platform never calls`},
		{a2aRequestMap, []string{"--a2a-url", public}, "--a2a-url: needs --a2a"},
		{a2aRequestMap, []string{"--a2a", "--a2a-url", "/api/a2a"}, `--a2a-url "/api/a2a": not an http or https URL`},
		{a2aRequestMap, []string{"--a2a", "--a2a-url", "ftp://x/a2a"}, `--a2a-url "ftp://x/a2a": not an http or https URL`},
	} {
		args := []string{"deploy-request", "--config", writeConfig(t, tc.yaml), "--image", "us-docker.pkg.dev/p/r/agent:v1", "--display-name", "agent"}
		out, errOut, code := runCLI(append(args, tc.args...), nil)
		if code == 0 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("deploy-request %q: exit %d, stdout of %d bytes, stderr %q; want an error containing %q", tc.args, code, len(out), errOut, tc.want)
		}
	}
}

// reorderedCard is the door's card as --a2a declares it: the same, its
// HTTP+JSON 1.0 interface moved first.
func reorderedCard(t *testing.T, door string) map[string]any {
	t.Helper()
	var card map[string]any
	if err := json.Unmarshal([]byte(door), &card); err != nil {
		t.Fatalf("a2a-card printed %q: %v", door, err)
	}
	ifaces := card["supportedInterfaces"].([]any)
	i := slices.IndexFunc(ifaces, func(v any) bool {
		m := v.(map[string]any)
		return m["protocolBinding"] == "HTTP+JSON" && m["protocolVersion"] == "1.0"
	})
	if i < 0 {
		t.Fatalf("the door's card has no HTTP+JSON 1.0 interface: %s", door)
	}
	card["supportedInterfaces"] = append([]any{ifaces[i]}, slices.Delete(slices.Clone(ifaces), i, i+1)...)
	return card
}

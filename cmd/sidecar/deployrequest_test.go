package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
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

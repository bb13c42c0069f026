package deploy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestKeepAliveRequest: the map's keep_alive_probe becomes
// deploymentSpec.keepAliveProbe, and a listen port other than 8080 is
// containerSpec.port and the probe's port; 8080 and no probe leave them
// out; a listen port the platform cannot call (0) is refused.
func TestKeepAliveRequest(t *testing.T) {
	type spec struct {
		ContainerSpec  map[string]any `json:"containerSpec"`
		DeploymentSpec map[string]any `json:"deploymentSpec"`
	}
	request := func(yaml string) spec {
		t.Helper()
		b, err := CreateRequest(parse(t, yaml), RequestOptions{DisplayName: "x", Image: "r/i"})
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Spec spec }
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		return body.Spec
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	s := request(keepAliveMap)
	if got, want := js(s.ContainerSpec), `{"imageUri":"r/i","port":9000}`; got != want {
		t.Errorf("listen :9000: containerSpec = %s, want %s", got, want)
	}
	if got, want := js(s.DeploymentSpec), `{"keepAliveProbe":{"httpGet":{"path":"/busy","port":9000},"maxSeconds":600}}`; got != want {
		t.Errorf("listen :9000: deploymentSpec = %s, want %s", got, want)
	}

	s = request("upstream: {url: \"http://127.0.0.1:8000\"}\nkeep_alive_probe: {path: /is_busy}\nmethods: {query: {}}\n")
	if got, want := js(s.ContainerSpec), `{"imageUri":"r/i"}`; got != want {
		t.Errorf("listen :8080: containerSpec = %s, want %s", got, want)
	}
	if got, want := js(s.DeploymentSpec), `{"keepAliveProbe":{"httpGet":{"path":"/is_busy"},"maxSeconds":3600}}`; got != want {
		t.Errorf("listen :8080: deploymentSpec = %s, want %s", got, want)
	}

	s = request("upstream: {url: \"http://127.0.0.1:8000\"}\nlisten: \"0.0.0.0:8081\"\nmethods: {query: {}}\n")
	if got, want := js(s.ContainerSpec), `{"imageUri":"r/i","port":8081}`; got != want || s.DeploymentSpec != nil {
		t.Errorf("listen 0.0.0.0:8081, no probe: containerSpec = %s, deploymentSpec = %v; want %s and none", got, s.DeploymentSpec, want)
	}

	_, err := CreateRequest(parse(t, "upstream: {url: \"http://127.0.0.1:8000\"}\nlisten: \":0\"\nmethods: {query: {}}\n"), RequestOptions{DisplayName: "x", Image: "r/i"})
	if want := `listen ":0": the platform calls a fixed port`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("listen :0: %v, want an error containing %q", err, want)
	}

	b, err := CreateRequest(parse(t, keepAliveMap), RequestOptions{DisplayName: "x", Image: "r/i"})
	if err != nil {
		t.Fatal(err)
	}
	if mask, err := UpdateMask(b); err != nil || !strings.Contains(mask, "spec.deployment_spec.keep_alive_probe") || !strings.Contains(mask, "spec.container_spec") {
		t.Errorf("UpdateMask = %q, %v; want spec.deployment_spec.keep_alive_probe and spec.container_spec in it", mask, err)
	}
}

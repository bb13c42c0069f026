package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/devapi"
)

// TestDevMountedDoorsListed: the built binary's sidecar dev, with the
// A2A, MCP and OpenAI doors mounted on the contract listener, lists each
// in GET /playground/doors.json with its direct URL there, its URL
// through the dev listener's passthrough (…/api{mount}) and, where the
// platform's variables are set, its public URL on Agent Platform; each
// door's curl for the passthrough URL, run as listed, gets the agent's
// answer through the passthrough, and so does its direct curl. The A2A
// card asked through the passthrough advertises the passthrough's URL, a
// client following it stays there; with the platform's variables, the
// platform's.
func TestDevMountedDoorsListed(t *testing.T) {
	const platform = "https://europe-west4-aiplatform.googleapis.com/reasoningEngines/v1/projects/dev-proj/locations/europe-west4/reasoningEngines/42/api"
	t.Run("on a laptop", func(t *testing.T) { testDevMounted(t, nil, "") })
	t.Run("with the platform's variables", func(t *testing.T) {
		testDevMounted(t, []string{"GOOGLE_CLOUD_AGENT_ENGINE_ID=42", "GOOGLE_CLOUD_AGENT_ENGINE_LOCATION=europe-west4",
			"GOOGLE_CLOUD_PROJECT=dev-proj"}, platform)
	})
}

// testDevMounted is TestDevMountedDoorsListed for sidecar dev run with
// env, where the platform's public URL of the contract listener's root
// is platform ("" off the platform).
func testDevMounted(t *testing.T, env []string, platform string) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"answered"}`)
	}))
	defer agent.Close()
	cfg := filepath.Join(t.TempDir(), "sidecar.yaml")
	yaml := fmt.Sprintf("upstream: {url: %q}\nshutdown: {drain: 1s}\nmethods:\n  query: {call: POST /q}\nprotocols:\n"+
		"  a2a: {mount: /a2a, method: query}\n  mcp: {mount: /mcp}\n  openai: {mount: /, method: query}\n", agent.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "dev", "--config", cfg, "--listen", "127.0.0.1:0", "--dev-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	out := &devOutput{dev: make(chan string, 1), listening: make(chan struct{}, 8)}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Error("sidecar dev still running 15s after SIGINT")
		}
	}()
	// The platform's listener, then a line for each door mounted on it.
	dev := ""
	for listening := 0; listening < 4 || dev == ""; {
		select {
		case dev = <-out.dev:
		case <-out.listening:
			listening++
		case err := <-exited:
			exited <- err
			t.Fatalf("sidecar dev exited: %v", err)
		case <-time.After(15 * time.Second):
			t.Fatal("no dev: line and four listening lines after 15s")
		}
	}
	contract := "http://" + out.contractAddr()

	resp, err := testClient.Get(dev + "/playground/doors.json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Doors []struct {
			Protocol, URL, Curl, Mount, Passthrough string
			PassthroughURL                          string `json:"passthrough_url"`
			PassthroughCurl                         string `json:"passthrough_curl"`
			PassthroughClient                       string `json:"passthrough_client"`
			Platform                                string `json:"platform_url"`
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /playground/doors.json: %d %v", resp.StatusCode, err)
	}
	on := func(mount string) string { // the public URL of mount, if any
		if platform == "" {
			return ""
		}
		return platform + strings.TrimSuffix(mount, "/")
	}
	want := []struct{ protocol, mount, url, through, platform, answer string }{
		{"agent_platform", "", contract, "", "", ""},
		{"a2a", "/a2a", contract + "/a2a", dev + devapi.PassthroughPath("/a2a"), on("/a2a"), "answered"},
		// Its endpoint is the mount; its curl lists the tools.
		{"mcp", "/mcp", contract + "/mcp", dev + devapi.PassthroughPath("/mcp"), on("/mcp"), `"name":"query"`},
		// At "/": the listener's root, its routes under /v1.
		{"openai", "/", contract, dev + strings.TrimSuffix(devapi.PassthroughPath("/"), "/"), on("/"), "answered"},
	}
	if len(got.Doors) != len(want) {
		t.Fatalf("doors.json lists %+v, want %v", got.Doors, want)
	}
	for i, w := range want {
		d := got.Doors[i]
		if d.Protocol != w.protocol || d.Mount != w.mount || d.URL != w.url || d.PassthroughURL != w.through || d.Platform != w.platform {
			t.Errorf("door %d = %+v\nwant %s mounted at %q, at %s, through %s, on the platform %s", i, d, w.protocol, w.mount, w.url, w.through, w.platform)
			continue
		}
		if w.mount == "" {
			continue
		}
		if !strings.Contains(d.PassthroughCurl, w.through) || d.PassthroughClient == "" || strings.Contains(d.PassthroughCurl, contract) {
			t.Errorf("%s: the passthrough's curl does not call %s only, or it has no client:\n%s", d.Protocol, w.through, d.PassthroughCurl)
		}
		for _, c := range []struct{ name, curl string }{{"passthrough", d.PassthroughCurl}, {"direct", d.Curl}} {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			b, err := exec.CommandContext(ctx, "sh", "-c", c.curl).CombinedOutput()
			cancel()
			if err != nil || !strings.Contains(string(b), w.answer) {
				t.Errorf("%s: its %s curl, run: %v %q, want %s\n%s", d.Protocol, c.name, err, b, w.answer, c.curl)
			}
		}
	}

	// The card, asked as a client asks it: through the passthrough.
	card := want[1].through + "/.well-known/agent-card.json"
	resp, err = testClient.Get(card)
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ URL string }
	err = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	advertised := want[1].platform
	if advertised == "" {
		advertised = want[1].through
	}
	if err != nil || resp.StatusCode != 200 || c.URL != advertised {
		t.Errorf("GET %s: %d %v, the card's url %q, want %q", card, resp.StatusCode, err, c.URL, advertised)
	}
}

package devapi

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/upstream"
)

// testMap is the method map the tests serve; AGENT is the agent's URL.
const testMap = `
upstream: {url: AGENT}
methods:
  echo: {call: POST /echo, example: {message: hi, n: 1}}
  fail: {call: POST /fail}
  stream: {mode: stream, call: POST /stream, reply: ndjson}
`

// stack is a real agent (testdata/agent.py), a real sidecar in front of
// it (the contract routes on an httptest listener) and the emulator in
// front of the sidecar (on another).
type stack struct {
	agent    string // the agent's base URL
	contract string // the sidecar's
	dev      string // the emulator's
	cfg      *config.Config
}

func newStack(t *testing.T, opts Options) *stack {
	t.Helper()
	return newStackAt(t, startAgent(t), opts)
}

// newStackAt is a stack in front of the agent at agentURL.
func newStackAt(t *testing.T, agentURL string, opts Options) *stack {
	t.Helper()
	return newStackWrapped(t, agentURL, opts, nil)
}

// newStackWrapped is a stack whose contract listener serves the
// sidecar's handler through wrap (nil: as it is), for a test that
// watches what reaches the contract listener.
func newStackWrapped(t *testing.T, agentURL string, opts Options, wrap func(http.Handler) http.Handler) *stack {
	t.Helper()
	st := &stack{agent: agentURL}
	cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(testMap, "AGENT", st.agent)))
	if err != nil {
		t.Fatal(err)
	}
	st.cfg = cfg
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	s := &proxy.Server{Config: cfg, Agent: core.Mux{Plain: client}}
	h := s.HandlerFor(platform.Door{})
	if wrap != nil {
		h = wrap(h)
	}
	contract := httptest.NewServer(h)
	st.contract = contract.URL
	dev := httptest.NewServer(New(cfg, contract.URL, opts))
	st.dev = dev.URL
	t.Cleanup(func() {
		dev.Close()
		contract.Close()
		client.Close()
	})
	return st
}

// startAgent runs testdata/agent.py and returns its URL; it is killed
// when the test ends.
func startAgent(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is needed for the test agent")
	}
	cmd := exec.Command("python3", "testdata/agent.py")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, out)
	}()
	select {
	case line := <-ready:
		port, ok := strings.CutPrefix(strings.TrimSpace(line), "READY ")
		if !ok {
			t.Fatalf("agent.py: %q\n%s", line, stderr.String())
		}
		return "http://127.0.0.1:" + port
	case <-time.After(10 * time.Second):
		t.Fatalf("agent.py not ready after 10s\n%s", stderr.String())
	}
	return ""
}

// testClient keeps no idle connections, which goleak would report.
var testClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}

// engine is a REST path of the platform for verb.
func engine(version, verb string) string {
	return "/" + version + "/projects/my-project/locations/us-central1/reasoningEngines/123:" + verb
}

// post sends body to url and returns the response; the test fails on a
// transport error.
func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// postRead posts and reads the whole answer.
func postRead(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := post(t, ctx, url, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading: %v", url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// newStackConfig is the test method map with no agent behind it.
func newStackConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(testMap, "AGENT", "http://127.0.0.1:9")))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

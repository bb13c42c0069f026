package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/testports"
)

// One port, every door (issue 28's first test): the platform's contract
// and every door that can share its listener, mounted on it, each driven
// through that one port by the real clients its own tests use, then again
// through sidecar dev's passthrough, streams included.

// onePortMap is the method map in front of testdata/agents/doors.py
// (AGENT: its URL): the MCP clients' tools (ask, story, long, fail,
// fail_late), the OpenAI door's chat, the platform client's echo and
// stream. story emits text, which A2A's and AgentCore's callers read.
const onePortMap = `
upstream: {url: AGENT}
methods:
  ask:
    call: POST /ask
    description: Answers a question.
    parameters: {type: object, properties: {message: {type: string}}, required: [message]}
  story: {mode: stream, call: POST /story, reply: sse, emit: text, description: Tells a story.}
  long: {mode: stream, call: POST /long, reply: sse}
  fail: {call: POST /fail}
  fail_late: {mode: stream, call: POST /fail_late, reply: sse}
  chat: {mode: stream, call: POST /chat, reply: sse}
  echo: {call: POST /echo}
  stream: {mode: stream, call: POST /stream, reply: ndjson}
`

// onePortDoors mounts every door that can share the platform's listener;
// AgentCore and Foundry both claim /invocations, so FIRST is one of them.
// A2AURL is the public URL the A2A card advertises.
const onePortDoors = `
protocols:
  FIRST: {mount: /, method: story}
  a2a: {mount: /a2a, method: story, card: {name: Story agent, description: Tells stories.}A2AURL}
  mcp: {mount: /mcp, methods: [ask, story, long, fail, fail_late]}
  openai: {mount: /, method: chat, model: agent}
`

// passthroughAPI is the path of sidecar dev's passthrough to the
// contract listener's "/": what follows it is the container's path.
const passthroughAPI = "/reasoningEngines/v1/projects/p/locations/l/reasoningEngines/1/api"

// TestOnePort: one sidecar binary serves the platform's contract, A2A at
// /a2a, MCP at /mcp, OpenAI's /v1 and AgentCore's /invocations (then
// Foundry's instead) on one listener, in front of one agent process; the
// platform's client (sidecar call), @a2a-js/sdk as an A2A 1.0 and 0.3
// client, the MCP TypeScript SDK 1.x and client 2.x, the Go MCP SDK, the
// openai client and the Vercel AI SDK, and AgentCore's and Foundry's
// callers each get their door's answers through that port; then again
// through sidecar dev's passthrough (and the platform's Node client
// through its REST API). Every door's stream is read while the agent
// holds it after the first word: the word arrives through the mount and
// the passthrough before the agent sends the rest, or the test fails.
func TestOnePort(t *testing.T) {
	agent := startServerOnPort(t, nil, "python3", "../../testdata/agents/doors.py").url
	t.Run("port", func(t *testing.T) {
		sc := startOnePort(t, agent, "agentcore", false)
		driveDoors(t, agent, sc.base, "port")
	})
	t.Run("passthrough", func(t *testing.T) {
		sc := startOnePort(t, agent, "agentcore", true)
		driveDoors(t, agent, sc.dev+passthroughAPI, "passthrough")
		t.Run("agent_platform REST", func(t *testing.T) {
			t.Parallel()
			platformREST(t, agent, sc.dev)
		})
	})
	t.Run("foundry", func(t *testing.T) {
		sc := startOnePort(t, agent, "foundry", false)
		// Ready once the sidecar's first probe of the agent is answered:
		// the listening line comes before it.
		status := 0
		for deadline := time.Now().Add(10 * time.Second); status != 200 && time.Now().Before(deadline); {
			resp, err := testClient.Get(sc.base + "/readiness")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if status = resp.StatusCode; status != 200 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if status != 200 {
			t.Errorf("GET /readiness = %d within 10s, want 200", status)
		}
		held := postHeld(t, sc.base+"/invocations", `{"message":"hold-foundry"}`, agent, "foundry", "once ")
		wantReleased(t, "foundry /invocations", held)
		if !strings.Contains(held, `{"text":"once "}`) {
			t.Errorf("foundry /invocations = %q, want the story's text records", held)
		}
	})
}

// driveDoors runs every door's clients, in parallel, against the doors'
// paths after base: the platform's listener (way "port"), or sidecar
// dev's passthrough to it ("passthrough").
func driveDoors(t *testing.T, agent, base, way string) {
	run := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) { t.Parallel(); f(t) })
	}
	run("agent_platform", func(t *testing.T) { platformCall(t, agent, base, way) })
	run("a2a", func(t *testing.T) { a2aClients(t, agent, base+"/a2a", way) })
	run("mcp sdk 1.x", func(t *testing.T) { mcpSDK1(t, base+"/mcp") })
	for _, mode := range []string{"auto", "pin", "legacy"} {
		run("mcp client 2.x "+mode, func(t *testing.T) { mcpClient2(t, base+"/mcp", mode) })
	}
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		run("mcp go sdk "+cmp.Or(version, "default"), func(t *testing.T) { mcpGoSDK(t, agent, base+"/mcp", version, way) })
	}
	run("openai", func(t *testing.T) { openaiClients(t, agent, base, way) })
	run("agentcore", func(t *testing.T) { agentcoreCalls(t, agent, base, way) })
}

// onePort is the sidecar binary serving every door on one listener.
type onePort struct {
	base string // the platform's listener: http://127.0.0.1:N
	dev  string // sidecar dev's listener, "" under serve
}

// startOnePort runs the sidecar binary (sidecar dev when dev) with
// onePortDoors, first the door at "/", in front of agent, and waits until
// every door logged listening on the platform's listener, at its mount.
func startOnePort(t *testing.T, agent, first string, dev bool) *onePort {
	t.Helper()
	for try := 1; ; try++ {
		sc, out := launchOnePort(t, agent, first, dev)
		if sc != nil {
			return sc
		}
		// The dev listener's port is chosen before the sidecar runs (the
		// A2A card advertises the passthrough's URL): one taken since is
		// retried on another.
		if try == 5 || !testports.InUse(out) {
			t.Fatalf("the sidecar exited before it listened:\n%s", out)
		}
	}
}

// launchOnePort is startOnePort's one try: nil and the sidecar's output
// when it exited before listening.
func launchOnePort(t *testing.T, agent, first string, dev bool) (*onePort, string) {
	t.Helper()
	args := []string{"--listen", "127.0.0.1:0"}
	devAddr := ""
	if dev {
		// No protocols.a2a.url: the passthrough says the URL it was asked
		// on (X-Forwarded-Host and -Prefix), so the card a client reads
		// through it advertises the passthrough's URL.
		devAddr = fmt.Sprintf("127.0.0.1:%d", agentPort(t))
		args = append([]string{"dev", "--dev-listen", devAddr}, args...)
	}
	devListening := dev
	yaml := strings.NewReplacer("AGENT", agent, "FIRST", first, "A2AURL", "").Replace(onePortMap + onePortDoors)
	path := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, append(args, "--config", path)...)
	log := &listenLog{lines: make(chan map[string]any, 16)}
	cmd.Stderr, cmd.Stdout = log, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	mounts := map[string]string{"agent_platform": "", first: "/", "a2a": "/a2a", "mcp": "/mcp", "openai": "/"}
	var addr string
	deadline := time.After(30 * time.Second)
	for len(mounts) > 0 || devListening {
		select {
		case l := <-log.lines:
			if l["message"] == "dev listening" {
				if l["addr"] != devAddr {
					t.Errorf("dev listening on %v, want %s", l["addr"], devAddr)
				}
				devListening = false
				continue
			}
			protocol, _ := l["protocol"].(string)
			mount, ok := mounts[protocol]
			if !ok {
				t.Errorf("listening line %v names no door of the config", l)
				continue
			}
			delete(mounts, protocol)
			if addr == "" {
				addr, _ = l["addr"].(string)
			}
			if got, _ := l["mount"].(string); l["addr"] != addr || got != mount {
				t.Errorf("%s listening on %v at %q, want the platform's listener %s at %q", protocol, l["addr"], got, addr, mount)
			}
		case <-done:
			return nil, log.String()
		case <-deadline:
			stop()
			t.Fatalf("the sidecar did not log listening for %v within 30s:\n%s", mounts, log.String())
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("sidecar output:\n%s", log.String())
		}
	})
	sc := &onePort{base: "http://" + addr}
	if dev {
		sc.dev = "http://" + devAddr
	}
	return sc, ""
}

// listenLog is the sidecar's stderr: its "listening" and "dev listening"
// lines go to lines, every line is kept for a failure's log.
type listenLog struct {
	mu    sync.Mutex
	all   strings.Builder
	rest  []byte
	lines chan map[string]any
}

func (l *listenLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.rest = append(l.rest, p...)
	for {
		i := strings.IndexByte(string(l.rest), '\n')
		if i < 0 {
			return len(p), nil
		}
		var e map[string]any
		if json.Unmarshal(l.rest[:i], &e) == nil && (e["message"] == "listening" || e["message"] == "dev listening") {
			select {
			case l.lines <- e:
			default:
			}
		}
		l.rest = l.rest[i+1:]
	}
}

func (l *listenLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// readHeld reads a stream line by line until it ends; at the first line
// that holds marker (the agent's first word) it lets the agent's stream of
// key go on (POST /release/key). The agent sends "released " only then:
// a stream held back anywhere between the agent and the client never
// shows the word, and the agent ends it after its hold limit with
// "unreleased " instead.
func readHeld(t *testing.T, r io.Reader, agent, key, marker string) string {
	t.Helper()
	var all strings.Builder
	released := false
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		all.WriteString(line)
		if !released && strings.Contains(line, marker) {
			released = true
			resp, err := testClient.Post(agent+"/release/"+key, "application/json", nil)
			if err != nil {
				t.Fatalf("releasing the agent's stream: %v", err)
			}
			resp.Body.Close()
		}
		if err != nil {
			if err != io.EOF {
				t.Errorf("reading the held stream: %v (read %q)", err, all.String())
			}
			return all.String()
		}
	}
}

// wantReleased fails the test unless a held stream's answer says the
// agent was released, not that its hold ran out.
func wantReleased(t *testing.T, what, answer string) {
	t.Helper()
	if strings.Contains(answer, "unreleased") || !strings.Contains(answer, "released") {
		t.Errorf("%s: the agent's first word did not reach the client while it held the rest (held back on the way):\n%s", what, answer)
	}
}

// postHeld posts body to url (header: name, value, …) and reads the
// answer as readHeld does.
func postHeld(t *testing.T, url, body, agent, key, marker string, header ...string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := streamClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s = %d %q", url, resp.StatusCode, b)
	}
	return readHeld(t, resp.Body, agent, key, marker)
}

// streamClient bounds a held stream's call above the agent's hold limit
// (30 s), so a stream held back on the way ends with the agent's
// "unreleased", failing the test by name, not by its deadline.
var streamClient = &http.Client{Timeout: 60 * time.Second}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/redistest"
)

// Any replica answers any call (issue 30): three sidecars, each in front
// of its own agent process (testdata/agents/replica.py), share one real
// Redis (state.store: redis) behind a round-robin balancer on loopback
// (balancer_test.go), so every call lands on another replica than the
// last. Every door is mounted on each replica's one port (the platform's
// listener): A2A at /a2a, MCP at /mcp, OpenAI's /v1 at /.

// replicaDoors is each replica's doors and store, after onePortMap's
// methods: a lease of 2 s, so that a killed replica's task fails soon.
const replicaDoors = `
protocols:
  a2a: {mount: /a2a, method: story, card: {name: Story agent, description: Tells stories.}}
  mcp: {mount: /mcp, methods: [ask, story, long, fail, fail_late]}
  openai: {mount: /, method: chat, model: agent}
state: {store: redis, redis: {url: "${REDIS_URL}", lease: 2s}}
`

// replicaCount is how many replicas the balancer spreads calls over.
const replicaCount = 3

// failedBound is how soon a killed replica's running task must show
// failed on the others: the lease (2 s) and a renewal, with a margin
// for a loaded machine; the bound is the behaviour.
const failedBound = 15 * time.Second

// storeBound is how soon a call that needs the store answers while Redis
// is down: the client's bounds are 2 s a round trip and one retry.
const storeBound = 15 * time.Second

// replicaClient is the test's own client: its idle connections are
// closed when the test ends (goleak).
var replicaClient = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{}}

// TestReplicas: three replicas behind the round-robin balancer. The
// store is checked at each start; the stateless doors (the platform's
// contract, OpenAI) answer through the balancer; @a2a-js/sdk sends,
// streams, gets, lists, cancels a task another replica runs (its agent
// sees the request end) and subscribes to one from another replica;
// the MCP TypeScript SDK 1.x and the Go MCP SDK (2025-11-25) each run a
// whole session, and a DELETE ends a session on every replica. With
// Redis stopped, the stateless doors still answer, A2A and MCP's
// stateful calls get 503 in their protocol's shape within storeBound,
// /healthz stays 200 saying the store is unreachable; with Redis back,
// they work again. A replica SIGKILLed while it runs a task: the task
// shows failed on the others within failedBound.
func TestReplicas(t *testing.T) {
	srv := redistest.Start(t)
	t.Cleanup(replicaClient.CloseIdleConnections)
	holds := t.TempDir()
	var reps []*replica
	var bases []string
	for range replicaCount {
		agent := startServerOnPort(t, []string{"HOLD_DIR=" + holds}, "python3", "../../testdata/agents/replica.py")
		r := startReplica(t, agent.url, srv.URL())
		reps = append(reps, r)
		bases = append(bases, r.base)
	}
	bal := startBalancer(t, bases)

	t.Run("store at start", func(t *testing.T) {
		for i, r := range reps {
			if line := r.log.find(`"message":"state store"`); !strings.Contains(line, `"store":"redis"`) || !strings.Contains(line, `"host":"`+srv.Addr()+`"`) {
				t.Errorf("replica %d logged the store as %q, want redis at %s", i, line, srv.Addr())
			}
			waitBody(t, r.base+"/healthz", 200, `"store":"ok"`)
		}
	})
	t.Run("stateless", func(t *testing.T) {
		for range replicaCount {
			statelessCalls(t, bal)
		}
	})
	t.Run("a2a", func(t *testing.T) { a2aReplicas(t, bal, reps) })
	t.Run("mcp sdk 1.x", func(t *testing.T) { mcpSDK1(t, bal.url+"/mcp") })
	t.Run("mcp go sdk", func(t *testing.T) { mcpGoReplicas(t, bal, reps[0].agent) })
	t.Run("mcp session everywhere", func(t *testing.T) {
		id := mcpInitialize(t, bal, http.StatusOK)
		for range replicaCount {
			if status, body := mcpToolsList(t, bal, id); status != http.StatusOK || !strings.Contains(body, `"name":"ask"`) {
				t.Errorf("tools/list of the session = %d %s, want 200 and the tools on every replica", status, body)
			}
		}
		if status := mcpDelete(t, bal, id); status != http.StatusOK && status != http.StatusNoContent {
			t.Errorf("DELETE of the session = %d, want it ended", status)
		}
		for range replicaCount {
			if status, body := mcpToolsList(t, bal, id); status != http.StatusNotFound {
				t.Errorf("tools/list of the deleted session = %d %s, want 404 on every replica", status, body)
			}
		}
	})
	t.Run("redis down", func(t *testing.T) { redisDown(t, srv, bal, reps) })
	t.Run("kill", func(t *testing.T) { killMidTask(t, bal, reps) })

	served := bal.served()
	t.Logf("requests served per replica: %v", served)
	if n := bal.repeats(); n > 0 {
		t.Errorf("%d requests went to the replica the one before went to, want none", n)
	}
	for i, n := range served {
		if n == 0 {
			t.Errorf("replica %d served no request (served: %v)", i, served)
		}
	}
}

// replica is one sidecar binary the test runs, and its agent.
type replica struct {
	base  string // its platform's listener: http://127.0.0.1:N
	agent string // its agent's URL
	cmd   *exec.Cmd
	done  chan struct{} // closed once it exited
	log   *listenLog
}

// startReplica runs `sidecar serve` with onePortMap's methods and
// replicaDoors in front of agent, $REDIS_URL the store's URL, waits until
// every door logged listening on the platform's listener, and stops it
// by its pid when the test ends.
func startReplica(t *testing.T, agent, redisURL string) *replica {
	t.Helper()
	return startReplicaWith(t, agent, redisURL, replicaDoors)
}

// startReplicaWith is startReplica with doors (the protocols and state
// sections, and any other) instead of replicaDoors.
func startReplicaWith(t *testing.T, agent, redisURL, doors string) *replica {
	t.Helper()
	r := startServeBinary(t, strings.ReplaceAll(onePortMap, "AGENT", agent)+doors, "REDIS_URL="+redisURL)
	r.agent = agent
	return r
}

// startServeBinary runs `sidecar serve` with the config yaml and env
// (NAME=value), A2A, MCP and OpenAI mounted on the platform's listener,
// waits until every door logged listening there, and stops it by its pid
// when the test ends.
func startServeBinary(t *testing.T, yaml string, env ...string) *replica {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &replica{done: make(chan struct{}), log: &listenLog{lines: make(chan map[string]any, 16)}}
	r.cmd = exec.Command(binary, "serve", "--listen", "127.0.0.1:0", "--config", path)
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stderr, r.cmd.Stdout = r.log, io.Discard
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("replica %s output:\n%s", r.base, r.log.String())
		}
	})
	listening := map[string]bool{"agent_platform": true, "a2a": true, "mcp": true, "openai": true}
	deadline := time.After(30 * time.Second)
	for len(listening) > 0 {
		select {
		case l := <-r.log.lines:
			protocol, _ := l["protocol"].(string)
			delete(listening, protocol)
			if r.base == "" {
				addr, _ := l["addr"].(string)
				r.base = "http://" + addr
			}
		case <-r.done:
			t.Fatalf("the sidecar exited before it listened:\n%s", r.log.String())
		case <-deadline:
			t.Fatalf("the sidecar did not log listening for %v within 30s:\n%s", listening, r.log.String())
		}
	}
	return r
}

// stop ends the replica by its pid: SIGTERM, then SIGKILL after 10 s.
func (r *replica) stop() {
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
}

// kill ends the replica with SIGKILL, by its pid, and waits for it.
func (r *replica) kill() {
	r.cmd.Process.Kill()
	<-r.done
}

// find is the first line of the log holding s, "" when none does.
func (l *listenLog) find(s string) string {
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// runner is the replica whose agent holds the stream of key: exactly one
// must.
func runner(t *testing.T, reps []*replica, key string) int {
	t.Helper()
	at := -1
	for i, r := range reps {
		var got struct{ Holding bool }
		getJSON(t, r.agent+"/holding/"+key, &got)
		if !got.Holding {
			continue
		}
		if at >= 0 {
			t.Fatalf("the agents of replicas %d and %d both hold %s", at, i, key)
		}
		at = i
	}
	if at < 0 {
		t.Fatalf("no agent holds %s", key)
	}
	return at
}

// release lets the held stream of key go on, wherever it runs.
func release(t *testing.T, reps []*replica, key string) {
	t.Helper()
	resp, err := replicaClient.Post(reps[0].agent+"/release/"+key, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// agentCanceled reports whether the agent of r saw its held stream of
// key end, waiting for it up to the agent's hold limit.
func agentCanceled(t *testing.T, r *replica, key string) bool {
	t.Helper()
	var got struct{ Canceled bool }
	getJSON(t, r.agent+"/canceled/"+key, &got)
	return got.Canceled
}

// getJSON decodes the answer of GET url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := replicaClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// postTimed sends body to url with the headers (name, value, …) and returns
// the status, the body and how long the answer took.
func postTimed(t *testing.T, url, body string, header ...string) (int, string, time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	start := time.Now()
	resp, err := replicaClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start)
}

// waitBody polls GET url until it answers status with a body holding
// want; a bound of its own so that a state never reached fails by name.
func waitBody(t *testing.T, url string, status int, want string) {
	t.Helper()
	got := ""
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		resp, err := replicaClient.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got = fmt.Sprintf("%d %s", resp.StatusCode, b); resp.StatusCode == status && strings.Contains(string(b), want) {
			return
		}
	}
	t.Fatalf("GET %s = %s, want %d with %s", url, got, status, want)
}

// statelessCalls: the platform's contract and the OpenAI door answer
// through the balancer; they need no shared state.
func statelessCalls(t *testing.T, bal *balancer) {
	t.Helper()
	if status, body, _ := postTimed(t, bal.url+"/api/reasoning_engine", `{"class_method":"ask","input":{"message":"how are you"}}`); status != 200 ||
		!strings.Contains(body, `you asked: how are you`) {
		t.Errorf("POST /api/reasoning_engine ask = %d %s, want the agent's answer", status, body)
	}
	if status, body, _ := postTimed(t, bal.url+"/v1/chat/completions", `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`); status != 200 ||
		!strings.Contains(body, `"content":"echo: hi"`) {
		t.Errorf("POST /v1/chat/completions = %d %s, want the agent's echo", status, body)
	}
}

// landedOff fails the test unless the last request of method went to
// another replica than at.
func landedOff(t *testing.T, bal *balancer, method string, at int) {
	t.Helper()
	landed := bal.landed(method)
	if len(landed) == 0 {
		t.Errorf("no %s went through the balancer", method)
	} else if last := landed[len(landed)-1]; last == at {
		t.Errorf("%s landed on replica %d, which runs the task: want another", method, at)
	}
}

// containsAll reports whether s holds every one of parts.
func containsAll(s string, parts ...string) bool {
	return !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(s, p) })
}

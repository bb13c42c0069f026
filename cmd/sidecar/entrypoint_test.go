package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
)

// proc is the sidecar binary running as a process, the way a container
// runs its entrypoint.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:N
	done   chan struct{}
	mu     sync.Mutex
	logs   []map[string]any // its JSON log lines
	output bytes.Buffer     // everything it (and the agent) wrote
	events chan map[string]any
	// listens are the addresses of its listeners, by protocol.
	listens map[string]string
}

// startProc runs `sidecar --config F --listen 127.0.0.1:0 args…` and waits
// for it to listen.
func startProc(t *testing.T, yaml string, env []string, args ...string) *proc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, done: make(chan struct{}), events: make(chan map[string]any, 64)}
	p.cmd = exec.Command(binary, append([]string{"--config", path, "--listen", "127.0.0.1:0"}, args...)...)
	p.cmd.Dir = "../../testdata/agents"
	p.cmd.Env = append(os.Environ(), env...)
	// A pipe of our own, not StderrPipe: the agent's processes share it,
	// and one left behind must not keep Wait from returning. Stdout is
	// /dev/null.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = w
	err = p.cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Bytes()
			p.mu.Lock()
			p.output.Write(append(line, '\n'))
			p.mu.Unlock()
			var e map[string]any
			if json.Unmarshal(line, &e) != nil {
				continue
			}
			switch msg, _ := e["message"].(string); {
			case msg == "listening":
				// The first listener is the platform's (or the only
				// one); the others are found by their protocol.
				p.mu.Lock()
				if p.listens == nil {
					p.listens = map[string]string{}
				}
				proto, _ := e["protocol"].(string)
				p.listens[proto] = e["addr"].(string)
				p.mu.Unlock()
				select {
				case listening <- e["addr"].(string):
				default:
				}
			case strings.HasPrefix(msg, "agent "):
				e["event"] = strings.TrimPrefix(msg, "agent ")
				select {
				case p.events <- e:
				default: // nobody reads them: never block the sidecar's stderr
				}
			}
		}
	}()
	go func() {
		p.cmd.Wait()
		// Its last lines; a process of the agent's that outlived it may
		// hold the pipe open, so not for long.
		select {
		case <-scanned:
		case <-time.After(2 * time.Second):
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		select {
		case <-scanned:
		default:
			t.Errorf("the sidecar's stderr is still open after it exited: a process of the agent's outlived it")
		}
		out.Close()
		<-scanned
		if t.Failed() {
			t.Logf("sidecar output:\n%s", p.out())
		}
	})
	select {
	case addr := <-listening:
		p.base = "http://" + addr
	case <-p.done:
		t.Fatalf("sidecar exited before listening: %s", p.out())
	case <-time.After(15 * time.Second):
		t.Fatalf("sidecar did not listen: %s", p.out())
	}
	return p
}

// listen waits for the address of its listener of protocol, failing the
// test after 10 s.
func (p *proc) listen(protocol string) string {
	p.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		a := p.listens[protocol]
		p.mu.Unlock()
		if a != "" {
			return a
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %s listener after 10s: %s", protocol, p.out())
		}
	}
}

func (p *proc) out() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// wait returns the process's exit code.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		p.t.Fatalf("sidecar still running after %v", d)
		return -1
	}
}

// event waits for the next agent lifecycle event of the given kind.
func (p *proc) event(kind string) map[string]any {
	p.t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case e := <-p.events:
			if e["event"] == kind {
				return e
			}
		case <-timeout:
			p.t.Fatalf("no agent %s event; output: %s", kind, p.out())
		}
	}
}

// testClient bounds every call a test makes, so a hung sidecar fails the
// test with a message instead of Go's test timeout.
var testClient = &http.Client{Timeout: 20 * time.Second}

func (p *proc) health() int {
	resp, err := testClient.Get(p.base + "/healthz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (p *proc) waitHealth(want int) {
	p.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for p.health() != want {
		if time.Now().After(deadline) {
			p.t.Fatalf("/healthz never answered %d (last %d); output: %s", want, p.health(), p.out())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openStream starts a streaming call and returns its lines as they come.
func (p *proc) openStream(method, input string) <-chan string {
	lines := make(chan string, 16)
	req, _ := http.NewRequest(http.MethodPost, p.base+"/api/stream_reasoning_engine",
		strings.NewReader(`{"class_method":"`+method+`","input":`+input+`}`))
	go func() {
		defer close(lines)
		resp, err := testClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for {
			s, err := r.ReadString('\n')
			if s != "" {
				lines <- s
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}

// firstLine is the next line of a stream, failing the test after d.
func firstLine(t *testing.T, lines <-chan string, d time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("stream ended before its first line")
		}
		return l
	case <-time.After(d):
		t.Fatalf("no line on the stream after %v", d)
	}
	return ""
}

func collectLines(t *testing.T, lines <-chan string, d time.Duration) []string {
	t.Helper()
	var got []string
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return got
			}
			if !strings.HasSuffix(l, "\n") || !json.Valid([]byte(l)) {
				t.Errorf("torn or invalid line %q", l)
			}
			got = append(got, strings.TrimSuffix(l, "\n"))
		case <-timeout:
			t.Fatalf("stream still open after %v; lines so far %q", d, got)
		}
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// groupMembers lists the processes whose process group is pgid.
func groupMembers(pgid int) []int {
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st := procStat(pid); st != nil && st.pgrp == pgid && st.state != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

type stat struct {
	state      string
	ppid, pgrp int
}

func procStat(pid int) *stat {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 3 {
		return nil
	}
	ppid, _ := strconv.Atoi(f[1])
	pgrp, _ := strconv.Atoi(f[2])
	return &stat{state: f[0], ppid: ppid, pgrp: pgrp}
}

// procStart is a process's start time (field 22 of /proc/PID/stat), or "".
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19] // fields after "(comm)" start at 3: state is f[0], starttime (22) is f[19]
}

// zombieChildren lists the zombie processes whose parent is pid.
func zombieChildren(pid int) []int {
	var z []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		n, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st := procStat(n); st != nil && st.ppid == pid && st.state == "Z" {
			z = append(z, n)
		}
	}
	return z
}

const lifecycleMethods = `
methods:
  echo: {call: POST /echo}
  slow: {call: POST /slow}
  hang: {mode: stream, call: POST /hang}
  sse: {mode: stream, call: POST /sse}
`

func agentUpstream(t *testing.T, unix bool) string {
	if unix {
		dir, err := os.MkdirTemp("", "ep")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return "unix://" + filepath.Join(dir, "agent.sock")
	}
	return fmt.Sprintf("http://127.0.0.1:%d", agentPort(t))
}

// TestEntrypointDrainsOnSIGTERM: the sidecar starts the agent; on SIGTERM
// /healthz turns 503 at once, new calls get 503, a unary call in flight
// finishes, streams that outlive the drain budget end with one
// shutting_down line, and only then is the agent stopped.
func TestEntrypointDrainsOnSIGTERM(t *testing.T) {
	for _, unix := range []bool{false, true} {
		t.Run(fmt.Sprintf("unix=%v", unix), func(t *testing.T) {
			// A 4s drain keeps its last second (endWindow) for ending the
			// streams: time enough for their final lines on a loaded
			// machine (a 1.5s drain's 375ms was not, under -race).
			shutdown := config.Shutdown{Drain: 4 * time.Second, AgentGrace: 2 * time.Second}
			cfg := "upstream: {url: " + agentUpstream(t, unix) + ", ready: {path: /health}}\n" +
				fmt.Sprintf("shutdown: {drain: %s, agent_grace: %s}\n", shutdown.Drain, shutdown.AgentGrace) + lifecycleMethods
			// PORT belongs to the sidecar; the agent must get its own.
			p := startProc(t, cfg, []string{"PORT=1"}, "--", "python3", "agent.py")
			pid := int(p.event("started")["pid"].(float64))
			p.waitHealth(200)

			streams := make([]<-chan string, 3)
			for i := range streams {
				streams[i] = p.openStream("hang", `{}`)
				if first := firstLine(t, streams[i], 10*time.Second); !strings.Contains(first, `"started":true`) {
					t.Fatalf("stream %d first line %q", i, first)
				}
			}
			slow := make(chan int, 1)
			go func() {
				resp, err := testClient.Post(p.base+"/api/reasoning_engine", "application/json", strings.NewReader(`{"class_method":"slow","input":{"ms":600}}`))
				if err != nil {
					slow <- 0
					return
				}
				resp.Body.Close()
				slow <- resp.StatusCode
			}()
			// The slow call is at the agent (it says so on stderr).
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.out(), "agent.py slow call started"); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the slow call never reached the agent")
				}
			}
			signalled := time.Now()
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.waitHealth(503)
			if d := time.Since(signalled); d > 2*time.Second {
				t.Errorf("/healthz took %v to turn 503, want at once", d)
			}
			resp, err := testClient.Post(p.base+"/api/reasoning_engine", "application/json", strings.NewReader(`{"class_method":"echo"}`))
			if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
				t.Errorf("a new call while draining = %v %v, want 503 with Retry-After", resp, err)
			}
			if resp != nil {
				resp.Body.Close()
			}
			select {
			case code := <-slow:
				if code != 200 {
					t.Errorf("unary call in flight = %d, want 200", code)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the unary call in flight had no answer 10s after SIGTERM")
			}
			if !alive(pid) {
				t.Errorf("the agent was stopped before the drain ended")
			}
			for i, s := range streams {
				got := collectLines(t, s, 10*time.Second)
				if len(got) != 1 || !strings.HasPrefix(got[0], `{"error":{"code":503,`) || !strings.Contains(got[0], `"reason":"SHUTTING_DOWN"`) {
					t.Errorf("stream %d ended with %q, want one shutting_down line", i, got)
				}
			}
			if code := p.wait(10 * time.Second); code != 1 {
				t.Errorf("exit code = %d, want 1 (streams had to be cut)", code)
			}
			if d, budget := time.Since(signalled), shutdown.Budget(); d > budget+2*time.Second {
				t.Errorf("shutdown took %v, want about the %v drain, within its %v budget", d, shutdown.Drain, budget)
			}
			if alive(pid) {
				t.Errorf("agent %d still running after the sidecar exited", pid)
			}
		})
	}
}

// TestEntrypointDrainsInTime: streams that end within the drain budget
// complete, and the sidecar exits 0.
func TestEntrypointDrainsInTime(t *testing.T) {
	cfg := "upstream: {url: " + agentUpstream(t, false) + ", ready: {path: /health}}\nshutdown: {drain: 5s}\n" + lifecycleMethods
	p := startProc(t, cfg, nil, "--", "python3", "agent.py")
	p.waitHealth(200)
	s := p.openStream("sse", `{"n":6,"gap_ms":150}`)
	firstLine(t, s, 10*time.Second)
	p.cmd.Process.Signal(syscall.SIGTERM)
	got := collectLines(t, s, 10*time.Second)
	if len(got) != 5 || strings.Contains(strings.Join(got, ""), "error") {
		t.Errorf("stream after SIGTERM = %q, want the 5 remaining events", got)
	}
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

// TestEntrypointSignalsReachWrappedAgent: an agent behind `sh -c` still
// gets SIGTERM: the whole process group is signalled.
func TestEntrypointSignalsReachWrappedAgent(t *testing.T) {
	cfg := "upstream: {url: " + agentUpstream(t, false) + ", ready: {path: /health}}\n" + lifecycleMethods
	// The shell waits out its SIGTERM (trap :) to report python's exit.
	// (The quotes keep the report out of the command line.)
	p := startProc(t, cfg, nil, "--", "sh", "-c", `trap : TERM; python3 agent.py; echo wrapper-"done" >&2`)
	pgid := int(p.event("started")["pid"].(float64))
	p.waitHealth(200)
	members := groupMembers(pgid)
	if len(members) < 2 {
		t.Fatalf("process group %d = %v, want the shell and python", pgid, members)
	}
	// Each member by pid and start time: a pid (and so a group id) can be
	// reused by a new process once these are gone.
	started := map[int]string{}
	for _, pid := range members {
		started[pid] = procStart(pid)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	// A member may still be finishing its exit (state R, its memory
	// already released) as the sidecar exits: give it a moment.
	alive := func(pid int, start string) bool {
		st := procStat(pid)
		return st != nil && st.state != "Z" && procStart(pid) == start
	}
	for pid, start := range started {
		for deadline := time.Now().Add(time.Second); alive(pid, start) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid, start) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Errorf("process %d (%q) of the agent's group outlived the sidecar", pid, cmdline)
		}
	}
	if !strings.Contains(p.out(), "wrapper-done") {
		t.Errorf("the wrapper did not see python exit on SIGTERM")
	}
}

// TestEntrypointExitCodes: the agent's exit code becomes the sidecar's.
func TestEntrypointExitCodes(t *testing.T) {
	cfg := "upstream: {url: " + agentUpstream(t, false) + "}\n" + lifecycleMethods
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{"exit 3", "exit 3", 3},
		{"killed by SIGKILL", "kill -9 $$", 137},
		{"exit 0", "exit 0", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProc(t, cfg, nil, "--", "sh", "-c", tt.script)
			if code := p.wait(10 * time.Second); code != tt.want {
				t.Errorf("exit code = %d, want %d", code, tt.want)
			}
		})
	}
}

// TestEntrypointReapsOrphans: an orphan of the agent's tree is re-parented
// to the sidecar (a child subreaper, as PID 1 would be) and reaped when it
// exits, and the agent's own exit status still reaches the sidecar. Each
// step waits for the one before it (the orphan found, killed, gone; then
// the agent told to exit), so a loaded machine only makes it slower.
func TestEntrypointReapsOrphans(t *testing.T) {
	stop := filepath.Join(t.TempDir(), "stop")
	cfg := "upstream: {url: " + agentUpstream(t, false) + "}\n" + lifecycleMethods
	p := startProc(t, cfg, nil, "--", "sh", "-c", "(sleep 31313 &); while [ ! -e "+stop+" ]; do sleep 0.05; done; exit 5")
	sidecar := p.cmd.Process.Pid
	orphan := 0
	for deadline := time.Now().Add(10 * time.Second); orphan == 0 && time.Now().Before(deadline); {
		orphan = childRunning(sidecar, "sleep\x0031313")
		time.Sleep(20 * time.Millisecond)
	}
	if orphan == 0 {
		t.Fatalf("the orphaned sleep was not re-parented to the sidecar %d", sidecar)
	}
	syscall.Kill(orphan, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); procStat(orphan) != nil && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if procStat(orphan) != nil {
		t.Errorf("orphan %d still in the process table 10s after it was killed (zombies under the sidecar: %v)", orphan, zombieChildren(sidecar))
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(10 * time.Second); code != 5 {
		t.Errorf("exit code = %d, want the agent's 5", code)
	}
}

// childRunning finds a live child of parent whose command line starts
// with cmdline (arguments separated by NUL), or returns 0.
func childRunning(parent int, cmdline string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		st := procStat(pid)
		if st == nil || st.ppid != parent || st.state == "Z" {
			continue
		}
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(b), cmdline) {
			return pid
		}
	}
	return 0
}

// TestEntrypointAgentKilled: a SIGKILLed agent ends the caller's stream
// with one error line, /healthz turns 503, and the sidecar exits 137.
func TestEntrypointAgentKilled(t *testing.T) {
	cfg := "upstream: {url: " + agentUpstream(t, false) + ", ready: {path: /health}}\n" + lifecycleMethods
	p := startProc(t, cfg, nil, "--", "python3", "agent.py")
	pid := int(p.event("started")["pid"].(float64))
	p.waitHealth(200)
	s := p.openStream("hang", `{}`)
	firstLine(t, s, 10*time.Second)
	syscall.Kill(pid, syscall.SIGKILL)
	got := collectLines(t, s, 10*time.Second)
	if len(got) != 1 || !strings.HasPrefix(got[0], `{"error":{"code":503,`) || !strings.Contains(got[0], `"reason":"AGENT_DISCONNECTED"`) {
		t.Errorf("stream after the agent died = %q, want one agent_disconnected line", got)
	}
	if code := p.wait(10 * time.Second); code != 137 {
		t.Errorf("exit code = %d, want 137", code)
	}
}

// TestEntrypointRestartOnFailure: a crashing agent is restarted with
// backoff; /healthz is 503 while it is down and 200 again once it is back.
func TestEntrypointRestartOnFailure(t *testing.T) {
	// A long probe interval: only the supervisor's word can turn /healthz
	// 503 quickly, and only fast probing after it can see the agent back.
	cfg := "upstream: {url: " + agentUpstream(t, false) + ", ready: {path: /health, interval: 1m}, restart: {policy: on-failure, max: 3, backoff: 300ms}}\n" + lifecycleMethods
	p := startProc(t, cfg, nil, "--", "python3", "agent.py")
	first := int(p.event("started")["pid"].(float64))
	p.waitHealth(200)
	syscall.Kill(first, syscall.SIGKILL)
	p.event("exited")
	for deadline := time.Now().Add(250 * time.Millisecond); p.health() != 503; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still 200 after the agent died")
		}
	}
	second := int(p.event("started")["pid"].(float64))
	if second == first {
		t.Fatalf("restarted agent has the same pid %d", first)
	}
	p.waitHealth(200)
	r := post(t, p.base+"/api/reasoning_engine", `{"class_method":"echo","input":{"after":"restart"}}`)
	if r.status != 200 {
		t.Errorf("call after restart = %d %s", r.status, r.body)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

// TestEntrypointGivesUp: after restart.max restarts the sidecar exits with
// the agent's code.
func TestEntrypointGivesUp(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	cfg := "upstream: {url: " + agentUpstream(t, false) + ", restart: {policy: on-failure, max: 2, backoff: 50ms}}\n" + lifecycleMethods
	p := startProc(t, cfg, nil, "--", "sh", "-c", "echo run >> "+runs+"; exit 4")
	if code := p.wait(15 * time.Second); code != 4 {
		t.Errorf("exit code = %d, want 4", code)
	}
	b, _ := os.ReadFile(runs)
	if n := strings.Count(string(b), "run"); n != 3 {
		t.Errorf("agent ran %d times, want 3 (1 + 2 restarts)", n)
	}
}

// TestEntrypointCommandFromConfig: upstream.command starts the agent too,
// and a command that cannot start exits 127 with a message naming it.
func TestEntrypointCommandFromConfig(t *testing.T) {
	cfg := "upstream: {url: " + agentUpstream(t, false) + ", ready: {path: /health}, command: [python3, agent.py]}\n" + lifecycleMethods
	p := startProc(t, cfg, nil)
	p.waitHealth(200)
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code after SIGINT = %d, want 0", code)
	}

	path := filepath.Join(t.TempDir(), "sidecar.yaml")
	os.WriteFile(path, []byte("upstream: {url: http://127.0.0.1:1}\n"+lifecycleMethods), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--config", path, "--listen", "127.0.0.1:0", "--", "no-such-agent-binary")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 127 || !strings.Contains(string(out), "no-such-agent-binary") {
		t.Errorf("missing command: exit %v, output %q; want 127 naming the command", err, out)
	}
}

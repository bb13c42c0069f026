package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
)

// leftoverSleep is the background process the agents below leave behind:
// `sleep 3131`, a duration no other test uses.
const leftoverSleep = "3131"

// leftoverPIDs reads the pids of the leftover sleeps the agent wrote to
// path, one a line, and kills at cleanup any that still runs.
func leftoverPIDs(t *testing.T, path string) []int {
	t.Helper()
	b, _ := os.ReadFile(path)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			if isLeftover(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return pids
}

// isLeftover reports whether pid is a live `sleep 3131`.
func isLeftover(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	st := procStat(pid)
	return st != nil && st.state != "Z" && string(b) == "sleep\x00"+leftoverSleep+"\x00"
}

// noLeftovers fails the test for every pid still a leftover sleep a
// moment after the sidecar exited: SIGKILL takes effect when the kernel
// next runs the process, so it gets 10s of a loaded machine's time (one
// left behind lives 3131s).
func noLeftovers(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		for deadline := time.Now().Add(10 * time.Second); isLeftover(pid) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if isLeftover(pid) {
			t.Errorf("the agent's child %d (sleep %s) outlived the sidecar", pid, leftoverSleep)
		}
	}
}

// TestEntrypointRestartLeavesNoProcesses: `sidecar -- sh -c 'sleep 3131 &
// exit 3'` under restart on-failure, max 2: three runs, each leaving a
// sleep behind; none survives the sidecar, which exits 3.
func TestEntrypointRestartLeavesNoProcesses(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	cfg := "upstream: {url: " + agentUpstream(t, false) + ", restart: {policy: on-failure, max: 2, backoff: 100ms}}\n" + lifecycleMethods
	p := startProc(t, cfg, nil, "--", "sh", "-c", "sleep "+leftoverSleep+" & echo $! >> "+pids+"; exit 3")
	code := p.wait(15 * time.Second)
	left := leftoverPIDs(t, pids)
	if code != 3 {
		t.Errorf("exit code = %d, want 3", code)
	}
	if len(left) != 3 {
		t.Errorf("the agent ran %d times, want 3", len(left))
	}
	noLeftovers(t, left)
}

// TestEntrypointDrainsOnEverySignal: SIGHUP and SIGQUIT drain as SIGTERM
// does (Go's defaults would kill the sidecar at once): the stream in flight
// ends with a shutting_down line, the sidecar exits 1 (a call was cut),
// and neither the agent nor its own child outlives it.
func TestEntrypointDrainsOnEverySignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			pids := filepath.Join(t.TempDir(), "pids")
			// A 4s drain keeps its last second (endWindow) for ending the
			// stream: time enough for its final line on a loaded machine
			// (a 1s drain's 250ms was not, under -race).
			cfg := "upstream: {url: " + agentUpstream(t, false) + ", ready: {path: /health}}\nshutdown: {drain: 4s, agent_grace: 1s}\n" + lifecycleMethods
			p := startProc(t, cfg, nil, "--", "sh", "-c", "sleep "+leftoverSleep+" & echo $! >> "+pids+"; exec python3 agent.py")
			agent := int(p.event("started")["pid"].(float64))
			p.waitHealth(200)
			left := leftoverPIDs(t, pids)
			if len(left) != 1 || !isLeftover(left[0]) {
				t.Fatalf("the agent's child is not running (pids %v)", left)
			}
			s := p.openStream("hang", `{}`)
			firstLine(t, s, 10*time.Second)
			p.cmd.Process.Signal(sig)
			got := collectLines(t, s, 10*time.Second)
			if len(got) != 1 || !strings.Contains(got[0], `"error"`) || !strings.Contains(strings.ToLower(got[0]), "shutting_down") {
				t.Errorf("stream after %v = %q, want one shutting_down error line", sig, got)
			}
			if code := p.wait(10 * time.Second); code != 1 {
				t.Errorf("exit code = %d, want 1 (the drain ended a call)", code)
			}
			if st := procStat(agent); st != nil && st.state != "Z" {
				t.Errorf("agent %d still running after the sidecar exited", agent)
			}
			noLeftovers(t, left)
		})
	}
}

// agentSignalled is what the trapping agent below writes to stderr when
// it gets SIGTERM.
const agentSignalled = "agent-got-sigterm"

// trappingAgent runs agent.py behind a shell that reports its SIGTERM and
// goes on until SIGKILL: it takes all of its grace. (The quotes keep the
// report out of its command line.)
const trappingAgent = `trap 'echo agent-got-sig"term" >&2' TERM; python3 agent.py & while :; do sleep 0.05; done`

// TestEntrypointShutdownBudget: whatever the callers do, the whole
// shutdown fits shutdown.drain + agent_grace + ShutdownMargin, and the
// agent gets its SIGTERM once no call is in flight, at the latest when the
// drain ends: a caller that sent the headers and 10 bytes of a 1,000-byte
// body, and a caller that stopped reading a stream, cannot stretch it.
// Each holds its call past the drain's wait, so the calls are ended
// ("ending calls") and the agent's SIGTERM ("agent stopping") comes after
// that, when the call is over: at once when its final line fits in the
// socket's buffers, at the drain's end, when its connection is closed,
// when they are full. The order and the drain's bound are read from the
// sidecar's own log.
func TestEntrypointShutdownBudget(t *testing.T) {
	const drain, grace = 1500 * time.Millisecond, time.Second
	budget := config.Shutdown{Drain: drain, AgentGrace: grace}.Budget()
	stream := func(t *testing.T, p *proc, body string) net.Conn {
		c := dial(t, p)
		c.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(c, "POST /api/stream_reasoning_engine HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", c.RemoteAddr(), len(body), body)
		// Read the head and a little, then stop reading.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.Contains(line, "200") {
			t.Fatalf("stream answered %q, %v", line, err)
		}
		return c
	}
	tests := []struct {
		name   string
		caller func(t *testing.T, p *proc) net.Conn // holds a call in flight
	}{
		{"half-sent body", func(t *testing.T, p *proc) net.Conn {
			c := dial(t, p)
			fmt.Fprintf(c, "POST /api/reasoning_engine HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", c.RemoteAddr())
			io.WriteString(c, `{"class_me`)
			return c
		}},
		// 400,000 records fill the socket's buffers on most machines: the
		// final line cannot be written, the connection is closed at the
		// drain's end.
		{"caller not reading a long stream", func(t *testing.T, p *proc) net.Conn {
			return stream(t, p, `{"class_method":"sse","input":{"n":400000}}`)
		}},
		// A stream that waits after its first line: the final line fits,
		// the call is over as soon as it is ended.
		{"caller not reading a waiting stream", func(t *testing.T, p *proc) net.Conn {
			return stream(t, p, `{"class_method":"hang","input":{}}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := "upstream: {url: " + agentUpstream(t, false) + ", ready: {path: /health}}\n" +
				fmt.Sprintf("shutdown: {drain: %s, agent_grace: %s}\n", drain, grace) + lifecycleMethods
			p := startProc(t, cfg, nil, "--", "sh", "-c", trappingAgent)
			p.waitHealth(200)
			c := tt.caller(t, p)
			defer c.Close()
			time.Sleep(300 * time.Millisecond) // the call is in flight (and, streaming, stuck)
			if strings.Contains(p.out(), agentSignalled) {
				t.Fatalf("%q in the output before SIGTERM", agentSignalled)
			}

			signalled := time.Now()
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.wait(2 * budget)
			// Slack for a loaded machine; without the budget the agent's
			// SIGTERM came 2s late.
			const slack = 600 * time.Millisecond
			if exited := time.Since(signalled); exited > budget+slack {
				t.Errorf("the sidecar exited %v after SIGTERM, over its %v budget", exited, budget)
			}
			if !strings.Contains(p.out(), agentSignalled) {
				t.Errorf("the agent never got SIGTERM")
			}
			draining, ending, stopping := p.logTime("draining"), p.logTime("ending calls"), p.logTime("agent stopping")
			t.Logf("calls ended %v and the agent signalled %v into the drain", ending.Sub(draining), stopping.Sub(draining))
			if ending.IsZero() || stopping.IsZero() {
				t.Fatalf("logged ending calls at %v, agent stopping at %v: want both", ending, stopping)
			}
			if at := ending.Sub(draining); at < drain-endWindow(drain) {
				t.Errorf("calls ended %v into the drain, want not before its last %v", at, endWindow(drain))
			}
			if stopping.Before(ending) {
				t.Errorf("the agent got SIGTERM %v before the calls were ended", ending.Sub(stopping))
			}
			if at := stopping.Sub(draining); at > drain+slack {
				t.Errorf("the agent got SIGTERM %v into the drain, want by its end (%v)", at, drain)
			}
		})
	}
}

func dial(t *testing.T, p *proc) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(p.base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// logTime is the time of the sidecar's first log line with the message
// msg, zero when there is none.
func (p *proc) logTime(msg string) time.Time {
	for _, line := range strings.Split(p.out(), "\n") {
		var e struct{ Message, Time string }
		if json.Unmarshal([]byte(line), &e) != nil || e.Message != msg {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			p.t.Fatalf("log line %q: %v", line, err)
		}
		return at
	}
	return time.Time{}
}

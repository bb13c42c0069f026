package supervise

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		code   int
		signal syscall.Signal
	}{
		{"success", "exit 0", 0, 0},
		{"failure", "exit 3", 3, 0},
		{"highest", "exit 255", 255, 0},
		{"own sigterm", "kill -TERM $$", 143, syscall.SIGTERM},
		{"own sigkill", "kill -KILL $$", 137, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, Options{Command: shell(tt.script)})
			events := wait(t, s, 5*time.Second)
			if got := s.ExitCode(); got != tt.code {
				t.Errorf("ExitCode() after %q = %d, want %d", tt.script, got, tt.code)
			}
			if kinds(events) != "started exited" {
				t.Fatalf("events = %v, want started exited", events)
			}
			if e := events[1]; e.ExitCode != tt.code || e.Signal != tt.signal || e.PID != events[0].PID {
				t.Errorf("exited event = %+v, want code %d signal %v pid %d", e, tt.code, tt.signal, events[0].PID)
			}
			if s.Running() {
				t.Error("Running() after Done = true")
			}
		})
	}
}

func TestKilledFromOutside(t *testing.T) {
	t.Parallel()
	s := start(t, Options{Command: []string{"sleep", "30"}})
	e := next(t, s, time.Second)
	if e.Kind != Started || e.PID == 0 {
		t.Fatalf("first event = %+v, want started with a pid", e)
	}
	if !s.Running() {
		t.Error("Running() = false while sleeping")
	}
	if err := syscall.Kill(e.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	events := wait(t, s, 5*time.Second)
	if got := s.ExitCode(); got != 137 {
		t.Errorf("ExitCode() = %d, want 137", got)
	}
	if len(events) != 1 || events[0].Kind != Exited || events[0].Signal != syscall.SIGKILL {
		t.Errorf("events after kill = %+v, want one exited by SIGKILL", events)
	}
}

func TestStartError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "agent.py")
	if err := os.WriteFile(notExec, []byte("print('hi')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string // in the error
	}{
		{"not in PATH", Options{Command: []string{"no-such-agent-x7"}}, `"no-such-agent-x7"`},
		{"no such file", Options{Command: []string{"/no/such/agent"}}, `"/no/such/agent"`},
		{"not executable", Options{Command: []string{notExec}}, "agent.py"},
		{"relative to dir", Options{Command: []string{"./agent.py"}, Dir: dir}, "agent.py"},
		{"no command", Options{}, "no command"},
		{"bad policy", Options{Command: []string{"true"}, Restart: "always"}, `"always"`},
		{"negative restarts", Options{Command: []string{"true"}, MaxRestarts: -1}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(tt.opts)
			if err == nil {
				s.Stop(context.Background(), 0)
				t.Fatalf("Start(%q) = nil error, want one", tt.opts.Command)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start(%q) = %v, want it to mention %s", tt.opts.Command, err, tt.want)
			}
		})
	}
}

// groupScript is a wrapper shell whose background grandchild (python)
// records the SIGTERM it gets in the file named by $1 and its pid in $2,
// once its handler is in place.
// grandchild blocks SIGTERM before it says it is ready, then waits for
// it with sigwait: a handler and a sleep would miss a SIGTERM landing
// between the handler's last check and the sleep's start (the sleep then
// runs its whole length), a window a loaded machine widens.
const grandchild = `
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
open(sys.argv[2], "w").write(str(os.getpid()))
if signal.sigtimedwait([signal.SIGTERM], 30) is not None:
    open(sys.argv[1], "w").write("term")
`

// startWrapper starts `sh -c 'trap "exit 7" TERM; python3 grandchild & wait'`
// and returns the files the grandchild writes once it is ready.
func startWrapper(t *testing.T) (s *Supervisor, gotTerm string, gcPID int) {
	dir := t.TempDir()
	script := filepath.Join(dir, "grandchild.py")
	if err := os.WriteFile(script, []byte(grandchild), 0o644); err != nil {
		t.Fatal(err)
	}
	s = start(t, Options{
		Command: shell(`trap "exit 7" TERM; python3 grandchild.py got pid & wait`),
		Dir:     dir,
	})
	return s, filepath.Join(dir, "got"), readPID(t, filepath.Join(dir, "pid"))
}

func TestSignalReachesGroup(t *testing.T) {
	t.Parallel()
	s, got, gc := startWrapper(t)
	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("Signal(SIGTERM) = %v", err)
	}
	wait(t, s, 5*time.Second)
	if code := s.ExitCode(); code != 7 {
		t.Errorf("ExitCode() = %d, want 7 from the wrapper's trap", code)
	}
	if msg := readFile(t, got, 5*time.Second); msg != "term" {
		t.Errorf("grandchild wrote %q, want term", msg)
	}
	waitGone(t, gc, 5*time.Second)
	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("Signal after Done = %v, want nil", err)
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	t.Run("terminates the group", func(t *testing.T) {
		t.Parallel()
		s, got, gc := startWrapper(t)
		began := time.Now()
		if err := s.Stop(context.Background(), 5*time.Second); err != nil {
			t.Fatalf("Stop = %v", err)
		}
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("Stop took %v on an agent that exits on SIGTERM", took)
		}
		if code := s.ExitCode(); code != 7 {
			t.Errorf("ExitCode() = %d, want 7", code)
		}
		if msg := readFile(t, got, 5*time.Second); msg != "term" {
			t.Errorf("grandchild wrote %q, want term", msg)
		}
		waitGone(t, gc, 5*time.Second)
	})
	t.Run("kills after grace", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		// The background sleep inherits the ignored SIGTERM.
		s := start(t, Options{Command: shell(`trap "" TERM; sleep 30 & echo $! > pid; wait`), Dir: dir})
		gc := readPID(t, filepath.Join(dir, "pid"))
		const grace = 300 * time.Millisecond
		began := time.Now()
		if err := s.Stop(context.Background(), grace); err != nil {
			t.Fatalf("Stop = %v", err)
		}
		if took := time.Since(began); took < grace {
			t.Errorf("Stop took %v, want at least the %v grace", took, grace)
		}
		if code := s.ExitCode(); code != 137 {
			t.Errorf("ExitCode() = %d, want 137", code)
		}
		waitGone(t, gc, 5*time.Second)
		for range 2 {
			if err := s.Stop(context.Background(), grace); err != nil {
				t.Errorf("Stop again = %v, want nil", err)
			}
		}
	})
	t.Run("ends with ctx", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := start(t, Options{Command: shell(`trap "" TERM; echo ready > ready; sleep 30`), Dir: dir})
		readFile(t, filepath.Join(dir, "ready"), 5*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := s.Stop(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop with a short ctx = %v, want deadline exceeded", err)
		}
		if !s.Running() {
			t.Fatal("Running() = false; the agent ignores SIGTERM")
		}
		if err := s.Stop(context.Background(), 0); err != nil {
			t.Fatalf("Stop = %v", err)
		}
		if code := s.ExitCode(); code != 137 {
			t.Errorf("ExitCode() = %d, want 137", code)
		}
	})
}

func TestRestart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		policy      Policy
		maxRestarts int
		script      string // $n is this run's number, from 0
		runs        int
		code        int
		events      string
	}{
		{
			name: "never", policy: Never, script: "exit 1",
			runs: 1, code: 1, events: "started exited",
		},
		{
			name: "gives up", policy: OnFailure, maxRestarts: 3, script: "exit 1",
			runs: 4, code: 1,
			events: "started exited restarting started exited restarting started exited restarting started exited gave_up",
		},
		{
			name: "recovers", policy: OnFailure, maxRestarts: 5, script: `[ $n -ge 2 ] && exit 0; exit 1`,
			runs: 3, code: 0,
			events: "started exited restarting started exited restarting started exited",
		},
		{
			name: "restarts after a signal", policy: OnFailure, script: `[ $n -ge 1 ] && exit 0; kill -KILL $$`,
			runs: 2, code: 0,
			events: "started exited restarting started exited",
		},
		{
			name: "exit 0 is final", policy: OnFailure, script: "exit 0",
			runs: 1, code: 0, events: "started exited",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			const backoff = 20 * time.Millisecond
			began := time.Now()
			s := start(t, Options{
				Command:     shell(`n=$(cat count 2>/dev/null | wc -l); echo run >> count; ` + tt.script),
				Dir:         dir,
				Restart:     tt.policy,
				MaxRestarts: tt.maxRestarts,
				Backoff:     backoff,
				MaxBackoff:  2 * backoff,
			})
			events := wait(t, s, 10*time.Second)
			if got := kinds(events); got != tt.events {
				t.Errorf("events = %s\nwant %s", got, tt.events)
			}
			if got := s.ExitCode(); got != tt.code {
				t.Errorf("ExitCode() = %d, want %d", got, tt.code)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "count"))
			if got := strings.Count(string(b), "run"); got != tt.runs {
				t.Errorf("the command ran %d times, want %d", got, tt.runs)
			}
			// Backoff doubles from 20ms, capped at 40ms: 20, 40, 40, ...
			var least time.Duration
			for i := range tt.runs - 1 {
				least += backoff << min(i, 1)
			}
			if took := time.Since(began); took < least {
				t.Errorf("%d runs took %v, want at least %v of backoff", tt.runs, took, least)
			}
			restarts := 0
			for _, e := range events {
				if e.Kind == Started {
					if e.Restarts != restarts {
						t.Errorf("started event %+v, want restarts %d", e, restarts)
					}
					restarts++
				}
			}
		})
	}
}

func TestRestartCannotStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.sh")
	// The agent deletes itself: every restart fails to start.
	if err := os.WriteFile(agent, []byte("#!/bin/sh\nrm \"$0\"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := start(t, Options{Command: []string{agent}, Restart: OnFailure, MaxRestarts: 2, Backoff: time.Millisecond})
	events := wait(t, s, 5*time.Second)
	want := "started exited restarting exited restarting exited gave_up"
	if got := kinds(events); got != want {
		t.Fatalf("events = %s\nwant %s", got, want)
	}
	if e := events[3]; e.PID != 0 || e.ExitCode != 127 {
		t.Errorf("exit of a restart that could not start = %+v, want pid 0, code 127", e)
	}
	if got := s.ExitCode(); got != 127 {
		t.Errorf("ExitCode() = %d, want 127", got)
	}
}

func TestStopDuringBackoff(t *testing.T) {
	t.Parallel()
	s := start(t, Options{Command: shell("exit 1"), Restart: OnFailure, Backoff: time.Minute})
	for e := next(t, s, 5*time.Second); e.Kind != Restarting; e = next(t, s, 5*time.Second) {
	}
	began := time.Now()
	if err := s.Stop(context.Background(), time.Second); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("Stop during a minute's backoff took %v", took)
	}
	if events := wait(t, s, time.Second); len(events) != 0 {
		t.Errorf("events after Stop = %+v, want none", events)
	}
	if got := s.ExitCode(); got != 1 {
		t.Errorf("ExitCode() = %d, want 1", got)
	}
}

func TestEventsDropOldest(t *testing.T) {
	t.Parallel()
	const maxRestarts = 40 // 123 events, nobody reading
	s := start(t, Options{
		Command: []string{"false"}, Restart: OnFailure, MaxRestarts: maxRestarts,
		Backoff: time.Microsecond, MaxBackoff: time.Microsecond,
	})
	events := wait(t, s, 15*time.Second)
	if len(events) != eventBuffer {
		t.Fatalf("got %d events, want the last %d", len(events), eventBuffer)
	}
	if last := events[len(events)-1]; last.Kind != GaveUp || last.Restarts != maxRestarts {
		t.Errorf("last event = %+v, want gave_up after %d restarts", last, maxRestarts)
	}
}

// TestAgentDiesWithSidecar kills a sidecar (this test binary, as a helper)
// with SIGKILL and checks that its agent dies too.
func TestAgentDiesWithSidecar(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("reading the agent's pid from the helper: %v", err)
	}
	agent, _ := strconv.Atoi(strings.TrimSpace(line))
	if !alive(agent) {
		t.Fatalf("agent %d not running under the helper", agent)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, agent, 5*time.Second)
}

package supervise

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The tests with ReapOrphans make this test process a subreaper whose
// reaper waits for any child: they must not run in parallel with tests that
// start and wait for processes of their own.

// doubleFork is an agent that leaves an orphan behind while it runs: its
// grandchild outlives the child that forked it, is re-parented to the
// subreaper, and exits 9 before the agent exits 5.
const doubleFork = `
import os, sys, time
if os.fork() == 0:
    if os.fork() == 0:
        time.sleep(0.2)
        os._exit(9)
    os._exit(0)
os.wait()
time.sleep(0.4)
sys.exit(5)
`

func TestReapOrphansKeepsAgentStatus(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		code    int
		signal  syscall.Signal
	}{
		{"exit", shell("exit 3"), 3, 0},
		{"killed", shell("kill -KILL $$"), 137, syscall.SIGKILL},
		{"python double fork", []string{"python3", "-c", doubleFork}, 5, 0},
		{"orphans", shell(`for i in 1 2 3 4 5 6 7 8 9 10; do (sleep 0.1 &); done; sleep 0.3; exit 5`), 5, 0},
		// Orphans exit while the agent forks more of them.
		{"orphan storm", shell(`for i in $(seq 50); do (true &); done; sleep 0.1; exit 5`), 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, Options{Command: tt.command, ReapOrphans: true})
			events := wait(t, s, 5*time.Second)
			if got := s.ExitCode(); got != tt.code {
				t.Errorf("ExitCode() = %d, want %d", got, tt.code)
			}
			if kinds(events) != "started exited" || events[1].Signal != tt.signal {
				t.Errorf("events = %+v, want started, exited by signal %v", events, tt.signal)
			}
			// Every orphan here exits before the agent. (One that exits
			// after Done is left to whoever outlives the supervisor.)
			if z := zombieChildren(t); len(z) > 0 {
				t.Errorf("zombie children left: %v", z)
			}
		})
	}
}

// TestReapOrphanAfterAgentExit: the agent exits at once, leaving a
// grandchild that exits later, while the supervisor waits to restart. (The
// grandchild ignores the SIGTERM that a failed run's leftovers get.)
func TestReapOrphanAfterAgentExit(t *testing.T) {
	dir := t.TempDir()
	s := start(t, Options{
		Command:     shell(`[ -e again ] && exit 0; touch again; trap "" TERM; sleep 0.3 & echo $! > orphan; exit 5`),
		Dir:         dir,
		Restart:     OnFailure,
		MaxRestarts: 1,
		Backoff:     700 * time.Millisecond,
		ReapOrphans: true,
	})
	orphan := readPID(t, filepath.Join(dir, "orphan"))
	reparented := false
	for deadline := time.Now().Add(time.Second); !reparented && time.Now().Before(deadline); {
		state, ppid, ok := procStat(orphan)
		if !ok || state == 'Z' {
			break
		}
		reparented = ppid == os.Getpid()
		time.Sleep(2 * time.Millisecond)
	}
	if !reparented {
		t.Errorf("orphan %d never re-parented to the subreaper %d", orphan, os.Getpid())
	}
	events := wait(t, s, 5*time.Second)
	if want := "started exited restarting started exited"; kinds(events) != want {
		t.Fatalf("events = %s\nwant %s", kinds(events), want)
	}
	if events[1].ExitCode != 5 || events[4].ExitCode != 0 {
		t.Errorf("exit codes = %d, %d; want 5, 0", events[1].ExitCode, events[4].ExitCode)
	}
	if _, _, ok := procStat(orphan); ok {
		t.Errorf("orphan %d not reaped", orphan)
	}
	if z := zombieChildren(t); len(z) > 0 {
		t.Errorf("zombie children left: %v", z)
	}
}

func TestReapOrphansOnlyOnce(t *testing.T) {
	first := start(t, Options{Command: []string{"sleep", "30"}, ReapOrphans: true})
	if _, err := Start(Options{Command: []string{"true"}, ReapOrphans: true}); err == nil {
		t.Fatal("a second ReapOrphans supervisor started")
	}
	if err := first.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(t, first, 5*time.Second)
	second := start(t, Options{Command: []string{"true"}, ReapOrphans: true})
	wait(t, second, 5*time.Second)
	if got := second.ExitCode(); got != 0 {
		t.Errorf("ExitCode() = %d, want 0", got)
	}
}

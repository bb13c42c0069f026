package supervise

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// leftoverSleep is the background process the agent leaves behind: a sleep
// of a duration no other test uses, so a survivor is easy to recognise.
const leftoverSleep = "313"

// leftovers reads the pids the agent's runs wrote to path, one a line, and
// kills at cleanup any that still runs a sleep (never another process
// that reused the pid).
func leftovers(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no pids written: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file holds %q", b)
		}
		pids = append(pids, pid)
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

// isLeftover reports whether pid is a live `sleep 313`.
func isLeftover(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return alive(pid) && string(b) == "sleep\x00"+leftoverSleep+"\x00"
}

// waitNoLeftover polls until pid is no `sleep 313` any more.
func waitNoLeftover(t *testing.T, pid int, timeout time.Duration, when string) {
	t.Helper()
	for deadline := time.Now().Add(timeout); isLeftover(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the leftover sleep %d still runs %s", pid, when)
			return
		}
	}
}

// TestRestartEndsLeftovers: an agent that leaves a background process
// behind and fails (`sleep 313 & exit 3`) is restarted only after what its
// earlier run left has ended (SIGTERM when it exits, SIGKILL before the
// next run for one that ignores it), and Stop ends what the last run left
// although the agent itself has exited.
func TestRestartEndsLeftovers(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, script string }{
		{"ends on SIGTERM", `sleep ` + leftoverSleep + ` & echo $! >> pids; exit 3`},
		{"ignores SIGTERM", `trap "" TERM; sleep ` + leftoverSleep + ` & echo $! >> pids; exit 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := start(t, Options{Command: shell(tt.script), Dir: dir, Restart: OnFailure, MaxRestarts: 2, Backoff: 50 * time.Millisecond})
			events := wait(t, s, 10*time.Second)
			if got := kinds(events); !strings.HasSuffix(got, "gave_up") {
				t.Fatalf("events = %s, want three runs and gave_up", got)
			}
			pids := leftovers(t, filepath.Join(dir, "pids"))
			if len(pids) != 3 {
				t.Fatalf("leftover pids %v, want one per run", pids)
			}
			for i, pid := range pids[:2] {
				waitNoLeftover(t, pid, 2*time.Second, fmt.Sprintf("after run %d was restarted", i+1))
			}
			// Its shell may still be about to exec the sleep.
			for deadline := time.Now().Add(2 * time.Second); !isLeftover(pids[2]); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the last run's leftover %d is gone before Stop: the test shows nothing", pids[2])
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.Stop(ctx, 200*time.Millisecond); err != nil {
				t.Fatalf("Stop = %v", err)
			}
			waitNoLeftover(t, pids[2], time.Second, "after Stop returned")
		})
	}
}

// TestStartLogsProgramNotArgs: the agent's arguments (which may hold a
// secret passed as a flag) are not logged at info level, only at debug.
func TestStartLogsProgramNotArgs(t *testing.T) {
	t.Parallel()
	for _, level := range []zapcore.Level{zap.InfoLevel, zap.DebugLevel} {
		t.Run(level.String(), func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(level)
			s := start(t, Options{Command: []string{"sh", "-c", "exit 0", "sh", "--token=s3cret"}, Logger: zap.New(core)})
			wait(t, s, 5*time.Second)
			started := logs.FilterMessage("agent started").All()
			if len(started) != 1 {
				t.Fatalf("%d agent started lines, want 1", len(started))
			}
			fields := started[0].ContextMap()
			if fields["program"] != "sh" {
				t.Errorf("agent started fields %v: want program sh", fields)
			}
			var all strings.Builder
			for _, e := range logs.All() {
				fmt.Fprintln(&all, e.Message, e.ContextMap())
			}
			if got := strings.Contains(all.String(), "s3cret"); got != (level == zap.DebugLevel) {
				t.Errorf("at %s level, the argument logged = %v; logs:\n%s", level, got, all.String())
			}
		})
	}
}

// portHolder is what a failed run leaves behind: a process that ignores
// SIGTERM and holds the agent's port.
const portHolder = `
import signal, socket, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
open("bound", "w").write("1")
time.sleep(60)
`

// TestRestartFreesThePort: the next run can listen on the agent's port
// although the failed run left a process holding it.
func TestRestartFreesThePort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "holder.py"), []byte(portHolder), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	script := `if [ ! -e ran ]; then
	touch ran
	python3 holder.py ` + port + ` & echo $! > holder
	while [ ! -e bound ]; do sleep 0.01; done
	exit 1
fi
exec python3 -c 'import socket, sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' ` + port
	s := start(t, Options{Command: shell(script), Dir: dir, Restart: OnFailure, MaxRestarts: 1, Backoff: 50 * time.Millisecond})
	wait(t, s, 10*time.Second)
	holder := readPID(t, filepath.Join(dir, "holder"))
	t.Cleanup(func() {
		if alive(holder) {
			syscall.Kill(holder, syscall.SIGKILL)
		}
	})
	if code := s.ExitCode(); code != 0 {
		t.Errorf("the restarted agent exited %d: it could not listen on the port the failed run left held", code)
	}
}

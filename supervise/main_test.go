package supervise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

// helperEnv makes the test binary act as a sidecar that supervises
// `sleep 30`, prints the sleep's pid and waits to be killed
// (TestAgentDiesWithSidecar).
const helperEnv = "SUPERVISE_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper()
		return
	}
	goleak.VerifyTestMain(m)
}

func runHelper() {
	s, err := Start(Options{Command: []string{"sleep", "30"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	e := <-s.Events()
	fmt.Println(e.PID)
	<-s.Done()
	os.Exit(s.ExitCode())
}

// start starts a supervisor that logs to t and is stopped when t ends.
func start(t *testing.T, opts Options) *Supervisor {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("Start(%q) = %v", opts.Command, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx, 100*time.Millisecond); err != nil {
			t.Errorf("Stop at cleanup: %v", err)
		}
	})
	return s
}

func shell(script string) []string { return []string{"sh", "-c", script} }

// wait waits for s to be done and returns every event it sent.
func wait(t *testing.T, s *Supervisor, timeout time.Duration) []Event {
	t.Helper()
	timeout = patient(timeout)
	select {
	case <-s.Done():
	case <-time.After(timeout):
		t.Fatalf("supervisor not done after %v", timeout)
	}
	var events []Event
	for e := range s.Events() {
		events = append(events, e)
	}
	return events
}

// patient is a bound on waiting for something that must happen, at least
// a minute: a bound on failing, never a timing, since a python3 started on
// a machine busy with other builds may take seconds to run a line.
func patient(d time.Duration) time.Duration { return max(d, time.Minute) }

// next returns the next event, failing the test after timeout.
func next(t *testing.T, s *Supervisor, timeout time.Duration) Event {
	t.Helper()
	timeout = patient(timeout)
	select {
	case e, ok := <-s.Events():
		if !ok {
			t.Fatal("events closed")
		}
		return e
	case <-time.After(timeout):
		t.Fatalf("no event after %v", timeout)
	}
	panic("unreachable")
}

func kinds(events []Event) string {
	var b strings.Builder
	for i, e := range events {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(string(e.Kind))
	}
	return b.String()
}

// readFile polls until path exists and is not empty.
func readFile(t *testing.T, path string, timeout time.Duration) string {
	t.Helper()
	timeout = patient(timeout)
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still empty after %v (%v)", filepath.Base(path), timeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	s := readFile(t, path, 5*time.Second)
	pid, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("pid file %s: %q", filepath.Base(path), s)
	}
	return pid
}

// procStat reads a process's state and parent from /proc; ok is false when
// the process is gone (reaped).
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0][0], ppid, true
}

// alive reports whether pid runs: a zombie has exited.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != 'Z'
}

// waitGone polls until pid has exited, failing after timeout.
func waitGone(t *testing.T, pid int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive after %v", pid, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// zombieChildren lists the test process's unreaped children.
func zombieChildren(t *testing.T) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var zombies []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if state, ppid, ok := procStat(pid); ok && state == 'Z' && ppid == os.Getpid() {
			zombies = append(zombies, pid)
		}
	}
	return zombies
}

// syncBuffer is a bytes.Buffer safe for the copying goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

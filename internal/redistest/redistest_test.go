package redistest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStartStopRestart: the server answers PING at its URL's address, does
// not once stopped, and does again on the same port once restarted.
func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	if !strings.HasPrefix(s.URL(), "redis://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/0") {
		t.Errorf("URL = %q, want redis://127.0.0.1:PORT/0", s.URL())
	}
	if err := Ping(s.Addr()); err != nil {
		t.Fatalf("PING after Start: %v", err)
	}
	s.Stop()
	if err := Ping(s.Addr()); err == nil {
		t.Fatal("PING after Stop answered, want the server gone")
	}
	s.Stop() // a second Stop does nothing
	addr := s.Addr()
	s.Restart()
	if s.Addr() != addr {
		t.Errorf("Restart moved the server from %s to %s", addr, s.Addr())
	}
	if err := Ping(s.Addr()); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
}

// TestTwoServers: two servers of one test get two ports.
func TestTwoServers(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Addr() == b.Addr() {
		t.Fatalf("two servers on %s", a.Addr())
	}
	for _, s := range []*Server{a, b} {
		if err := Ping(s.Addr()); err != nil {
			t.Errorf("PING %s: %v", s.Addr(), err)
		}
	}
}

// TestMissingNamesMakeDeps: without redis-server on PATH, Start fails the
// test at once, naming `make deps` (the test binary run again with an
// empty PATH).
func TestMissingNamesMakeDeps(t *testing.T) {
	if os.Getenv("REDISTEST_CHILD") == "1" {
		Start(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMissingNamesMakeDeps$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REDISTEST_CHILD=1", "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "run `make deps` first") {
		t.Fatalf("Start without redis-server = %v, want a failure naming make deps:\n%s", err, out)
	}
}

package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStateRowsWithoutRedis: on a machine without redis-server the state
// rows say so and are skipped; the run goes on.
func TestStateRowsWithoutRedis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s := &suite{plan: quickPlan(), dir: t.TempDir()}
	defer s.stopAll()
	if err := s.stateRows(); err != nil {
		t.Fatalf("stateRows without redis-server = %v, want the rows skipped", err)
	}
	if want := "State rows: skipped, redis-server is not installed"; !strings.Contains(s.res.state, want) {
		t.Errorf("state table = %q, want it to say %q", s.res.state, want)
	}
}

// TestStartRedis: the run's redis-server answers PING on loopback and is
// gone once the suite stops its processes.
func TestStartRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (make deps)")
	}
	s := &suite{plan: quickPlan(), dir: t.TempDir()}
	defer s.stopAll()
	p, addr, err := s.startRedis()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("redis-server on %s, want loopback", addr)
	}
	if err := ping(addr); err != nil {
		t.Fatalf("PING: %v", err)
	}
	s.stopAll()
	if !p.exited() {
		t.Error("redis-server still running after stopAll")
	}
	if err := ping(addr); err == nil {
		t.Error("PING answered after stopAll")
	}
}

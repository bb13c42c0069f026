package testports

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFree: ports are below the ephemeral range, and none is handed out
// twice.
func TestFree(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p := Free(t)
		if p < 20000 || p >= 32000 || seen[p] {
			t.Fatalf("Free = %d: want a port in [20000, 32000) not handed out before", p)
		}
		seen[p] = true
	}
}

func TestInUse(t *testing.T) {
	for _, out := range []string{"OSError: [Errno 98] Address already in use", "Error: listen EADDRINUSE: address already in use :::8000", "bind: address already in use"} {
		if !InUse(out) {
			t.Errorf("InUse(%q) = false", out)
		}
	}
	if InUse("connection refused") {
		t.Error(`InUse("connection refused") = true`)
	}
}

package doortest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
)

// failHolding, set in the environment, makes TestFailureReleasesHeldCalls
// the failing test it runs.
const failHolding = "DOORTEST_FAIL_HOLDING"

// TestFailureReleasesHeldCalls: a test that fails while the agent holds
// its calls (a unary call and a stream whose reply the test still holds
// open) fails at once: its cleanups close the servers without waiting on
// the held calls. It runs that test in a child process, which must exit
// failing, well within its own -test.timeout.
func TestFailureReleasesHeldCalls(t *testing.T) {
	if os.Getenv(failHolding) != "" {
		agent := NewAgent(t)
		url := NewSidecar(t, agent, "").Serve(t, platform.Door{})
		go http.Post(url+core.RouteUnary, "application/json", strings.NewReader(`{"class_method":"hold","input":{}}`))
		resp, err := http.Post(url+core.RouteStream, "application/json", strings.NewReader(`{"class_method":"hold_stream","input":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp // held open: the failure below leaves it unread
		for agent.Held.Load() != 2 {
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("failing on purpose, two calls held")
	}
	// The bound is the behaviour: a hang is stopped by the child's own
	// test timeout, which says so.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFailureReleasesHeldCalls$", "-test.count=1", "-test.timeout=20s")
	cmd.Env = append(os.Environ(), failHolding+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "failing on purpose") || strings.Contains(string(out), "test timed out") {
		t.Errorf("the failing test = %v, want it to fail at once (exit 1), not hang:\n%s", err, out)
	}
}

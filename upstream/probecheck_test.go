package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
)

// TestProberCheck: an agent that answers its probe is ready only once the
// Check passes, and the Check's error is the readiness detail.
func TestProberCheck(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer agent.Close()
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: "+agent.URL+", ready: {path: /ready, interval: 10ms}}\nmethods: {query: {}}\n"))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	c, err := New(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer c.Close()
	p := NewProber(cfg, c)
	var pass atomic.Bool
	p.Check = func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("check without a deadline")
		}
		if !pass.Load() {
			return errors.New(`app "x" not found`)
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	waitFor := func(what string, f func(ok bool, detail string) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			ok, detail := p.Status()
			if f(ok, detail) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Status() = %v, %q; want %s", ok, detail, what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("not ready naming the check's error", func(ok bool, detail string) bool {
		return !ok && strings.Contains(detail, `app "x" not found`)
	})
	pass.Store(true)
	waitFor("ready", func(ok bool, _ string) bool { return ok })
	pass.Store(false)
	waitFor("not ready again", func(ok bool, detail string) bool {
		return !ok && strings.Contains(detail, `app "x" not found`)
	})
}

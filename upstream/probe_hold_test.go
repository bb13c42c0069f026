package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
)

// TestProbeAfterMarkDown: a readiness probe that began before the agent
// exited and is answered after (MarkDown) does not mark the dead agent
// ready, nor does any probe until Resume says a new run started.
func TestProbeAfterMarkDown(t *testing.T) {
	var block atomic.Bool
	probing := make(chan struct{}, 1)
	gate := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if block.Load() {
			select {
			case probing <- struct{}{}:
			default:
			}
			<-gate
		}
		w.Write([]byte("ok"))
	}))
	defer agent.Close()
	released := false
	release := func() {
		if !released {
			released = true
			close(gate)
		}
	}
	defer release()

	cfg, err := config.Parse("sidecar.yaml", []byte("upstream: {url: \""+agent.URL+"\", ready: {path: /health, interval: 50ms, timeout: 10s}}\nmethods: {q: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p := NewProber(cfg, client)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); p.Run(ctx) }()
	defer func() { cancel(); release(); <-ran }()

	ready := func(within time.Duration) bool {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		return p.Wait(ctx) == nil
	}
	if !ready(5 * time.Second) {
		t.Fatal("the agent never read as ready")
	}

	block.Store(true)
	select {
	case <-probing:
	case <-time.After(5 * time.Second):
		t.Fatal("no probe reached the agent")
	}
	p.MarkDown("agent process exited with code 1")
	release() // the probe begun before the exit now answers 200
	time.Sleep(300 * time.Millisecond)
	if ok, detail := p.Status(); ok {
		t.Fatalf("Status() = ready (%s) after MarkDown: a probe begun before the exit counted", detail)
	}

	p.Resume()
	if !ready(5 * time.Second) {
		_, detail := p.Status()
		t.Errorf("not ready after Resume: %s", detail)
	}
}

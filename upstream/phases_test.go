package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestSendNotesPhases: Send notes when it had its connection and when
// the agent's reply head arrived, for a 2xx and a non-2xx alike: an
// agent that waits before its head shows that wait between the two. A
// dial that fails notes neither.
func TestSendNotesPhases(t *testing.T) {
	const wait = 100 * time.Millisecond
	for _, status := range []int{http.StatusOK, http.StatusInternalServerError} {
		agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			time.Sleep(wait) // the agent thinking before its first byte
			w.WriteHeader(status)
			io.WriteString(w, `{"detail":"x"}`)
		}))
		c, err := New(testConfig(t, agent.URL, ""), zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		var p core.Phases
		before := time.Now()
		resp, err := c.Send(context.Background(), Request{Method: "q", Verb: http.MethodPost, Path: "/q", Body: []byte(`{}`), Phases: &p})
		after := time.Now()
		if err == nil {
			io.Copy(io.Discard, resp.body)
			resp.Close()
		}
		c.Close()
		agent.Close()
		if p.Connected.IsZero() || p.FirstByte.IsZero() {
			t.Fatalf("status %d: Phases = %+v, want Connected and FirstByte", status, p)
		}
		if p.Connected.Before(before) || p.FirstByte.After(after) {
			t.Errorf("status %d: Connected %v, FirstByte %v: not within the call (%v to %v)", status, p.Connected, p.FirstByte, before, after)
		}
		if got := p.FirstByte.Sub(p.Connected); got < wait {
			t.Errorf("status %d: FirstByte - Connected = %v, want at least the agent's %v", status, got, wait)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the dial is refused
	c, err := New(testConfig(t, "http://"+addr, ""), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var p core.Phases
	if _, err := c.Send(context.Background(), Request{Method: "q", Verb: http.MethodPost, Path: "/q", Timeouts: config.Timeouts{Connect: 200 * time.Millisecond}, Phases: &p}); err == nil {
		t.Fatal("Send to a closed port: no error")
	}
	if !p.Connected.IsZero() || !p.FirstByte.IsZero() {
		t.Errorf("a refused dial: Phases = %+v, want none", p)
	}
}

package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// toyOpener is toyDoor with exchanges of its own: "ping <anything>" is
// answered by the door itself, "pong", without the agent; a call can be
// ended from outside (as A2A's tasks/cancel does); other calls are the
// toy door's, answered by their exchange as "ex <output>".
type toyOpener struct {
	toyDoor
	stop chan context.CancelCauseFunc // the cancel of the call named "stop"
}

var errStopped = errors.New("stopped by its door")

func (o toyOpener) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	if strings.HasPrefix(string(body), "ping ") {
		return core.Exchange{Call: core.Call{Name: "ping"}}, &core.Answer{Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/plain"}},
			Body: []byte("pong\n"), Outcome: metrics.OK}
	}
	ex, err := o.toyDoor.Open(cfg, route, r, body)
	x := toyExchange{o}
	ex.Writer, ex.Context = x, x.Context
	return ex, err
}

// toyExchange is a toyOpener's exchange.
type toyExchange struct{ o toyOpener }

func (x toyExchange) Context(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	select {
	case x.o.stop <- cancel:
	default:
	}
	return ctx
}

func (toyExchange) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	return fmt.Fprintf(w, "ex %s\n", out)
}

func (x toyExchange) Encoder(w http.ResponseWriter) core.Encoder { return x.o.Encoder(w) }

func (x toyExchange) WriteError(w http.ResponseWriter, f core.Failure) {
	w.WriteHeader(f.Status)
	fmt.Fprintf(w, "ex-err %s\n", f.Reason)
}

var _ Door = toyOpener{}

// TestOpener: a door that opens its requests answers through its
// exchange; what it answers itself (a *core.Answer) is written as it is
// and logged with its outcome: a small body's takes no slot, a large
// body's frees the slot it waited for (with every slot taken it is the
// Door's 503, its body unread); the exchange's context is the call's, so
// the door can end the call.
func TestOpener(t *testing.T) {
	agent := &blockingAgent{started: make(chan core.Call, 1), release: make(chan struct{})}
	cfg, err := config.Parse("test.yaml", []byte("limits: {concurrency: 1, queue: 0, request_bytes: 1MiB}\n"+fakeConfig))
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	door := toyOpener{stop: make(chan context.CancelCauseFunc, 1)}
	s := &Server{Config: cfg, Agent: agent, Logger: zap.New(observed)}
	h := s.HandlerFor(door)

	held := make(chan *httptest.ResponseRecorder)
	go func() { held <- toyCall(h, http.MethodPost, "/ask", `query {"id":1}`) }()
	<-agent.started
	if w := toyCall(h, http.MethodPost, "/ask", "ping small"); w.Code != 200 || w.Body.String() != "pong\n" || w.Header().Get("Content-Type") != "text/plain" {
		t.Errorf("a small ping with the one slot taken = %d %q, want the door's 200 pong", w.Code, w.Body)
	}
	large := "ping " + strings.Repeat("x", 100<<10) // read only once it has a slot
	if w := toyCall(h, http.MethodPost, "/ask", large); w.Code != 503 || !strings.HasPrefix(w.Body.String(), "BUSY: ") {
		t.Errorf("a large ping with the one slot taken = %d %q, want the Door's 503 BUSY, its body unread", w.Code, w.Body)
	}
	if w := toyCall(h, http.MethodPost, "/ask", `query {"id":2}`); w.Code != 503 || w.Body.String() != "ex-err BUSY\n" {
		t.Errorf("a call past the one slot = %d %q, want the exchange's 503 BUSY", w.Code, w.Body)
	}
	select {
	case stop := <-door.stop:
		stop(errStopped)
	default: // Context is called before the call reaches the agent
		close(agent.release)
		<-held
		t.Fatal("the held call's exchange was not asked for its context")
	}
	if w := <-held; w.Code != 502 || w.Body.String() != "ex-err AGENT_FAILED\n" {
		t.Errorf("the call its door ended = %d %q, want the exchange's answer", w.Code, w.Body)
	}
	close(agent.release)
	if w := toyCall(h, http.MethodPost, "/ask", large); w.Code != 200 || w.Body.String() != "pong\n" {
		t.Errorf("a large ping with a slot free = %d %q, want the door's 200 pong", w.Code, w.Body)
	}
	if w := toyCall(h, http.MethodPost, "/ask", `query {"id":3}`); w.Code != 200 || w.Body.String() != "ex {\"ok\":true}\n" {
		t.Errorf("a call after the large ping = %d %q, want the exchange's output (the ping's slot freed)", w.Code, w.Body)
	}
	var pings int
	for _, l := range logs.FilterMessage("call").All() {
		if m := l.ContextMap(); m["class_method"] == "ping" {
			pings++
			if m["status"] != int64(200) || m["outcome"] != "ok" {
				t.Errorf("a ping's log line: %v", m)
			}
		}
	}
	if pings != 2 {
		t.Errorf("%d ping log lines, want 2", pings)
	}
}

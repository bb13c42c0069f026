package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// namedToy is the toy door named as a runtime's, for the protocol label.
type namedToy struct{ toyDoor }

func (namedToy) Protocol() string { return "foundry" }

// TestHandlerForSharesLimits: two doors of one Server share its
// concurrency slots, in-flight count and drain; each call's log line and
// metrics name its door's protocol, from the fixed set.
func TestHandlerForSharesLimits(t *testing.T) {
	agent := &blockingAgent{started: make(chan core.Call, 1), release: make(chan struct{})}
	s, a, logs := toyServer(t, "limits: {concurrency: 1, queue: 0}\n", agent)
	m := metrics.New()
	s.Metrics = m
	s.Protocols = []string{"foundry"}
	b := s.HandlerFor(namedToy{})

	held := make(chan *httptest.ResponseRecorder)
	go func() { held <- toyCall(a, http.MethodPost, "/ask", `query {"id":1}`) }()
	<-agent.started
	if w := toyCall(b, http.MethodPost, "/ask", `query {"id":2}`); w.Code != 503 || !strings.HasPrefix(w.Body.String(), "BUSY: ") {
		t.Errorf("a call on the second door while the first holds the one slot = %d %q, want 503 BUSY", w.Code, w.Body)
	}
	close(agent.release)
	<-held
	s.Drain()
	if w := toyCall(b, http.MethodGet, "/up", ""); w.Code != 503 {
		t.Errorf("the second door's health while draining = %d, want 503", w.Code)
	}
	if s.Ready() {
		t.Error("Ready while draining")
	}
	var got []string
	for _, l := range logs.FilterMessage("call").All() {
		got = append(got, l.ContextMap()["protocol"].(string))
	}
	if strings.Join(got, ",") != "foundry,other" {
		t.Errorf("protocols logged %q, want foundry (the busy call), then other (the toy door)", got)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`sidecar_protocol_calls_total{outcome="busy",protocol="foundry"} 1`, `sidecar_protocol_calls_total{outcome="ok",protocol="other"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

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

// streamAsked is toyDoor on one route whose requests say whether they
// stream, as OpenAI's chat completions do with "stream": true: a body
// starting with "+" asks for a stream.
type streamAsked struct{ toyDoor }

func (d streamAsked) Handler(call func(route string, stream bool) http.Handler, health http.Handler, _ core.Refuse) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /ask", call("/ask", false))
	return mux
}

func (d streamAsked) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	asked := strings.HasPrefix(string(body), "+")
	name, input, _ := strings.Cut(strings.TrimPrefix(string(body), "+"), " ")
	m := cfg.Lookup(name, asked)
	if m == nil {
		return core.Exchange{Call: core.Call{Name: name}}, &core.RequestError{Status: http.StatusNotFound, Msg: "no method " + name}
	}
	c := core.Call{Method: m, Name: name, Input: core.Input{Raw: json.RawMessage(input)}, Header: r.Header, Route: route}
	return core.Exchange{Call: c, Stream: asked, Writer: d}, nil
}

// TestStreamDecidedPerRequest: whether a call streams is its exchange's,
// decided by its request, not its route's: one route answers both, each
// call with its one log line.
func TestStreamDecidedPerRequest(t *testing.T) {
	records := &sliceRecords{recs: []string{`{"i":1}`}}
	agent := &fakeAgent{output: json.RawMessage(`{"text":"hi"}`), records: records}
	s, _, logs := toyServer(t, "", agent)
	h := s.HandlerFor(streamAsked{})
	if w := toyCall(h, http.MethodPost, "/ask", `+stream_query {}`); w.Code != 200 || w.Body.String() != "rec {\"i\":1}\n" {
		t.Errorf("a request asking for a stream = %d %q, want its records", w.Code, w.Body)
	}
	if w := toyCall(h, http.MethodPost, "/ask", `query {}`); w.Code != 200 || w.Body.String() != "out {\"text\":\"hi\"}\n" {
		t.Errorf("a request asking for none = %d %q, want its output", w.Code, w.Body)
	}
	var got []string
	for _, l := range logs.FilterMessage("call").All() {
		m := l.ContextMap()
		got = append(got, fmt.Sprintf("%v %v", m["class_method"], m["records"]))
	}
	if strings.Join(got, ",") != "stream_query 1,query 1" {
		t.Errorf("logged %q, want stream_query (1 record), then query", got)
	}
}

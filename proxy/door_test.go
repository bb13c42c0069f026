package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
)

// sliceRecords yields its records, then ends with err.
type sliceRecords struct {
	recs   []string
	err    error
	i      int
	closed bool
}

func (r *sliceRecords) Next() bool     { r.i++; return r.i <= len(r.recs) }
func (r *sliceRecords) Record() []byte { return []byte(r.recs[r.i-1]) }
func (r *sliceRecords) Err() error     { return r.err }
func (r *sliceRecords) Close()         { r.closed = true }

// fakeAgent answers every call from its fields, and keeps the last call.
type fakeAgent struct {
	output  json.RawMessage
	records *sliceRecords
	err     error
	last    core.Call
}

func (a *fakeAgent) Unary(_ context.Context, c core.Call) (json.RawMessage, error) {
	a.last = c
	c.Note("json", 0)
	return a.output, a.err
}

func (a *fakeAgent) Stream(_ context.Context, c core.Call) (core.Records, error) {
	a.last = c
	if a.err != nil {
		return nil, a.err
	}
	return a.records, nil
}

const fakeConfig = `
upstream: {url: "http://127.0.0.1:1"}
methods:
  query: {call: "POST /q/{input.id}"}
  stream_query: {mode: stream, call: POST /s}
`

// serveFake serves one request to a sidecar in front of agent, with no
// socket: the handler writes into a recorder.
func serveFake(t *testing.T, agent core.Agent, route, body string) *httptest.ResponseRecorder {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(fakeConfig))
	if err != nil {
		t.Fatal(err)
	}
	h := (&Server{Config: cfg, Agent: agent, Logger: zaptest.NewLogger(t)}).HandlerFor(platform.Door{})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, route, strings.NewReader(body)))
	return w
}

// TestFrontDoorUnary: a unary call reaches the Agent as a core.Call (its
// method, name, input indexed when the method reads fields, route) and
// its output comes back as {"output": …}.
func TestFrontDoorUnary(t *testing.T) {
	agent := &fakeAgent{output: json.RawMessage(`{"text":"hi"}`)}
	w := serveFake(t, agent, core.RouteUnary, `{"class_method":"query","input":{"id": 7}}`)
	if w.Code != 200 || w.Body.String() != `{"output":{"text":"hi"}}`+"\n" {
		t.Errorf("unary = %d %q, want 200 {\"output\":{\"text\":\"hi\"}}", w.Code, w.Body)
	}
	c := agent.last
	if c.Method == nil || c.Method.Name != "query" || c.Name != "query" || c.Route != core.RouteUnary ||
		string(c.Input.Raw) != `{"id":7}` || string(c.Input.Fields["id"]) != "7" || c.Notes == nil {
		t.Errorf("the agent got %+v, want query on %s with its input indexed", c, core.RouteUnary)
	}
}

// TestFrontDoorStream: a stream's records go out one per line, and an
// error after them is the final line in Google's error model.
func TestFrontDoorStream(t *testing.T) {
	records := &sliceRecords{recs: []string{`{"i":1}`, `{"i":2}`}, err: &core.TimeoutError{Phase: "idle", After: "1s"}}
	w := serveFake(t, &fakeAgent{records: records}, core.RouteStream, `{"class_method":"stream_query","input":{}}`)
	got := strings.Split(strings.TrimSuffix(w.Body.String(), "\n"), "\n")
	if w.Code != 200 || len(got) != 3 || got[0] != `{"i":1}` || got[1] != `{"i":2}` || !strings.Contains(got[2], `"reason":"TIMEOUT"`) {
		t.Errorf("stream = %d %q, want 200, two records and a TIMEOUT line", w.Code, w.Body)
	}
	if !records.closed {
		t.Errorf("the records were not closed")
	}
}

// TestFrontDoorErrors: each error of core's taxonomy, returned by an
// Agent, reaches the caller as the failure table says: a status and
// detail before the first byte.
func TestFrontDoorErrors(t *testing.T) {
	tests := []struct {
		err    error
		status int
		detail string
	}{
		{&core.InputError{Field: "id", Msg: "is required"}, 400, "input.id: is required"},
		{&core.StatusError{Status: 404, Detail: "no such thing"}, 404, "no such thing"},
		{&core.StatusError{Status: 302, Detail: "elsewhere"}, 502, "elsewhere"},
		{&core.DialError{Address: "/run/agent.sock", Err: fmt.Errorf("refused")}, 502, "agent unreachable: no connection could be made to it"},
		{&core.TimeoutError{Phase: "first_byte", After: "2s"}, 504, "agent sent no response within 2s"},
		{&core.AgentError{Message: "model overloaded"}, 502, "model overloaded"},
		{&core.ReplyError{Msg: "agent reply is not JSON"}, 502, "agent reply is not JSON"},
		{fmt.Errorf("reading: %w", core.ErrReplyTooLarge), 502, core.ErrReplyTooLarge.Error()},
		{core.ErrNoHandler, 501, core.ErrNoHandler.Error()},
		{core.ErrShuttingDown, 503, core.ErrShuttingDown.Error()},
		{fmt.Errorf("%w: no slot", core.ErrBusy), 503, "the sidecar is at its concurrency limit: no slot"},
		{fmt.Errorf("%w (booting)", core.ErrNotReady), 503, core.ErrNotReady.Error()},
		{fmt.Errorf("something internal at /run/agent.sock"), 502, "the call to the agent failed"},
	}
	for _, tt := range tests {
		for _, route := range []string{core.RouteUnary, core.RouteStream} {
			method := map[string]string{core.RouteUnary: "query", core.RouteStream: "stream_query"}[route]
			w := serveFake(t, &fakeAgent{err: tt.err}, route, `{"class_method":"`+method+`","input":{"id":1}}`)
			var d struct{ Detail string }
			json.Unmarshal(w.Body.Bytes(), &d)
			if w.Code != tt.status || d.Detail != tt.detail {
				t.Errorf("%s: agent error %v = %d %q, want %d %q", route, tt.err, w.Code, d.Detail, tt.status, tt.detail)
			}
			if tt.status == 503 && w.Header().Get("Retry-After") != "1" {
				t.Errorf("%s: agent error %v: no Retry-After", route, tt.err)
			}
		}
	}
}

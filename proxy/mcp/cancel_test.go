package mcp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// cancelAgent is an agent whose POST /slow streams one OpenAI chunk, then
// waits until its request ends, which closes ended; POST /ask answers at
// once.
func cancelAgent(t *testing.T) (url string, started, ended chan struct{}) {
	t.Helper()
	started, ended = make(chan struct{}), make(chan struct{})
	stop := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/ask" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `"answered"`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"thinking \"}}]}\n\n")
		http.NewResponseController(w).Flush()
		close(started)
		select {
		case <-r.Context().Done():
			close(ended)
		case <-stop:
		}
	}))
	t.Cleanup(func() {
		close(stop)
		agent.CloseClientConnections()
		agent.Close()
	})
	return agent.URL, started, ended
}

const cancelMap = `
upstream: {url: AGENT}
limits: {concurrency: 1, queue: 1, queue_timeout: 10s}
methods:
  slow: {mode: stream, call: POST /slow, reply: sse}
  ask: {call: POST /ask}
`

// TestSDK1Cancel: the MCP TypeScript SDK 1.32.2 aborting callTool (an
// AbortController, as its 60 s request timeout does) sends
// notifications/cancelled: the door ends the call, so the agent sees its
// request end, and the call's slot is free: the next call, with
// concurrency 1, is served (it would wait out queue_timeout, then 503,
// behind a slot still held).
func TestSDK1Cancel(t *testing.T) {
	agent, started, ended := cancelAgent(t)
	s := serveMap(t, cancelMap, agent, Options{})
	deps.MatchLines(t, deps.Node(t, "mcp", "cancel.mjs", s.url), []string{
		`{"step":"slow","aborted":true}`,
		`{"step":"ask","text":"answered","isError":false}`,
	})
	select {
	case <-started:
	default:
		t.Fatal("the agent never got the slow call")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's request did not end within 10s of the client cancelling it")
	}
}

// TestCancelScope: notifications/cancelled ends only the request it names
// in its own session: the same id cancelled from another session, or in
// the session under another Authorization (404), ends nothing; in its
// session it ends the call, whose answer then carries no response for it
// (a stream: its progress and no result; a unary call: 202, no body), and
// the call is no longer held.
func TestCancelScope(t *testing.T) {
	for _, tt := range []struct {
		name, tool string
	}{{"stream", "slow"}, {"unary", "slow_unary"}} {
		t.Run(tt.name, func(t *testing.T) {
			agent, started, ended := cancelAgent(t)
			s := serveMap(t, cancelMap+"  slow_unary: {call: POST /slow}\n", agent, Options{})
			a, b := initialize(t, s.url, version20251125), initialize(t, s.url, version20251125)
			type answer struct {
				status int
				body   []byte
				err    error
			}
			done := make(chan answer, 1)
			req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tt.tool+`","arguments":{},"_meta":{"progressToken":"p"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", a)
			// A stream is cancelled once its client has its progress, so
			// the answer shows what a cancel after the first byte leaves.
			// A unary call's answer begins only once the call ends: its
			// cancel waits for nothing more than the agent's call.
			progressed := make(chan struct{})
			signal := sync.OnceFunc(func() { close(progressed) })
			if tt.name == "unary" {
				signal()
			}
			go func() {
				defer signal()
				resp, err := testClient.Do(req)
				if err != nil {
					done <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				br := bufio.NewReader(resp.Body)
				var body []byte
				for tt.name == "stream" && err == nil && !bytes.HasSuffix(body, []byte("\n\n")) {
					var line []byte
					line, err = br.ReadBytes('\n')
					body = append(body, line...)
				}
				signal()
				rest, err := io.ReadAll(br)
				done <- answer{resp.StatusCode, append(body, rest...), err}
			}()
			select {
			case <-started:
			case <-time.After(hangGuard):
				t.Fatal("the agent never got the call")
			}
			select {
			case <-progressed:
			case <-time.After(hangGuard):
				t.Fatal("the stream's progress never reached its client")
			}
			cancel := func(session, auth string) int {
				resp, _ := post(t, s.url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"enough"}}`,
					"Mcp-Session-Id", session, "Authorization", auth)
				return resp.StatusCode
			}
			held := func() *exchange {
				s.door.inflight.mu.Lock()
				defer s.door.inflight.mu.Unlock()
				return s.door.inflight.calls[callKey{a, "7"}]
			}
			if got := cancel(b, ""); got != 202 || held() == nil || held().cancelled.Load() {
				t.Fatalf("cancel from another session = %d, the call cancelled or no longer held; want 202 and nothing ended", got)
			}
			if got := cancel(a, "Bearer other"); got != 404 || held() == nil || held().cancelled.Load() {
				t.Fatalf("cancel under another Authorization = %d, the call cancelled or no longer held; want 404 and nothing ended", got)
			}
			if got := cancel(a, ""); got != 202 {
				t.Fatalf("cancel in the session = %d, want 202", got)
			}
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatal("the agent's request did not end within 10s of the cancel")
			}
			var ans answer
			select {
			case ans = <-done:
			case <-time.After(hangGuard):
				t.Fatal("the cancelled call's HTTP response never ended")
			}
			if ans.err != nil {
				t.Fatal(ans.err)
			}
			if tt.name == "unary" && (ans.status != 202 || len(ans.body) != 0) {
				t.Errorf("the cancelled unary call = %d %q, want 202 and no body", ans.status, ans.body)
			}
			if tt.name == "stream" {
				if evs := events(t, ans.body); ans.status != 200 || len(evs) != 1 || evs[0].Method != "notifications/progress" {
					t.Errorf("the cancelled stream = %d %q, want its progress and no response", ans.status, ans.body)
				}
			}
			for deadline := time.Now().Add(10 * time.Second); held() != nil; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the cancelled call is still held after 10s")
				}
			}
		})
	}
}

// TestInflightBounded: the calls held for notifications/cancelled are at
// most the inflight's limit, however many are opened; each is let go when
// it ends; an id being served in a session is not held twice.
func TestInflightBounded(t *testing.T) {
	in := &inflight{limit: 4, calls: make(map[callKey]*exchange)}
	var cancels []context.CancelFunc
	for i := range 100 {
		ex := &exchange{}
		ex.inflight, ex.key = in, callKey{"s", strconv.Itoa(i % 50)}
		ctx, cancel := context.WithCancel(context.Background())
		ex.context(ctx)
		cancels = append(cancels, cancel)
	}
	if n := in.len(); n != 4 {
		t.Errorf("%d calls held after 100, want the limit, 4", n)
	}
	for _, cancel := range cancels {
		cancel()
	}
	for deadline := time.Now().Add(10 * time.Second); in.len() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls still held 10s after every one ended", in.len())
		}
	}
}

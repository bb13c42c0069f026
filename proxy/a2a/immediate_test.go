package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// immediateMap serves a held agent with one concurrency slot and no
// queue: a call that goes on without its caller still holds its slot.
const immediateMap = `
upstream: {url: AGENT}
methods:
  held: {mode: stream, call: POST /held, reply: sse}
  held_unary: {call: POST /held_unary}
limits: {request_bytes: 4096, concurrency: 1, queue: 0}
`

// heldAgent answers POST /held with one SSE record, "thinking ", then
// waits for release (or the call's end) and sends "done"; POST
// /held_unary waits likewise and answers {"text": "done"}. started is
// told of each call as it reaches the agent.
func heldAgent(t *testing.T) (url string, started chan struct{}, release chan struct{}) {
	t.Helper()
	started, release = make(chan struct{}, 8), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /held", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"text\":\"thinking \"}\n\n")
		http.NewResponseController(w).Flush()
		started <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: {\"text\":\"done\"}\n\n")
	})
	mux.HandleFunc("POST /held_unary", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		started <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"text":"done"}`)
	})
	agent := httptest.NewServer(mux)
	t.Cleanup(agent.Close)
	return agent.URL, started, release
}

// immediateWay is one binding's way to send a message that returns at
// once and to read the task back.
type immediateWay struct {
	name    string
	version string // the A2A-Version header; "": none
	send    func(base, text string) (method, path, body string)
	get     func(id string) (method, path, body string)
}

var immediateWays = []immediateWay{
	{"JSON-RPC 1.0 returnImmediately", "1.0",
		func(_, text string) (string, string, string) {
			return http.MethodPost, "/", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":%q}]},"configuration":{"returnImmediately":true}}}`, text)
		},
		func(id string) (string, string, string) {
			return http.MethodPost, "/", `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"` + id + `"}}`
		}},
	{"JSON-RPC 0.3 blocking false", "",
		func(_, text string) (string, string, string) {
			return http.MethodPost, "/", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":%q}]},"configuration":{"blocking":false}}}`, text)
		},
		func(id string) (string, string, string) {
			return http.MethodPost, "/", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"` + id + `"}}`
		}},
	{"HTTP+JSON 1.0 returnImmediately", "1.0",
		func(_, text string) (string, string, string) {
			return http.MethodPost, "/message:send", fmt.Sprintf(`{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":%q}]},"configuration":{"returnImmediately":true}}`, text)
		},
		func(id string) (string, string, string) { return http.MethodGet, "/tasks/" + id, "" }},
	{"HTTP+JSON 0.3 blocking false", "",
		func(_, text string) (string, string, string) {
			return http.MethodPost, "/v1/message:send", fmt.Sprintf(`{"message":{"role":"ROLE_USER","messageId":"m1","content":[{"text":%q}]},"configuration":{"blocking":false}}`, text)
		},
		func(id string) (string, string, string) { return http.MethodGet, "/v1/tasks/" + id, "" }},
}

// immediateDo sends one request as a caller that leaves once it has the
// answer (its connection closed), and returns the task in the answer,
// or the answer's raw body when it holds none.
func immediateDo(t *testing.T, url, version, method, path, body string) (taskJSON, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url+path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	client := &http.Client{Timeout: hangGuard, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v (a door that waits for the agent times out here)", method, path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var env struct {
		Result json.RawMessage `json:"result"`
		Task   json.RawMessage `json:"task"`
		ID     string          `json:"id"`
	}
	json.Unmarshal(b, &env)
	raw := json.RawMessage(b)
	if len(env.Result) > 0 {
		raw = env.Result
		var inner struct {
			Task json.RawMessage `json:"task"`
		}
		if json.Unmarshal(raw, &inner); len(inner.Task) > 0 {
			raw = inner.Task
		}
	} else if len(env.Task) > 0 {
		raw = env.Task
	}
	var tk taskJSON
	if json.Unmarshal(raw, &tk) != nil || tk.ID == "" {
		return taskJSON{}, string(b)
	}
	return tk, string(b)
}

// stateIs reports whether a task's state, in either version's spelling
// ("working", "TASK_STATE_WORKING"), is want.
func stateIs(state, want string) bool {
	return strings.EqualFold(strings.TrimPrefix(state, "TASK_STATE_"), want)
}

// TestReturnImmediately: a message sent with 1.0's returnImmediately, or
// 0.3's blocking: false, over both bindings, is answered at once with its
// task working while the agent is still held; the caller leaves, and the
// call goes on: the task is working in get, then completed with the
// agent's whole answer once the agent is released. Meanwhile the call
// holds its concurrency slot (a second message is refused busy), and
// gives it back when it ends. A unary method's call goes on likewise.
func TestReturnImmediately(t *testing.T) {
	for _, way := range immediateWays {
		for _, method := range []string{"held", "held_unary"} {
			if method == "held_unary" && way.name != immediateWays[0].name {
				continue
			}
			t.Run(way.name+" "+method, func(t *testing.T) {
				agent, started, release := heldAgent(t)
				url, _, _ := serveMap(t, method, immediateMap, agent)
				releaseAtEnd(t, release)
				m, p, b := way.send(url, "hi")
				tk, body := immediateDo(t, url, way.version, m, p, b)
				if !stateIs(tk.Status.State, "working") {
					t.Fatalf("the answer to a message that returns at once: %s, want its task working", body)
				}
				<-started
				m, p, b = way.get(tk.ID)
				if got, body := immediateDo(t, url, way.version, m, p, b); !stateIs(got.Status.State, "working") {
					t.Errorf("get while the agent works: %s, want the task working", body)
				}
				m, p, b = way.send(url, "again")
				if got, body := immediateDo(t, url, way.version, m, p, b); got.ID != "" || !strings.Contains(strings.ToLower(body), "busy") &&
					!strings.Contains(body, "calls in flight") {
					t.Errorf("a second message while the first holds the one slot: %s, want it refused busy", body)
				}
				close(release)
				var last string
				eventually(t, "the task completed once the agent is released", func() bool {
					m, p, b := way.get(tk.ID)
					got, body := immediateDo(t, url, way.version, m, p, b)
					last = body
					return stateIs(got.Status.State, "completed")
				})
				if !strings.Contains(last, "done") || method == "held" && !strings.Contains(last, "thinking ") {
					t.Errorf("the completed task: %s, want the agent's whole answer", last)
				}
				// The task shows completed a moment before its call gives
				// the slot back: a message refused busy meanwhile is sent
				// again.
				eventually(t, "a message once the first ended working (the slot given back)", func() bool {
					m, p, b = way.send(url, "after")
					got, body := immediateDo(t, url, way.version, m, p, b)
					last = body
					return stateIs(got.Status.State, "working")
				})
				select {
				case <-started:
				case <-time.After(time.Minute):
					t.Fatalf("the message sent once the first ended (%s) never reached the agent", last)
				}
			})
		}
	}
}

// releaseAtEnd releases the held agent, if the test did not, before the
// sidecar's server closes (cleanups run last first): a detached call
// runs on its request's handler, which the server's Close waits for, so
// a test failing while the agent holds it ends instead of hanging.
func releaseAtEnd(t *testing.T, release chan struct{}) {
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
}

// TestReturnImmediatelyShutdown: a call that went on without its caller
// is one of the calls in flight: the drain's end (EndCalls) ends it, and
// its task fails saying why.
func TestReturnImmediatelyShutdown(t *testing.T) {
	agent, started, release := heldAgent(t)
	url, s, d := serveMap(t, "held", immediateMap, agent)
	releaseAtEnd(t, release)
	way := immediateWays[0]
	m, p, b := way.send(url, "hi")
	tk, body := immediateDo(t, url, way.version, m, p, b)
	if !stateIs(tk.Status.State, "working") {
		t.Fatalf("%s, want the task working", body)
	}
	<-started
	s.Drain()
	s.EndCalls()
	// The draining door answers no get: the store says.
	eventually(t, "the task failed at shutdown", func() bool {
		got, found, err := d.getTask(context.Background(), core.OwnerOf(http.Header{}), tk.ID)
		return err == nil && found && got.state == stateFailed && strings.Contains(got.message, "shutting down")
	})
}

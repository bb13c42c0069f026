package a2a

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/upstream"
)

// Door is a proxy.Door, without importing proxy outside its tests.
var (
	_ proxy.Door = (*Door)(nil)
)

// testMap is the method map the tests serve; AGENT is the agent's URL.
const testMap = `
upstream: {url: AGENT}
methods:
  query: {call: POST /echo}
  stream_query: {mode: stream, call: POST /stream, reply: sse}
  fail: {mode: stream, call: POST /fail, reply: sse}
  slow: {mode: stream, call: POST /slow, reply: sse}
  needs_user: {mode: stream, call: "POST /users/{user_id}", reply: sse}
  story: {mode: stream, call: POST /story, reply: sse, emit: text}
  input: {call: POST /input}
  templated: {call: POST /input, body: {text: "{input.message}", session: "{input.ids.context_id}", history: "{input.messages}"}}
limits: {request_bytes: 4096}
`

// startAgent is the test agent: /echo answers {"text": "echo: <message>"};
// /input {"got": <the body it was sent>}; /story streams "[<message>]
// once upon a time" as OpenAI Chat Completions chunks, a dialect the
// mapping stage reads;
// /stream streams SSE records, a text per word of "once upon a time"
// (one an object with a text and a seq), the first saying the message,
// and one data record; /fail streams one
// record, then an in-band error; /slow streams one record and waits for
// the call to end.
func startAgent(t *testing.T) string {
	t.Helper()
	input := func(r *http.Request) (in struct {
		Message string `json:"message"`
		IDs     struct {
			ContextID string `json:"context_id"`
			TaskID    string `json:"task_id"`
		} `json:"ids"`
	}) {
		json.NewDecoder(r.Body).Decode(&in)
		return in
	}
	sse := func(w http.ResponseWriter, data ...string) {
		for _, d := range data {
			fmt.Fprintf(w, "data: %s\n\n", d)
			http.NewResponseController(w).Flush()
		}
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	mux := http.NewServeMux()
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		in := input(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"text":%s}`, q("echo: "+in.Message))
	})
	mux.HandleFunc("POST /stream", func(w http.ResponseWriter, r *http.Request) {
		in := input(r)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, `{"text":`+q("["+in.Message+"] ")+`}`, `{"seq":2,"text":"once "}`, `{"text":"upon "}`, `{"text":"a time"}`,
			`{"n":1,"task":`+q(in.IDs.TaskID)+`,"context":`+q(in.IDs.ContextID)+`}`)
	})
	mux.HandleFunc("POST /story", func(w http.ResponseWriter, r *http.Request) {
		in := input(r)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, s := range []string{"[" + in.Message + "] ", "once ", "upon ", "a time"} {
			sse(w, `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`+q(s)+`},"finish_reason":null}]}`)
		}
		sse(w, `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")
	})
	mux.HandleFunc("POST /input", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"got":%s}`, b)
	})
	mux.HandleFunc("POST /fail", func(w http.ResponseWriter, r *http.Request) {
		input(r)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, `{"text":"partial"}`, `{"error":{"message":"the model is overloaded"}}`)
	})
	mux.HandleFunc("POST /slow", func(w http.ResponseWriter, r *http.Request) {
		input(r)
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, `{"text":"thinking"}`)
		<-r.Context().Done()
	})
	agent := httptest.NewServer(mux)
	t.Cleanup(agent.Close)
	return agent.URL
}

// serve runs the sidecar with the A2A door calling method in front of
// the test agent, and returns its URL.
func serve(t *testing.T, method string) string {
	t.Helper()
	url, _, _ := serveMap(t, method, testMap, startAgent(t))
	return url
}

// serveMap runs the sidecar with the A2A door calling method of the
// method map methodMap, its AGENT the agent's URL, and returns its URL,
// its Server and its door.
func serveMap(t *testing.T, method, methodMap, agent string) (string, *proxy.Server, *Door) {
	t.Helper()
	return serveAt(t, method, methodMap, agent, "")
}

// serveAt is serveMap with the door mounted at mount on a listener it
// shares (proxy.Mounted, as on the platform's listener: every other path
// 404), its URL the mount's; "": on a listener of its own.
func serveAt(t *testing.T, method, methodMap, agent, mount string) (string, *proxy.Server, *Door) {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(methodMap, "AGENT", agent)))
	if err != nil {
		t.Fatal(err)
	}
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	door := newDoor(t, cfg, Options{Method: method, Mount: mount, Card: CardInfo{Name: "Story agent", Description: "Tells stories."}})
	// As the program builds it: the mapping stage in front of the
	// agent's client (a method's emit).
	agentOf := dialect.Agent{Agent: core.Mux{Plain: client}, MaxReply: cfg.Limits.ReplyBytes, MaxRecord: cfg.Limits.RecordBytes}
	s := &proxy.Server{Config: cfg, Agent: agentOf}
	h := s.HandlerFor(door)
	if mount != "" {
		h = proxy.Mounted(http.NotFoundHandler(), []proxy.Mount{{Path: mount, Claims: []config.Claim{{Path: mount, Tree: true}}, Handler: h}})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		client.Close()
	})
	return srv.URL + mount, s, door
}

// rpc posts a JSON-RPC request (with the A2A-Version header when
// version is not "") and returns the response.
func rpc(t *testing.T, url, version, body string) *http.Response {
	t.Helper()
	return rpcHeaders(t, url, body, "A2A-Version", version)
}

// rpcHeaders posts a JSON-RPC request with the headers of pairs (name,
// value; an empty value is not sent) and returns the response.
func rpcHeaders(t *testing.T, url, body string, pairs ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			req.Header.Set(pairs[i], pairs[i+1])
		}
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// testClient is the tests' client: a call a correct door answers at once
// fails the test after hangGuard instead of hanging it.
var testClient = &http.Client{Timeout: hangGuard}

// rpcResult is a JSON-RPC response, its result left raw.
type rpcResult struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// call posts a request and decodes its one JSON-RPC response.
func call(t *testing.T, url, version, body string) rpcResult {
	t.Helper()
	resp := rpc(t, url, version, body)
	defer resp.Body.Close()
	var r rpcResult
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &r); err != nil || r.JSONRPC != "2.0" {
		t.Fatalf("%s: response %d %q is no JSON-RPC response (%v)", body, resp.StatusCode, b, err)
	}
	return r
}

// readEvents reads an SSE stream to its end: each data: line's JSON-RPC
// response.
func readEvents(t *testing.T, resp *http.Response) []rpcResult {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s %q, want 200 text/event-stream", resp.StatusCode, ct, b)
	}
	var out []rpcResult
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("stream line %q is no data: line", line)
		}
		var r rpcResult
		if err := json.Unmarshal([]byte(data), &r); err != nil || r.JSONRPC != "2.0" {
			t.Fatalf("event %q is no JSON-RPC response (%v)", data, err)
		}
		out = append(out, r)
	}
	return out
}

// send0 and send1 are a message's params in 0.3's and 1.0's shapes.
func send0(id, method, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":%q}]}}}`, id, method, text)
}

func send1(id, method, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":%q}]}}}`, id, method, text)
}

// eventually retries f until it holds, for 5 seconds at most.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	waitFor(t, what, 30*time.Second, f) // a bound on failing, not a timing: a busy machine is slow
}

// waitFor retries f until it holds, for within at most.
func waitFor(t *testing.T, what string, within time.Duration, f func() bool) {
	t.Helper()
	for end := time.Now().Add(within); !f(); {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// httpRecorder serves one request on d's handler alone and returns the body.
func httpRecorder(d *Door, method, path string) []byte {
	w := httptest.NewRecorder()
	d.Handler(func(string, bool) http.Handler { return http.NotFoundHandler() }, http.NotFoundHandler(), writeRefusal(d)).ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w.Body.Bytes()
}

// writeRefusal is a core.Refuse that only writes d's refusal, for the
// door's handler served without a proxy.Server.
func writeRefusal(d *Door) core.Refuse {
	return func(w http.ResponseWriter, _ *http.Request, _ string, err error) { d.WriteError(w, err.(core.Failure)) }
}

// newDoor is New's door of opts on cfg's map.
func newDoor(t testing.TB, cfg *config.Config, opts Options) *Door {
	t.Helper()
	d, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

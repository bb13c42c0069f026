package a2a

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
)

// hangGuard bounds a wait that a correct door ends at once, so that a
// broken one fails the test instead of hanging it.
const hangGuard = 20 * time.Second

// sendIDs is a 0.3 message/send or message/stream naming a task and a
// context ("" leaves the member out).
func sendIDs(id, method, text, taskID, contextID string) string {
	msg := map[string]any{"kind": "message", "role": "user", "messageId": "m1", "parts": []any{map[string]string{"kind": "text", "text": text}}}
	if taskID != "" {
		msg["taskId"] = taskID
	}
	if contextID != "" {
		msg["contextId"] = contextID
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": map[string]any{"message": msg}})
	return string(b)
}

// holdStream opens a message/stream on the slow method and reads it up to
// its first artifact-update: the call holds a slot, its task working. It
// returns the task and the rest of the stream.
func holdStream(t *testing.T, url string) (eventJSON, *bufio.Scanner) {
	t.Helper()
	resp := rpc(t, url, "", send0("1", "message/stream", "hi"))
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	var first eventJSON
	for i := 0; sc.Scan(); {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		ev := decode[eventJSON](t, decode[rpcResult](t, []byte(data)).Result)
		if i == 0 {
			first = ev
		}
		i++
		if ev.Kind == "artifact-update" {
			return first, sc
		}
	}
	t.Fatal("the held stream ended early")
	return eventJSON{}, nil
}

// nextEvent is the next event of a stream holdStream opened.
func nextEvent(t *testing.T, sc *bufio.Scanner) eventJSON {
	t.Helper()
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return decode[eventJSON](t, decode[rpcResult](t, []byte(data)).Result)
		}
	}
	t.Fatal("the stream ended early")
	return eventJSON{}
}

const busyMap = `
upstream: {url: AGENT}
methods:
  slow: {mode: stream, call: POST /slow, reply: sse}
limits: {request_bytes: 2MiB, concurrency: 1, queue: 0}
`

// TestBusyRefusedUnread: with its one slot taken and no queue, the door
// answers a caller that sent only the headers of a 1 MiB body at once: 503
// with Retry-After and a JSON-RPC error, its body never read (the shared
// gate reads bodies, large ones only once they have a slot).
func TestBusyRefusedUnread(t *testing.T) {
	url, _, _ := serveMap(t, "slow", busyMap, startAgent(t))
	holdStream(t, url)

	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", conn.RemoteAddr(), 1<<20)
	conn.SetReadDeadline(time.Now().Add(hangGuard))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a busy call whose body was not sent: %v", err)
	}
	var r rpcResult
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || r.Error == nil ||
		r.Error.Code != codeInternal || string(r.ID) != "null" || !strings.Contains(r.Error.Message, "concurrency") {
		t.Errorf("busy, body unread: %d Retry-After %q %s %+v; want 503, Retry-After 1, id null, %d", resp.StatusCode,
			resp.Header.Get("Retry-After"), r.ID, r.Error, codeInternal)
	}
}

const heldMap = `
upstream: {url: AGENT}
methods:
  slow: {mode: stream, call: POST /slow, reply: sse}
limits: {request_bytes: 1MiB, concurrency: 2, queue: 100, queue_timeout: 10m}
`

// heapAlloc is the live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestHeldBodiesBounded: 40 callers each send all but the last byte of a
// 1 MiB body and hold it. Only the two calls in a slot read theirs; the
// others wait in the queue unread, so the heap grows by about the slots ×
// request_bytes, not the callers × request_bytes.
func TestHeldBodiesBounded(t *testing.T) {
	const n, size = 40, 1 << 20
	url, s, _ := serveMap(t, "slow", heldMap, startAgent(t))
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"pad":"` + strings.Repeat("x", size) + `"}}`)[:size-1]
	before := heapAlloc()

	var written atomic.Int32
	var wg sync.WaitGroup
	var conns []net.Conn
	defer func() {
		s.EndCalls() // the queued calls never notice their callers leave: end them
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	for range n {
		conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", conn.RemoteAddr(), size)
			if _, err := conn.Write(body); err == nil {
				written.Add(1)
			}
		}()
	}
	// Every call is in (the queue holds the rest), or every body was taken
	// in full before any call was (the door reading bodies itself).
	eventually(t, "the calls in flight or their bodies read", func() bool { return s.InFlight() == n || written.Load() == n })
	grew := int64(heapAlloc()) - int64(before)
	t.Logf("%d held bodies grew the heap by %d KiB", n, grew>>10)
	if limit := int64(2*2*size + 8<<20); grew > limit {
		t.Errorf("%d held 1 MiB bodies grew the heap by %d MiB, want at most %d MiB (2 slots × 1 MiB, read in growing steps, and slack)",
			n, grew>>20, limit>>20)
	}
}

// TestIDCaps: taskId, contextId and messageId over 256 bytes are -32602,
// a JSON-RPC id over it -32600, a tasks/get id over it -32602; 256 bytes
// is taken. A refused message keeps nothing in the store.
func TestIDCaps(t *testing.T) {
	url, _, d := serveMap(t, "stream_query", strings.Replace(testMap, "request_bytes: 4096", "request_bytes: 1MiB", 1), startAgent(t))
	long, huge := strings.Repeat("x", maxID+1), strings.Repeat("x", 500<<10)
	msg := func(member, value string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m","` + member + `":"` + value + `","parts":[{"kind":"text","text":"hi"}]}}}`
	}
	tests := []struct {
		name, body string
		code       int
	}{
		{"messageId", msg("messageId", long), codeInvalidParams},
		{"contextId", msg("contextId", long), codeInvalidParams},
		{"contextId of 500 KB", msg("contextId", huge), codeInvalidParams},
		{"taskId", msg("taskId", long), codeInvalidParams},
		{"JSON-RPC id", `{"jsonrpc":"2.0","id":"` + long + `","method":"tasks/get","params":{"id":"x"}}`, codeInvalidRequest},
		{"tasks/get id", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"` + long + `"}}`, codeInvalidParams},
	}
	for _, tt := range tests {
		if r := call(t, url, "", tt.body); r.Error == nil || r.Error.Code != tt.code || !strings.Contains(r.Error.Message, "256") {
			t.Errorf("%s over 256 bytes: %s %+v, want %d", tt.name, r.Result, r.Error, tt.code)
		}
	}
	if n := len(d.tasks.tasks); n != 0 {
		t.Errorf("the refused messages left %d tasks in the store", n)
	}
	ctx := strings.Repeat("c", maxID)
	r := call(t, url, "", msg("contextId", ctx))
	if tk := decode[taskJSON](t, r.Result); r.Error != nil || tk.ContextID != ctx || tk.Status.State != "completed" {
		t.Errorf("a contextId of 256 bytes: %+v %+v", tk, r.Error)
	}
}

// TestTaskStoreBounded: the store keeps limits.task_store_bytes: far more
// tasks than fit forget the oldest (tasks/get: -32001), the latest stay
// whole, and what it holds stays within the limit.
func TestTaskStoreBounded(t *testing.T) {
	m := strings.Replace(testMap, "request_bytes: 4096", "request_bytes: 4096, task_store_bytes: 64KiB", 1)
	url, _, d := serveMap(t, "query", m, startAgent(t))
	text := strings.Repeat("y", 1000)
	var ids []string
	for i := range 300 { // about 1.5 KB each: 450 KB, seven times the limit
		r := call(t, url, "", send0(fmt.Sprint(i), "message/send", text))
		tk := decode[taskJSON](t, r.Result)
		if r.Error != nil || tk.Status.State != "completed" {
			t.Fatalf("message %d: %s %+v", i, r.Result, r.Error)
		}
		ids = append(ids, tk.ID)
	}
	get := func(id string) rpcResult {
		return call(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"`+id+`"}}`)
	}
	if r := get(ids[0]); r.Error == nil || r.Error.Code != codeTaskNotFound {
		t.Errorf("tasks/get of the oldest of 300 tasks: %s %+v, want %d (forgotten)", r.Result, r.Error, codeTaskNotFound)
	}
	if r := get(ids[len(ids)-1]); r.Error != nil || decode[taskJSON](t, r.Result).text() != "echo: "+text {
		t.Errorf("tasks/get of the latest task: %s %+v, want it whole", r.Result, r.Error)
	}
	d.tasks.mu.Lock()
	held, n := d.tasks.bytes, len(d.tasks.tasks)
	d.tasks.mu.Unlock()
	if held > 64<<10 || n >= 64 {
		t.Errorf("the store holds %d tasks, %d bytes; want at most 64 KiB (fewer than 64 tasks)", n, held)
	}
}

// TestForeignTaskID: a message naming a task it did not open cannot touch
// it, as the A2A JavaScript SDK's server refuses: a task the store does not
// hold is -32001, a running one -32004 (one message per task), another
// context -32602, an ended one -32004. The owner's stream, tasks/get and
// tasks/cancel are unchanged by them.
func TestForeignTaskID(t *testing.T) {
	url := serve(t, "slow")
	first, sc := holdStream(t, url)
	id, ctx := first.ID, first.ContextID
	tests := []struct {
		name, body string
		code       int
	}{
		{"unknown task", sendIDs("2", "message/send", "mine now", "no-such-task", ""), codeTaskNotFound},
		{"running task", sendIDs("3", "message/send", "mine now", id, ""), codeUnsupported},
		{"running task, stream", sendIDs("4", "message/stream", "mine now", id, ctx), codeUnsupported},
		{"another context", sendIDs("5", "message/send", "mine now", id, "other-context"), codeInvalidParams},
	}
	for _, tt := range tests {
		if r := call(t, url, "", tt.body); r.Error == nil || r.Error.Code != tt.code || r.Result != nil {
			t.Errorf("%s: %s %+v, want error %d", tt.name, r.Result, r.Error, tt.code)
		}
	}
	get := `{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"id":"` + id + `"}}`
	if tk := decode[taskJSON](t, call(t, url, "", get).Result); tk.ContextID != ctx || tk.Status.State != "working" || tk.text() != "thinking" {
		t.Errorf("tasks/get of the owner's task after the others: %+v", tk)
	}
	cancel := `{"jsonrpc":"2.0","id":7,"method":"tasks/cancel","params":{"id":"` + id + `"}}`
	if tk := decode[taskJSON](t, call(t, url, "", cancel).Result); tk.Status.State != "canceled" {
		t.Errorf("the owner's tasks/cancel: %+v, want canceled", tk)
	}
	if last := nextEvent(t, sc); last.Kind != "status-update" || last.Status.State != "canceled" || !*last.Final {
		t.Errorf("the owner's stream after its cancel: %+v, want the final canceled status-update", last)
	}
	if r := call(t, url, "", sendIDs("8", "message/send", "again", id, ctx)); r.Error == nil || r.Error.Code != codeUnsupported {
		t.Errorf("a message to the canceled task: %s %+v, want %d", r.Result, r.Error, codeUnsupported)
	}
}

// bigAgent streams SSE records: before, a 1.1 MB one, after, each 100 KB
// of text ("a", "b", "c"), then ends; with endless, 100 KB records until
// the call ends, closing ended when it does.
func bigAgent(t *testing.T, endless bool, ended chan<- struct{}) string {
	rec := func(c string, n int) string { return `{"text":"` + strings.Repeat(c, n) + `"}` }
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if endless {
			defer close(ended)
			for r.Context().Err() == nil {
				if _, err := fmt.Fprintf(w, "data: %s\n\n", rec("z", 100<<10)); err != nil {
					return
				}
			}
			return
		}
		for i := 0; i < 21; i++ {
			c, n := "a", 100_000
			switch {
			case i == 10:
				c, n = "b", 1_100_000
			case i > 10:
				c = "c"
			}
			fmt.Fprintf(w, "data: %s\n\n", rec(c, n))
		}
	}))
	t.Cleanup(agent.Close)
	return agent.URL
}

const bigMap = `
upstream: {url: AGENT}
methods:
  big: {mode: stream, call: POST /big, reply: sse}
limits: {request_bytes: 4096, reply_bytes: REPLY}
`

// TestSendWholeArtifact: message/send on a streaming method answers every
// record, 3.1 MB with a 1.1 MB one in the middle; past limits.reply_bytes
// message/stream still streams them all, its task keeping no artifact,
// and message/send answers the task failed with one message naming the
// limit, no part of the artifact, and the agent's call ends: a stream far
// longer than the limit keeps memory bounded.
func TestSendWholeArtifact(t *testing.T) {
	url, _, _ := serveMap(t, "big", strings.Replace(bigMap, "REPLY", "8MiB", 1), bigAgent(t, false, nil))
	r := call(t, url, "", send0("1", "message/send", "hi"))
	want := strings.Repeat("a", 1_000_000) + strings.Repeat("b", 1_100_000) + strings.Repeat("c", 1_000_000)
	if tk := decode[taskJSON](t, r.Result); tk.Status.State != "completed" || tk.text() != want {
		t.Errorf("message/send of a 3.1 MB stream: %s, %d bytes of text; want completed with all %d", tk.Status.State, len(tk.text()), len(want))
	}

	// message/stream streams every record past the limit; the task keeps
	// no artifact, and tasks/get says so.
	url, _, _ = serveMap(t, "big", strings.Replace(bigMap, "REPLY", "1MiB", 1), bigAgent(t, false, nil))
	var text strings.Builder
	var id string
	for _, e := range readEvents(t, rpc(t, url, "", send0("3", "message/stream", "hi"))) {
		ev := decode[eventJSON](t, e.Result)
		if ev.Kind == "task" {
			id = ev.ID
		}
		if ev.Kind == "artifact-update" {
			text.WriteString(decode[struct{ Parts []struct{ Text string } }](t, ev.Artifact).Parts[0].Text)
		}
	}
	got := call(t, url, "", `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"`+id+`"}}`)
	if tk := decode[taskJSON](t, got.Result); text.String() != want || tk.Status.State != "completed" || len(tk.Artifacts) != 0 ||
		!strings.Contains(string(got.Result), `"metadata":{"sidecar":"`+droppedNote+`"}`) {
		t.Errorf("message/stream past reply_bytes: %d bytes streamed of %d; tasks/get %.300s, want no artifact and the note", text.Len(), len(want), got.Result)
	}

	ended := make(chan struct{})
	url, _, _ = serveMap(t, "big", strings.Replace(bigMap, "REPLY", "1MiB", 1), bigAgent(t, true, ended))
	client := &http.Client{Timeout: hangGuard}
	resp, err := client.Post(url+"/", "application/json", strings.NewReader(send0("2", "message/send", "hi")))
	if err != nil {
		t.Fatal(err)
	}
	var res rpcResult
	json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	tk := decode[taskJSON](t, res.Result)
	if tk.Status.State != "failed" || tk.Status.Message == nil || !strings.Contains(string(tk.Status.Message.Parts[0]), "limits.reply_bytes") || len(tk.Artifacts) != 0 {
		t.Errorf("message/send of an endless stream past reply_bytes: %.300s; want failed naming limits.reply_bytes, no artifact", res.Result)
	}
	select {
	case <-ended:
	case <-time.After(hangGuard):
		t.Fatal("the agent's call did not end")
	}
}

// TestLimitOnWhatWasSent: the body limit is checked on what the caller
// sent, and what it sent reaches the agent and comes back unescaped: 3,000
// "<" under a 4,096-byte limit are answered (not HTML-escaped to 18,000
// bytes and refused), 5,000 are 413 and -32600, as 5,000 "x" are.
func TestLimitOnWhatWasSent(t *testing.T) {
	url := serve(t, "query")
	resp := rpc(t, url, "", send0("1", "message/send", strings.Repeat("<", 3000)))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var r rpcResult
	json.Unmarshal(b, &r)
	if tk := decode[taskJSON](t, r.Result); resp.StatusCode != 200 || tk.Status.State != "completed" || tk.text() != "echo: "+strings.Repeat("<", 3000) ||
		strings.Contains(string(b), `\u003c`) {
		t.Errorf("3,000 < under the limit: %d %.200s", resp.StatusCode, b)
	}
	for _, c := range []string{"<", "x"} {
		resp := rpc(t, url, "", send0("2", "message/send", strings.Repeat(c, 5000)))
		json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || r.Error == nil || r.Error.Code != codeInvalidRequest {
			t.Errorf("5,000 %q over the limit: %d %+v, want 413 and %d", c, resp.StatusCode, r.Error, codeInvalidRequest)
		}
	}
}

// countingAgent answers /echo as startAgent's does and counts its calls.
func countingAgent(t *testing.T) (string, *atomic.Int32) {
	var n atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"echo"}`)
	}))
	t.Cleanup(agent.Close)
	return agent.URL, &n
}

// TestStrictJSONRPC: member names are case-sensitive and given once
// (JSONRPC, Method, a second method, params' Message are refused, and the
// agent is not called); a notification (no id) is served and answered 204
// with no body, errors included; a batch is -32600 saying so.
func TestStrictJSONRPC(t *testing.T) {
	agent, calls := countingAgent(t)
	url, _, _ := serveMap(t, "query", testMap, agent)
	msg := `{"message":{"role":"user","messageId":"m","parts":[{"kind":"text","text":"hi"}]}}`
	tests := []struct {
		name, body string
		code       int
	}{
		{"JSONRPC", `{"JSONRPC":"2.0","id":1,"method":"message/send","params":` + msg + `}`, codeInvalidRequest},
		{"Method", `{"jsonrpc":"2.0","id":1,"Method":"message/send","params":` + msg + `}`, codeInvalidRequest},
		{"method twice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","method":"message/send","params":` + msg + `}`, codeInvalidRequest},
		{"Message", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"Message":{"role":"user","parts":[{"text":"hi"}]}}}`, codeInvalidParams},
		{"Text", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","parts":[{"kind":"text","Text":"hi"}]}}}`, codeInvalidParams},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"message/send","params":` + msg + `}]`, codeInvalidRequest},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":[1]}`, codeInvalidRequest},
	}
	for _, tt := range tests {
		if r := call(t, url, "", tt.body); r.Error == nil || r.Error.Code != tt.code {
			t.Errorf("%s: %s %+v, want %d", tt.name, r.Result, r.Error, tt.code)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the refused requests called the agent %d times", n)
	}
	if r := call(t, url, "", tests[5].body); !strings.Contains(r.Error.Message, "batches are not supported") {
		t.Errorf("a batch: %q, want it to say batches are not supported", r.Error.Message)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"message/send","params":` + msg + `}`,
		`{"jsonrpc":"2.0","method":"message/stream","params":` + msg + `}`,
		`{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"nope"}}`,
		`{"jsonrpc":"2.0","method":"message/teleport"}`,
	} {
		resp := rpc(t, url, "", body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || len(b) != 0 {
			t.Errorf("notification %s: %d %q, want 204 and no body", body, resp.StatusCode, b)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the message notifications called the agent %d times, want 1 (message/send served, not answered; message/stream unsupported: a unary method)", n)
	}
}

// TestCardURL: the card's url honours the first X-Forwarded-Proto and
// X-Forwarded-Host of a trusted proxy, each only when it is a scheme or a host[:port];
// Options.URL (protocols.a2a.url) wins over them; TLS alone is https.
func TestCardURL(t *testing.T) {
	cardURL := func(d *Door, h map[string]string, tls *tls.ConnectionState) string {
		r := httptest.NewRequest(http.MethodGet, RouteCard, nil)
		r.Host, r.TLS = "10.0.0.7:9000", tls
		for k, v := range h {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		d.Handler(func(string, bool) http.Handler { return http.NotFoundHandler() }, http.NotFoundHandler(), writeRefusal(d)).ServeHTTP(w, r)
		var c card
		json.Unmarshal(w.Body.Bytes(), &c)
		if c.URL != c.SupportedInterfaces[0].URL || c.URL != c.AdditionalInterfaces[0].URL {
			t.Errorf("the card's interfaces do not share its url %q: %+v", c.URL, c)
		}
		return c.URL
	}
	d := newDoor(t, testConfig(t), Options{Method: "query", Public: trustedPeers})
	tests := []struct {
		header map[string]string
		tls    bool
		want   string
	}{
		{nil, false, "http://10.0.0.7:9000/"},
		{nil, true, "https://10.0.0.7:9000/"},
		{map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "agents.example"}, false, "https://agents.example/"},
		{map[string]string{"X-Forwarded-Proto": "HTTPS, http", "X-Forwarded-Host": "agents.example:8443, inner:9000"}, false, "https://agents.example:8443/"},
		{map[string]string{"X-Forwarded-Host": "[2001:db8::1]:443"}, false, "http://[2001:db8::1]:443/"},
		{map[string]string{"X-Forwarded-Proto": "javascript", "X-Forwarded-Host": "evil.example/x?"}, false, "http://10.0.0.7:9000/"},
		{map[string]string{"X-Forwarded-Host": `a"b`}, true, "https://10.0.0.7:9000/"},
		{map[string]string{"X-Forwarded-Host": "user@evil.example"}, false, "http://10.0.0.7:9000/"},
	}
	for _, tt := range tests {
		var state *tls.ConnectionState
		if tt.tls {
			state = &tls.ConnectionState{}
		}
		if got := cardURL(d, tt.header, state); got != tt.want {
			t.Errorf("card url with %v (TLS %v) = %q, want %q", tt.header, tt.tls, got, tt.want)
		}
	}
	fixed := newDoor(t, testConfig(t), Options{Method: "query", URL: "https://agents.example/price/"})
	if got := cardURL(fixed, map[string]string{"X-Forwarded-Proto": "http", "X-Forwarded-Host": "other.example"}, nil); got != "https://agents.example/price/" {
		t.Errorf("card url with Options.URL and X-Forwarded-*: %q, want Options.URL", got)
	}
}

// testConfig is a map with one unary method, query.
func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse("t.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {query: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

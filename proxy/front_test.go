package proxy

import (
	"bufio"
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

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// rawRequest sends request as written over a new TCP connection to the
// sidecar and reads the reply, within 5 seconds.
func rawRequest(t *testing.T, h *harness, request string) reply {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatalf("writing %q: %v", request, err)
	}
	req, _ := http.NewRequest(strings.Fields(request)[0], "/", nil)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("reading the reply to %q: %v", request, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the reply body to %q: %v", request, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// noRedirects is a client that returns a redirect instead of following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestHealthProbePaths: "/" and "/health" answer GET and HEAD exactly as
// /healthz does, ready or draining; never a redirect or a 404.
func TestHealthProbePaths(t *testing.T) {
	agent := echoAgent(t)
	h := newHarness(t, agent.URL, oneMethodConfig)
	check := func(wantStatus int, wantBody string) {
		t.Helper()
		for _, path := range []string{"/healthz", "/health", "/"} {
			for _, verb := range []string{http.MethodGet, http.MethodHead} {
				req, _ := http.NewRequest(verb, h.url+path, nil)
				resp, err := noRedirects.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := wantBody
				if verb == http.MethodHead {
					want = ""
				}
				if resp.StatusCode != wantStatus || strings.TrimSpace(string(b)) != want {
					t.Errorf("%s %s = %d %q, want %d %q as /healthz", verb, path, resp.StatusCode, b, wantStatus, want)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("%s %s Content-Type = %q, want application/json", verb, path, ct)
				}
			}
		}
	}
	check(http.StatusOK, `{"status":"ok"}`)
	h.server.Drain()
	check(http.StatusServiceUnavailable, `{"status":"draining","detail":"sidecar is shutting down"}`)
}

// TestAnyContentType: the envelope is read whatever Content-Type the
// request carries, on both routes.
func TestAnyContentType(t *testing.T) {
	agent := replyAgent(t, 200, "application/json", `{"ok":true}`)
	h := newHarness(t, agent.URL, oneMethodConfig)
	for _, ct := range []string{"application/json,application/json", "", "text/plain", "application/json; charset=utf-8",
		"application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "nonsense"} {
		for _, route := range []string{core.RouteUnary, core.RouteStream} {
			method := "query"
			if route == core.RouteStream {
				method = "stream_query"
			}
			req, _ := http.NewRequest(http.MethodPost, h.url+route, strings.NewReader(`{"class_method":"`+method+`","input":{"a":1}}`))
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), `{"ok":true}`) {
				t.Errorf("Content-Type %q on %s = %d %s, want 200 and the agent's reply", ct, route, resp.StatusCode, b)
			}
		}
	}
}

// TestBidiRoute: the platform's bidi route is answered 501 saying bidi
// streaming is not supported; the agent is not called.
func TestBidiRoute(t *testing.T) {
	var calls atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer agent.Close()
	h := newHarness(t, agent.URL, oneMethodConfig)
	r := h.post("/api/bidi_reasoning_engine", `{"class_method":"query","input":{}}`)
	if d := detail(t, r); r.status != http.StatusNotImplemented || !strings.Contains(d, "bidi streaming") || !strings.Contains(d, "not supported") {
		t.Errorf("POST /api/bidi_reasoning_engine = %d %q, want 501 saying bidi streaming is not supported", r.status, d)
	}
	if calls.Load() != 0 {
		t.Errorf("the bidi route reached the agent")
	}
}

// TestNoRedirects: a path that is not served exactly as sent gets 404 or
// 405 with {"detail"}, never a redirect to a cleaned path, whatever the
// request target's form.
func TestNoRedirects(t *testing.T) {
	agent := echoAgent(t)
	h := newHarness(t, agent.URL, oneMethodConfig)
	body := `{"class_method":"query"}`
	post := func(target string) string {
		return "POST " + target + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(h.url, "http://") + "\r\nContent-Type: application/json\r\nContent-Length: " +
			itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
	}
	get := func(target string) string {
		return "GET " + target + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(h.url, "http://") + "\r\nConnection: close\r\n\r\n"
	}
	tests := []struct {
		name, request string
		want          int
	}{
		{"dot segment", get("/./healthz"), 404},
		{"dot dot", get("/api/../healthz"), 404},
		{"double slash", post("//api/reasoning_engine"), 404},
		{"trailing slash", post("/api/reasoning_engine/"), 404},
		// An absolute form's host is the request's Host: the listener's own
		// (on loopback another name is refused 403 before routing).
		{"absolute form, no path", get(h.url), 404},
		{"absolute form, dot segment", get(h.url + "/./healthz"), 404},
		{"absolute form, double slash", post(h.url + "//api/stream_reasoning_engine"), 404},
		{"dot segment, wrong verb", get("/./api/reasoning_engine"), 404},
		{"absolute form of a served path", post(h.url + "/api/reasoning_engine"), 200},
		{"absolute form under another name", post("http://evil.example/api/reasoning_engine"), 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawRequest(t, h, tt.request)
			if r.status >= 300 && r.status < 400 || r.header.Get("Location") != "" {
				t.Fatalf("%q = %d Location %q, want no redirect", tt.request, r.status, r.header.Get("Location"))
			}
			if r.status != tt.want {
				t.Errorf("%q = %d %s, want %d", tt.request, r.status, r.body, tt.want)
			}
			if tt.want != 200 {
				detail(t, r)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestMethodNameChecked: through "*", a class_method that is not a method
// name (control characters, a slash, too long) is a 400 before the agent
// is called, and neither the reply nor the log line carries more than a
// clipped copy of it.
func TestMethodNameChecked(t *testing.T) {
	hangsAfter(t, 30*time.Second) // a slot never freed would hold a call for good
	var calls atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, "upstream: {url: AGENT}\nmethods: {\"*\": {}}\n")
	huge := strings.Repeat("m", 1<<20)
	for _, name := range []string{"a\nb", "a\x01b", "a/b", "../x", "a b", "a%2Fb", strings.Repeat("m", 257), huge, "é"} {
		for _, route := range []string{core.RouteUnary, core.RouteStream} {
			b, _ := json.Marshal(map[string]any{"class_method": name, "input": map[string]any{}})
			r := h.post(route, string(b))
			d := detail(t, r)
			if r.status != http.StatusBadRequest || !strings.Contains(d, "is not a method name") {
				t.Errorf("%s class_method %.40q = %d %.200q, want 400 not a method name", route, name, r.status, d)
			}
			if len(d) > 500 {
				t.Errorf("%s detail for a %d-byte class_method is %d bytes, want it clipped", route, len(name), len(d))
			}
		}
	}
	if calls.Load() != 0 {
		t.Errorf("the agent was called %d times, want 0", calls.Load())
	}
	if r := h.unary("my-tool.v2", `{}`); r.status != 200 {
		t.Errorf("class_method my-tool.v2 = %d %s, want 200", r.status, r.body)
	}
	// A huge path is clipped in the 404 too.
	if r := h.post("/"+huge, `{}`); r.status != 404 || len(detail(t, r)) > 500 || !strings.Contains(detail(t, r), "(1048577 bytes)") {
		t.Errorf("a 1 MiB path = %d, detail of %d bytes, want 404 with the path clipped", r.status, len(r.body))
	}
	waitFor(t, func() bool { return h.logs.FilterMessage("call").Len() == 20 }) // 19 calls and the 404
	for _, e := range h.logs.All() {
		if n := len(fmt.Sprint(e.ContextMap())); n > 2000 {
			t.Errorf("log line %q is %d bytes, want caller text clipped", e.Message, n)
		}
	}
}

// TestStuckCallerEndsByTotal: a caller that stops reading a stream does
// not hold the call past timeouts.total: the write blocked on it ends, the
// call is logged and its concurrency slot frees for the next caller.
func TestStuckCallerEndsByTotal(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if r.URL.Path == "/q" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		line := `{"x":"` + strings.Repeat("x", 64<<10) + `"}` + "\n"
		for { // as fast as the sidecar takes it
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			default:
			}
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, "timeouts: {total: 500ms}\nlimits: {concurrency: 1, queue_timeout: 10s}\n"+oneMethodConfig)

	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() // unblocks the sidecar if the test fails
	conn.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"class_method":"stream_query"}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", core.RouteStream, conn.RemoteAddr(), len(body), body)
	// The caller reads nothing more.
	start := time.Now()
	waitFor(t, func() bool { return h.server.InFlight() == 1 })
	deadline := time.Now().Add(5 * time.Second)
	for h.server.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the call to a caller that stopped reading was still in flight %v after it began (total 500ms)", time.Since(start))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the call ended %v after it began, want about total + 1s", d)
	}
	t.Logf("the call ended %v after it began", time.Since(start))
	// The slot is free: the next call is served, not queued behind it.
	if r := h.unary("query", `{}`); r.status != 200 {
		t.Errorf("the next call = %d %s, want 200", r.status, r.body)
	}
}

// TestStuckCallerEndsWithTheCall: with no total to bound it
// (timeouts.total 0), a write blocked on a caller that stopped reading
// ends a second after the call is ended (EndCalls, at the end of the
// drain): the bound on the call's writes is told when the call ends (its
// hook on core.End). Were it never told, the write would block for as
// long as the caller keeps its connection open.
func TestStuckCallerEndsWithTheCall(t *testing.T) {
	hangsAfter(t, time.Minute)
	stop := make(chan struct{})
	defer close(stop)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		line := `{"x":"` + strings.Repeat("x", 64<<10) + `"}` + "\n"
		for { // as fast as the sidecar takes it
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			default:
			}
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, "timeouts: {total: 0}\n"+oneMethodConfig)

	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() // unblocks the sidecar if the test fails
	conn.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"class_method":"stream_query"}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", core.RouteStream, conn.RemoteAddr(), len(body), body)
	// The caller reads nothing more: the sidecar's write to it blocks.
	deadline := time.Now().Add(10 * time.Second)
	for goroutinesIn("proxy.(*Server).serveStream", "waitWrite") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sidecar's write to a caller that reads nothing did not block within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.server.EndCalls()
	ended := time.Now()
	deadline = ended.Add(10 * time.Second)
	for h.server.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the call was still in flight 10s after it was ended, its write blocked on a caller that reads nothing: the bound on its writes was not told (total 0 sets none)")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("the call ended %v after EndCalls", time.Since(ended))
}

// sendHead opens a connection to the sidecar and sends a request's head
// only, announcing a body of n bytes.
func sendHead(t *testing.T, h *harness, route string, n int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", route, conn.RemoteAddr(), n)
	return conn
}

// readReply reads one reply from conn within 3 seconds.
func readReply(t *testing.T, conn net.Conn) reply {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// TestBodiesReadWithASlot: a request body is read only once its call has
// a concurrency slot, so the bodies in memory are bounded by the slots: a
// caller turned away busy gets its 503 before sending a byte of its body,
// an over-long Content-Length is a 413 unread, and a burst of large bodies
// against full slots allocates next to nothing.
func TestBodiesReadWithASlot(t *testing.T) {
	release := make(chan struct{})
	calls, agent := heldAgent(t, release, `{"ok":true}`)
	h := newHarness(t, agent.URL, "limits: {concurrency: 2, queue: 2, queue_timeout: 10s, request_bytes: 1MiB}\n"+oneMethodConfig)
	big := `{"class_method":"query","input":{"x":"` + strings.Repeat("a", 900<<10) + `"}}`

	results := make(chan reply, 2)
	for range 2 { // take both slots
		go func() { results <- h.post(core.RouteUnary, big) }()
	}
	waitFor(t, func() bool { return calls.Load() == 2 })
	queued := []net.Conn{sendHead(t, h, core.RouteUnary, len(big)), sendHead(t, h, core.RouteUnary, len(big))}
	waitFor(t, func() bool { return h.waiting() == 2 })

	// Busy: answered with no body sent.
	for range 3 {
		conn := sendHead(t, h, core.RouteUnary, len(big))
		if r := readReply(t, conn); r.status != http.StatusServiceUnavailable || !strings.Contains(detail(t, r), "concurrency limit") {
			t.Errorf("a caller with slots and queue full = %d %s, want 503 before its body", r.status, r.body)
		}
	}
	// Too long: answered with no body sent, whatever the slots.
	if r := readReply(t, sendHead(t, h, core.RouteStream, 2<<20)); r.status != http.StatusRequestEntityTooLarge || !strings.Contains(detail(t, r), "1048576 bytes") {
		t.Errorf("Content-Length 2 MiB over a 1 MiB limit = %d %s, want 413 before the body", r.status, r.body)
	}

	// A burst of whole large bodies against full slots: none is read.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 20 {
		wg.Go(func() {
			resp, err := http.Post(h.url+core.RouteUnary, "application/json", strings.NewReader(big))
			if err != nil {
				return // the sidecar closed the connection after its 503, mid-body
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	if ok.Load() != 0 {
		t.Errorf("%d calls served with every slot and the queue taken", ok.Load())
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("20 turned-away calls with 900 KiB bodies allocated %d MiB, want under 8 (their bodies unread)", alloc>>20)
	} else {
		t.Logf("20 turned-away calls with 900 KiB bodies allocated %d KiB", alloc>>10)
	}

	// The slots free: the queued callers are served once they send their bodies.
	close(release)
	for range 2 {
		if r := <-results; r.status != 200 {
			t.Errorf("a call holding a slot = %d %s", r.status, r.body)
		}
	}
	// One queued caller left before sending its body; the other sends it.
	queued[0].Close()
	io.WriteString(queued[1], big)
	if r := readReply(t, queued[1]); r.status != 200 {
		t.Errorf("a queued call, its body sent once it had a slot = %d %s", r.status, r.body)
	}
	waitFor(t, func() bool { return h.server.InFlight() == 0 })
	if n := calls.Load(); n != 3 {
		t.Errorf("the agent got %d calls, want 3: the two in slots and the queued one that sent its body", n)
	}
}

// TestDefaultConcurrency: with no limits.concurrency, calls are capped at
// 2 × GOMAXPROCS + 1, so the bodies held in memory are bounded by default.
func TestDefaultConcurrency(t *testing.T) {
	release := make(chan struct{})
	calls, agent := heldAgent(t, release, `{}`)
	defer close(release)
	h := newHarness(t, agent.URL, "limits: {queue: 0}\n"+oneMethodConfig)
	want := 2*runtime.GOMAXPROCS(0) + 1
	if got := Concurrency(h.server.Config); got != want {
		t.Errorf("Concurrency = %d, want 2 × GOMAXPROCS + 1 = %d", got, want)
	}
	results := make(chan reply, want)
	for range want {
		go func() { results <- h.unary("query", `{}`) }()
	}
	waitFor(t, func() bool { return int(calls.Load()) == want })
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Post(h.url+core.RouteUnary, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("call %d with no limits.concurrency got no answer (%v), want 503 at once: the default cap is %d", want+1, err, want)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("call %d with no limits.concurrency = %d, want 503: the default cap is %d", want+1, resp.StatusCode, want)
	}
	release <- struct{}{} // one slot frees
	if r := <-results; r.status != 200 {
		t.Errorf("a call in a slot = %d %s", r.status, r.body)
	}
}

// TestSlowCallerIsNotAgentIdle: timeouts.idle counts only the agent's
// silence. A caller that pauses reading longer than idle, while the agent
// has records ready all along, gets the whole stream, not a timeout line
// blaming the agent. idle is 2s, not less: a loaded machine can leave the
// agent's writer unscheduled for a few hundred milliseconds, which would
// be real agent silence.
func TestSlowCallerIsNotAgentIdle(t *testing.T) {
	const records = 256
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		pad := strings.Repeat("x", 64<<10)
		for i := range records {
			if _, err := fmt.Fprintf(w, "{\"i\":%d,\"pad\":%q}\n", i, pad); err != nil {
				return
			}
		}
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, strings.Replace(oneMethodConfig, "mode: stream, call: POST /s", "mode: stream, call: POST /s, timeouts: {idle: 2s}", 1))

	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	body := `{"class_method":"stream_query"}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", core.RouteStream, conn.RemoteAddr(), len(body), body)
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lr := bufio.NewReader(resp.Body)
	if _, err := lr.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// The caller pauses: 16 MiB is more than the sockets between hold, so
	// the sidecar's writes block, with the agent's next records ready.
	time.Sleep(3 * time.Second)
	n, last := 1, ""
	for {
		line, err := lr.ReadString('\n')
		if err != nil {
			break
		}
		n, last = n+1, line
	}
	if strings.Contains(last, `"error"`) || n != records {
		t.Errorf("got %d lines, the last %.120q; want all %d records and no error line", n, last, records)
	}
}

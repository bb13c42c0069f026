package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestConcurrencyLimit: calls beyond limits.concurrency wait in a bounded
// queue; a full queue or a queue timeout is a 503 with Retry-After, and a
// queued caller who leaves never reaches the agent.
func TestConcurrencyLimit(t *testing.T) {
	release := make(chan struct{})
	calls, agent := heldAgent(t, release, `{"ok":true}`)
	h := newHarness(t, agent.URL, "limits: {concurrency: 2, queue: 1, queue_timeout: 400ms}\n"+oneMethodConfig)

	results := make(chan reply, 2)
	for range 2 { // take both slots
		go func() { results <- h.unary("query", `{}`) }()
	}
	waitFor(t, func() bool { return calls.Load() == 2 })

	// The queue holds one: a caller who waits there and leaves is never
	// sent to the agent.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := make(chan struct{})
	go func() {
		defer close(left)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+core.RouteUnary, strings.NewReader(`{}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, func() bool { return h.waiting() == 1 })
	// Queue full: the next caller is turned away at once, not after the
	// queue timeout (whose detail would say so instead).
	if r := h.unary("query", `{}`); r.status != 503 || r.header.Get("Retry-After") == "" || !strings.Contains(detail(t, r), "2 calls in flight and 1 waiting") {
		t.Errorf("call with the queue full = %d %s, want 503 busy at once", r.status, r.body)
	}
	cancel()
	<-left
	waitFor(t, func() bool { return h.waiting() == 0 })

	// A queued call that waits out queue_timeout gets 503.
	if r := h.unary("query", `{}`); r.status != 503 || !strings.Contains(detail(t, r), "no slot freed within 400ms") {
		t.Errorf("queued call = %d %s, want 503 after the queue timeout", r.status, r.body)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("agent got %d calls, want only the 2 that had slots", n)
	}
	close(release)
	for range 2 {
		if r := <-results; r.status != 200 {
			t.Errorf("call holding a slot = %d %s", r.status, r.body)
		}
	}
	if r := h.unary("query", `{}`); r.status != 200 {
		t.Errorf("call after the slots freed = %d %s", r.status, r.body)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestIdempotentRetries: a 429 or 503 with Retry-After is retried only for
// a method marked idempotent, only when the wait fits the deadline, and at
// most three times; the agent's own answer is what the caller sees.
func TestIdempotentRetries(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		status     int
		retryAfter string
		failures   int32
		wantStatus int
		wantCalls  int32
	}{
		{"idempotent 503 then ok", "safe", 503, "0", 2, 200, 3},
		{"idempotent 429 then ok", "safe", 429, "0", 1, 200, 2},
		{"not idempotent", "query", 503, "0", 2, 503, 1},
		{"no Retry-After", "safe", 503, "", 2, 503, 1},
		{"Retry-After beyond the deadline", "safe", 503, "3600", 2, 503, 1},
		{"500 is never retried", "safe", 500, "0", 2, 500, 1},
		{"at most three retries", "safe", 503, "0", 10, 503, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if calls.Add(1) <= tt.failures {
					if tt.retryAfter != "" {
						w.Header().Set("Retry-After", tt.retryAfter)
					}
					w.WriteHeader(tt.status)
					io.WriteString(w, `{"detail":"try later"}`)
					return
				}
				io.WriteString(w, `{"ok":true}`)
			}))
			defer agent.Close()
			h := newHarness(t, agent.URL, "upstream: {url: AGENT}\nmethods:\n  query: {}\n  safe: {idempotent: true}\n")
			r := h.unary(tt.method, `{}`)
			if r.status != tt.wantStatus {
				t.Errorf("status = %d (%s), want %d", r.status, r.body, tt.wantStatus)
			}
			if tt.wantStatus != 200 && detail(t, r) != "try later" {
				t.Errorf("detail = %q, want the agent's", detail(t, r))
			}
			if n := calls.Load(); n != tt.wantCalls {
				t.Errorf("agent called %d times, want %d", n, tt.wantCalls)
			}
		})
	}
}

// TestHeaderPolicy: only the allow-list reaches the agent, plus what the
// config forwards and sets; a secret from the environment is sent but
// never logged.
func TestHeaderPolicy(t *testing.T) {
	t.Setenv("SIDECAR_TEST_SECRET", "s3cret-value")
	seen := make(chan http.Header, 1)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, `
upstream: {url: AGENT}
headers:
  forward: [Authorization]
  set: {X-Api-Key: "${SIDECAR_TEST_SECRET}"}
methods: {query: {}}
`)
	req, _ := http.NewRequest(http.MethodPost, h.url+core.RouteUnary, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer caller")
	req.Header.Set("Cookie", "session=abc")
	req.Header.Set("X-Forwarded-For", "1.2.3.4")
	req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := <-seen
	want := map[string]string{"Authorization": "Bearer caller", "X-Api-Key": "s3cret-value",
		"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "Cookie": "", "X-Forwarded-For": ""}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("agent saw %s = %q, want %q", k, got.Get(k), v)
		}
	}
	// The call's log line follows its reply; wait for it, so the check
	// below covers it.
	waitFor(t, func() bool { return h.logs.FilterMessage("call").Len() == 1 })
	for _, e := range h.logs.All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()), "s3cret") || strings.Contains(e.Message, "s3cret") {
			t.Errorf("the secret reached a log line: %v", e.ContextMap())
		}
	}
}

// TestServerLimits: a client that sends its headers slowly is dropped
// after limits.header_timeout while others are served, and oversized
// headers get 431.
func TestServerLimits(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer agent.Close()
	cfg := "limits: {header_timeout: 300ms, header_bytes: 2KiB}\n" + oneMethodConfig
	h := newHarness(t, agent.URL, cfg, withServerLimits())

	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /api/reasoning_engine HTTP/1.1\r\nHost: "+conn.RemoteAddr().String()+"\r\n") // and never the rest
	start := time.Now()
	if r := h.unary("query", `{}`); r.status != 200 {
		t.Errorf("a normal call beside the slow client = %d", r.status)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = bufio.NewReader(conn).ReadString('\n')
	if err == nil {
		// net/http may answer 408 before closing; either way it lets go.
		_, err = io.ReadAll(conn)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the slow-header client was held %v, want about 300ms", d)
	}

	req, _ := http.NewRequest(http.MethodPost, h.url+core.RouteUnary, strings.NewReader(`{}`))
	req.Header.Set("X-Big", strings.Repeat("a", 8<<10))
	// A new connection: net/http checks the limit on a connection's first
	// request (later ones on a kept-alive connection get more slack).
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := fresh.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("8 KiB of headers = %d, want 431", resp.StatusCode)
	}
}

// TestUnaryReplyTooLarge: a unary reply over limits.reply_bytes is a 502,
// not a reply read into memory without bound.
func TestUnaryReplyTooLarge(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `"`+strings.Repeat("x", 8<<10)+`"`)
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, "limits: {reply_bytes: 4KiB}\n"+oneMethodConfig)
	if r := h.unary("query", `{}`); r.status != 502 || !strings.Contains(detail(t, r), "reply size limit") {
		t.Errorf("8 KiB reply with a 4 KiB limit = %d %s, want 502", r.status, r.body)
	}
}

// TestCancellationPhases: the caller leaving reaches the agent within
// 100 ms while it waits for the first byte and while it streams; a caller
// who leaves while the sidecar is still connecting (the agent not
// listening yet) never reaches it.
func TestCancellationPhases(t *testing.T) {
	for _, phase := range []string{"first_byte", "streaming"} {
		t.Run(phase, func(t *testing.T) {
			started := make(chan struct{})
			cancelled := make(chan time.Time, 1)
			stop := make(chan struct{})
			agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body)
				if phase == "streaming" {
					w.Header().Set("Content-Type", "application/x-ndjson")
					io.WriteString(w, "{\"i\":0}\n")
					http.NewResponseController(w).Flush()
				}
				close(started)
				select {
				case <-r.Context().Done():
					cancelled <- time.Now()
				case <-stop:
				}
			}))
			defer agent.Close()
			// First: a handler the cancel never reached ends, so a failing
			// test fails at once instead of hanging in agent.Close.
			defer close(stop)
			h := newHarness(t, agent.URL, oneMethodConfig)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+core.RouteStream, strings.NewReader(`{}`))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			select {
			case <-started:
			case <-time.After(5 * time.Second):
				t.Fatal("the call never reached the agent")
			}
			left := time.Now()
			cancel()
			select {
			case at := <-cancelled:
				d := at.Sub(left)
				if d > 100*time.Millisecond {
					t.Errorf("the agent saw the cancel %v after the caller left, want < 100ms", d)
				}
				t.Logf("agent saw the cancel %v after the caller left", d)
			case <-time.After(5 * time.Second):
				t.Fatal("the agent's request was not cancelled")
			}
			<-done
		})
	}
	t.Run("connecting", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		h := newHarness(t, "http://"+addr, oneMethodConfig) // connect: 5s of retries
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+core.RouteUnary, strings.NewReader(`{}`))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		time.Sleep(150 * time.Millisecond) // the sidecar is retrying refused connections
		cancel()
		<-done
		time.Sleep(50 * time.Millisecond)
		var calls atomic.Int32
		late, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("port taken meanwhile: %v", err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })}
		go srv.Serve(late)
		time.Sleep(700 * time.Millisecond) // longer than the retry backoff cap
		srv.Close()
		if n := calls.Load(); n != 0 {
			t.Errorf("a caller who left while connecting reached the agent %d times", n)
		}
	})
}

// TestKeepAliveRace: an agent that closes idle connections after 1 s (as
// gunicorn and Node do after a few seconds) never causes a spurious 502
// under steady load (DESIGN.md lesson 10).
func TestKeepAliveRace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a few seconds")
	}
	agent := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	agent.Config.IdleTimeout = time.Second
	agent.Start()
	defer agent.Close()
	h := newHarness(t, agent.URL, oneMethodConfig)
	var wg sync.WaitGroup
	var ok, bad atomic.Int32
	stop := time.Now().Add(4 * time.Second)
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for time.Now().Before(stop) {
				resp, err := http.Post(h.url+core.RouteUnary, "application/json", strings.NewReader(`{}`))
				if err != nil {
					bad.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				} else {
					bad.Add(1)
				}
				// Gaps around the agent's 1 s keep-alive, where the race lives.
				time.Sleep(time.Duration(900+rng.IntN(200)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d of %d calls failed against an agent with a 1s keep-alive", bad.Load(), ok.Load()+bad.Load())
	}
	t.Logf("%d calls, all ok", ok.Load())
}

// TestAgentClosesBeforeAnswering: an agent that drops the connection
// before any status line is a 502 agent_disconnected, and the agent's
// internal address is not in the detail.
func TestAgentClosesBeforeAnswering(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		conn, _, _ := http.NewResponseController(w).Hijack()
		conn.Close()
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, oneMethodConfig)
	for _, route := range []string{core.RouteUnary, core.RouteStream} {
		r := h.post(route, `{}`)
		d := detail(t, r)
		if r.status != 502 || !strings.Contains(d, "agent closed the connection") || strings.Contains(d, "127.0.0.1") {
			t.Errorf("%s = %d %q, want 502 agent closed the connection, no address", route, r.status, d)
		}
	}
}

// panicky is a built-in handler with a bug: it panics.
type panicky struct{}

func (panicky) Unary(context.Context, core.Call) (json.RawMessage, error) {
	panic("bug in a built-in handler")
}

func (panicky) Stream(context.Context, core.Call) (core.Records, error) {
	panic("bug in a built-in handler")
}

// TestBuiltinPanic: a panic while a stream is being opened (which runs on
// a goroutine of its own) ends that one call, as net/http ends a handler
// that panics, and the sidecar goes on serving.
func TestBuiltinPanic(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, `
upstream: {url: AGENT}
adk: {app: my_agent}
methods:
  query: {call: POST /q}
  broken: {mode: stream, handler: adk.stream_query}
`, withBuiltin(panicky{}))
	resp, err := http.Post(h.url+core.RouteStream, "application/json", strings.NewReader(`{"class_method":"broken","input":{}}`))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("a panicking stream answered %d %s, want the connection dropped", resp.StatusCode, b)
	}
	// The handler's deferred bookkeeping runs while the panic unwinds,
	// before net/http closes the connection, so the count is already down.
	if n := h.server.InFlight(); n != 0 {
		t.Errorf("%d calls in flight after the panic, want 0: a drain would wait for it", n)
	}
	if r := h.unary("query", `{}`); r.status != 200 {
		t.Errorf("after the panic: %d %s, want 200", r.status, r.body)
	}
	// A unary reply is flushed before its handler returns (the log line
	// and the count come after), so this one is awaited, not assumed.
	waitFor(t, func() bool { return h.server.InFlight() == 0 })
}

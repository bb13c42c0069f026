package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestSendHeadersAllowList: of the caller's headers, only the built-in
// allow-list (trace context, request ids) and headers.forward reach the
// agent; credentials, cookies and anything else do not. headers.set is
// added to every request, replacing a caller's value.
func TestSendHeadersAllowList(t *testing.T) {
	got := make(chan http.Header, 1)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, "{}")
	}))
	defer agent.Close()
	cfg := testConfig(t, agent.URL, "headers: {forward: [X-Tenant], set: {X-Api-Key: from-config}}\n")
	c, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inbound := http.Header{}
	for name, v := range map[string]string{
		"Traceparent":           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"Tracestate":            "k=v",
		"X-Cloud-Trace-Context": "105445aa7843bc8bf206b12000100000/1;o=1",
		"X-Request-Id":          "r1",
		"X-Tenant":              "acme",
		"Authorization":         "Bearer secret",
		"Cookie":                "session=s",
		"X-Other":               "o",
		"X-Api-Key":             "from-caller",
	} {
		inbound.Set(name, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Send(ctx, Request{Method: "query", Verb: http.MethodPost, Path: "/q", Body: []byte(`{}`), Header: inbound})
	if err != nil {
		t.Fatal(err)
	}
	resp.Close()
	h := <-got
	for _, name := range []string{"Traceparent", "Tracestate", "X-Cloud-Trace-Context", "X-Request-Id", "X-Tenant"} {
		if h.Get(name) != inbound.Get(name) {
			t.Errorf("%s reached the agent as %q, want %q", name, h.Get(name), inbound.Get(name))
		}
	}
	for _, name := range []string{"Authorization", "Cookie", "X-Other"} {
		if v := h.Values(name); len(v) > 0 {
			t.Errorf("%s reached the agent: %q", name, v)
		}
	}
	if v := h.Values("X-Api-Key"); len(v) != 1 || v[0] != "from-config" {
		t.Errorf("X-Api-Key = %q, want only headers.set's value", v)
	}
	if v := h.Get("X-Sidecar-Class-Method"); v != "query" {
		t.Errorf("X-Sidecar-Class-Method = %q, want query", v)
	}
}

// TestSendRetriesRefusedDial: a refused connection (an agent still
// booting) is retried until the agent listens, within timeouts.connect;
// an agent that never listens is a *core.DialError once it runs out. A
// request the agent read before it closed is never retried.
func TestSendRetriesRefusedDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	t.Run("agent listens late", func(t *testing.T) {
		cfg := testConfig(t, "http://"+addr, "timeouts: {connect: 3s}\n")
		c, err := New(cfg, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"late":true}`)
		})}
		listening := make(chan struct{})
		time.AfterFunc(300*time.Millisecond, func() {
			defer close(listening)
			if ln, err := net.Listen("tcp", addr); err == nil {
				go srv.Serve(ln)
			}
		})
		defer func() { <-listening; srv.Close() }()
		resp, err := c.Send(context.Background(), Request{Verb: http.MethodPost, Path: "/q", Body: []byte(`{}`), Timeouts: cfg.Timeouts})
		if err != nil {
			t.Fatalf("Send to an agent that listens after 300ms: %v", err)
		}
		defer resp.Close()
		if resp.Retries == 0 {
			t.Error("the call went through without a retry: the agent was not refusing")
		}
	})
	t.Run("agent never listens", func(t *testing.T) {
		cfg := testConfig(t, "http://"+addr, "timeouts: {connect: 200ms}\n")
		c, err := New(cfg, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		_, err = c.Send(context.Background(), Request{Verb: http.MethodPost, Path: "/q", Body: []byte(`{}`), Timeouts: cfg.Timeouts})
		var de *core.DialError
		if !errors.As(err, &de) {
			t.Fatalf("Send to a port nobody listens on: %v, want a *core.DialError", err)
		}
		if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
			t.Errorf("gave up after %v, want about timeouts.connect (200ms)", d)
		}
	})
	t.Run("read then closed", func(t *testing.T) {
		// A retry ends the call at once (the agent ends its context), so
		// a client that retries what reached the agent fails here by
		// name, not after a million retries; the deadline bounds the rest.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var calls atomic.Int32
		agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) > 1 {
				cancel()
			}
			io.ReadAll(r.Body)
			nc, _, _ := http.NewResponseController(w).Hijack()
			nc.Close()
		}))
		defer agent.Close()
		cfg := testConfig(t, agent.URL, "")
		c, err := New(cfg, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Send(ctx, Request{Verb: http.MethodPost, Path: "/q", Body: []byte(`{}`), Timeouts: cfg.Timeouts}); err == nil {
			t.Fatal("Send to an agent that closes without answering succeeded")
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("the agent was called %d times, want 1", n)
		}
	})
}

// TestMethodHeaders: a method's own headers.set reach the agent on its
// calls, after the top-level ones (an A2A 1.0 producer's A2A-Version).
func TestMethodHeaders(t *testing.T) {
	got := make(chan http.Header, 2)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, "{}")
	}))
	defer agent.Close()
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: "+agent.URL+"}\nheaders: {set: {X-Api-Key: top, X-Both: top}}\n"+
		"methods:\n  a2a: {headers: {set: {A2A-Version: \"1.0\", X-Both: method}}}\n  plain: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, want := range []map[string]string{
		{"A2a-Version": "1.0", "X-Both": "method", "X-Api-Key": "top"},
		{"A2a-Version": "", "X-Both": "top", "X-Api-Key": "top"},
	} {
		m := cfg.Methods[i]
		if _, err := c.Unary(ctx, core.Call{Method: m, Name: m.Name, Input: core.Input{Raw: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		h := <-got
		for name, v := range want {
			if h.Get(name) != v {
				t.Errorf("%s: %s = %q, want %q", m.Name, name, h.Get(name), v)
			}
		}
	}
}

// TestSendConnectionNamed: a header the caller's Connection header names,
// in any case, is for its hop only: it does not reach the agent even when
// headers.forward lists it; the other listed headers do.
func TestSendConnectionNamed(t *testing.T) {
	got := make(chan http.Header, 1)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, "{}")
	}))
	defer agent.Close()
	cfg := testConfig(t, agent.URL, "headers: {forward: [X-Tenant, X-Region, X-Keep]}\n")
	c, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inbound := http.Header{
		"Connection": {"keep-alive, x-tenant", "UPGRADE,X-REGION"},
		"X-Tenant":   {"acme"},
		"X-Region":   {"eu"},
		"X-Keep":     {"k"},
		"Upgrade":    {"websocket"},
		"Te":         {"trailers"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Send(ctx, Request{Method: "query", Verb: http.MethodPost, Path: "/q", Body: []byte(`{}`), Header: inbound})
	if err != nil {
		t.Fatal(err)
	}
	resp.Close()
	h := <-got
	for _, name := range []string{"X-Tenant", "X-Region", "Upgrade", "Te"} {
		if v := h.Values(name); len(v) > 0 {
			t.Errorf("%s reached the agent as %q, want it dropped", name, v)
		}
	}
	if h.Get("X-Keep") != "k" {
		t.Errorf("X-Keep = %q, want k", h.Get("X-Keep"))
	}
}

// TestRetryLogDebugOnly: go-retryablehttp's own lines (the request, a
// failed attempt) are logged at debug level when the logger takes debug,
// and not built at all when it does not.
func TestRetryLogDebugOnly(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "{}")
	}))
	defer agent.Close()
	for _, level := range []zapcore.Level{zapcore.DebugLevel, zapcore.InfoLevel} {
		core, logs := observer.New(level)
		c, err := New(testConfig(t, agent.URL, ""), zap.New(core))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Send(t.Context(), Request{Method: "query", Verb: http.MethodPost, Path: "/q", Body: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		resp.Close()
		c.Close()
		n := logs.FilterMessage("performing request").Len()
		if want := map[bool]int{true: 1, false: 0}[level == zapcore.DebugLevel]; n != want {
			t.Errorf("at %s: %d %q lines, want %d", level, n, "performing request", want)
		}
	}
}

// TestRetrySendsWholeBody: a retried attempt (an idempotent method's 429)
// sends the request body again from its start.
func TestRetrySendsWholeBody(t *testing.T) {
	const body = `{"message":"the same body every time"}`
	var bodies []string
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b)) // one attempt at a time
		if len(bodies) < 3 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "{}")
	}))
	defer agent.Close()
	c, err := New(testConfig(t, agent.URL, ""), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Send(t.Context(), Request{Verb: http.MethodPost, Path: "/q", Body: []byte(body), Idempotent: true})
	if err != nil {
		t.Fatal(err)
	}
	resp.Close()
	if len(bodies) != 3 {
		t.Fatalf("agent called %d times, want 3 (two 429s retried)", len(bodies))
	}
	for i, b := range bodies {
		if b != body {
			t.Errorf("attempt %d sent body %q, want %q", i+1, b, body)
		}
	}
}

// TestSendRefusesControlInQuery: a query with a control character never
// goes out (it would break the request line).
func TestSendRefusesControlInQuery(t *testing.T) {
	var calls atomic.Int32
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer agent.Close()
	c, err := New(testConfig(t, agent.URL, ""), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{"a=\r\nX-Injected: 1", "a=\x00", "a=\x7f"} {
		if _, err := c.Send(t.Context(), Request{Verb: http.MethodGet, Path: "/q", RawQuery: q}); err == nil || !strings.Contains(err.Error(), "building agent request") {
			t.Errorf("Send with query %q: err = %v, want a refusal", q, err)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("agent called %d times, want 0", n)
	}
}

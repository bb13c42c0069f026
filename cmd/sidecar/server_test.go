package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// serveInProcess runs serve on 127.0.0.1 with lim and returns its address;
// the server is stopped when the test ends.
func serveInProcess(t *testing.T, yaml string, lim serverLimits) string {
	t.Helper()
	cfg, err := config.Parse("sidecar.yaml", []byte(yaml), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, ln, zaptest.NewLogger(t), agentIO{env: os.Environ()}, lim) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(cfg.Shutdown.Budget() + 5*time.Second):
			t.Errorf("serve still running %v after its context ended", cfg.Shutdown.Budget()+5*time.Second)
		}
	})
	return ln.Addr().String()
}

// TestQueueTimeoutOutlivesServerDeadlines: a call queued for a slot gets
// its 503 after limits.queue_timeout even when that is longer than the
// time a caller has to send its request: the server's read and write
// deadlines include the queue's wait (at full scale: a queue_timeout of
// 60s or more against a fixed 60s write timeout).
func TestQueueTimeoutOutlivesServerDeadlines(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer agent.Close()
	defer close(release)

	const queueTimeout = 2 * time.Second
	lim := serverLimits{requestTime: 500 * time.Millisecond, answerTime: 200 * time.Millisecond, idleTime: time.Minute, maxIdle: 10}
	addr := serveInProcess(t, "upstream: {url: \""+agent.URL+"\", ready: {wait: 100ms}}\n"+
		"limits: {concurrency: 1, queue: 1, queue_timeout: "+queueTimeout.String()+"}\n"+
		"methods: {slow: {call: POST /slow}}\n", lim)
	url := "http://" + addr + "/api/reasoning_engine"
	body := `{"class_method":"slow","input":{}}`

	first := make(chan error, 1)
	go func() {
		resp, err := testClient.Post(url, "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
		first <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first call never reached the agent")
	}

	began := time.Now()
	resp, err := testClient.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("the queued call after %v: %v, want a 503 after the %v queue timeout", time.Since(began), err, queueTimeout)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the queued call = %d %s (Retry-After %q), want 503 with Retry-After", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	if took := time.Since(began); took < queueTimeout-100*time.Millisecond {
		t.Errorf("the queued call was answered after %v, before its %v queue timeout", took, queueTimeout)
	}
	release <- struct{}{}
	if err := <-first; err != nil {
		t.Errorf("the first call: %v", err)
	}
}

// TestIdleConnectionsBounded: beyond maxIdle idle caller connections, the
// longest idle is closed; the others stay open.
func TestIdleConnectionsBounded(t *testing.T) {
	agent := httptest.NewServer(http.NotFoundHandler())
	defer agent.Close()
	lim := defaultServerLimits
	lim.maxIdle = 2
	addr := serveInProcess(t, "upstream: {url: \""+agent.URL+"\"}\nmethods: {q: {}}\n", lim)

	conns := make([]net.Conn, 3)
	for i := range conns {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		// One request each; then the connection is idle.
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+c.RemoteAddr().String()+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(20 * time.Millisecond) // idle in turn, the first longest
	}
	closed := func(c net.Conn, wait time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(wait))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
	if !closed(conns[0], 2*time.Second) {
		t.Error("the longest idle of 3 connections (max 2) is still open")
	}
	for i, c := range conns[1:] {
		if closed(c, 200*time.Millisecond) {
			t.Errorf("connection %d closed; only the longest idle should be", i+1)
		}
	}
}

// Package doortest is what the front doors' tests share: a test agent
// behind a real listener, a proxy.Server in front of it whose doors are
// served on listeners of their own, a strict SSE reader, and the sidecar
// binary run as a process in front of an agent streaming a large answer,
// with its peak memory. Only tests import it.
package doortest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/upstream"
)

// Methods is the test agent's method map, for config.Parse: "query" echoes
// (unary), "stream_query" streams three records, "cut" streams one and
// drops the connection, "hold" waits for Agent.Release before it answers
// {"held":true}, "hold_stream" streams {"n":1} at once and {"held":true}
// when released.
const Methods = `
methods:
  query: {}
  stream_query: {mode: stream}
  cut: {mode: stream}
  hold: {}
  hold_stream: {mode: stream}
`

// Agent is the test agent: it answers the Methods and keeps the last
// request's header.
type Agent struct {
	URL string
	// Release, closed, lets the held calls answer.
	Release chan struct{}
	// Held counts the calls waiting for Release.
	Held atomic.Int32

	mu     sync.Mutex
	header http.Header
	body   []byte
}

// Header is the last request's header; Body its body.
func (a *Agent) Header() http.Header { a.mu.Lock(); defer a.mu.Unlock(); return a.header }

// Body is the last request's body.
func (a *Agent) Body() string { a.mu.Lock(); defer a.mu.Unlock(); return string(a.body) }

// NewAgent starts the test agent. Its held calls also answer when the test
// ends (t.Context is done before any cleanup runs): a test that fails
// holding calls cannot hang in a server's Close waiting for them.
func NewAgent(t testing.TB) *Agent {
	a := &Agent{Release: make(chan struct{})}
	ended := t.Context()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.header, a.body = r.Header.Clone(), body
		a.mu.Unlock()
		ndjson := func(lines ...string) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			for _, l := range lines {
				fmt.Fprintln(w, l)
				w.(http.Flusher).Flush()
			}
		}
		switch r.URL.Path {
		case "/query":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"got":%s}`, body)
		case "/stream_query":
			ndjson(`{"i":1}`, `{"i":2,"s":"a\nb"}`, `{"i":3}`)
		case "/cut":
			ndjson(`{"i":1}`)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		case "/hold", "/hold_stream":
			if r.URL.Path == "/hold_stream" {
				ndjson(`{"n":1}`)
			}
			a.Held.Add(1)
			defer a.Held.Add(-1)
			select {
			case <-a.Release:
			case <-ended.Done():
			case <-r.Context().Done():
				return
			}
			if r.URL.Path == "/hold" {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"held":true}`)
				return
			}
			ndjson(`{"held":true}`)
		default:
			http.NotFound(w, r)
		}
	}))
	a.URL = srv.URL
	t.Cleanup(srv.Close)
	return a
}

// Sidecar is a proxy.Server in front of an Agent.
type Sidecar struct {
	*proxy.Server
	Config *config.Config
	Logs   *observer.ObservedLogs
}

// NewSidecar parses head (the protocols section, limits, …) with the
// agent's upstream and Methods, and with kinds (the doors the protocols
// section may name, proxy/doors.Kinds), and builds the Server; Serve
// serves its doors.
func NewSidecar(t testing.TB, a *Agent, head string, kinds ...config.Kind) *Sidecar {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \""+a.URL+"\"}\n"+head+Methods), kinds...)
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	logger := zap.New(observed)
	client, err := upstream.New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	s := &proxy.Server{Config: cfg, Agent: core.Mux{Plain: client}, Logger: logger}
	return &Sidecar{Server: s, Config: cfg, Logs: logs}
}

// Audience is the audience Protect's doors want in a token.
const Audience = "https://agent.example.com"

// Protect makes door (its protocol's name) the only door served, and one
// that checks the tokens issuer signs for Audience.
func (s *Sidecar) Protect(issuer, door string) {
	s.Config.Auth = config.Auth{Issuer: issuer, Audience: Audience, Doors: []string{door}, Line: 1}
	s.Auth = auth.New(s.Config.Auth, nil)
	s.Protocols = []string{door}
}

// Serve serves door on a listener of its own; it returns its URL.
func (s *Sidecar) Serve(t testing.TB, door proxy.Door) string {
	srv := httptest.NewServer(s.HandlerFor(door))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Prompt bounds the wait for what a door must flush while the agent holds
// the rest: it comes at once or never (the agent waits for the test), so
// the bound is the behaviour, not the machine's speed.
const Prompt = 2 * time.Second

// Promptly returns read's result, failing the test when read has not
// returned within Prompt: then it says so and calls stop, which must end
// the read (cancel the call), so a door that holds back what it should
// have flushed fails in Prompt, not at a deadline, nor never.
func Promptly[T any](t testing.TB, stop func(), read func() T) T {
	t.Helper()
	fired := make(chan struct{})
	late := time.AfterFunc(Prompt, func() {
		defer close(fired)
		t.Errorf("nothing within %v while the agent holds the rest: not flushed", Prompt)
		stop()
	})
	defer func() {
		if !late.Stop() {
			<-fired
		}
	}()
	return read()
}

// Prober is a proxy.Prober whose answer the test sets.
type Prober struct{ Ok atomic.Bool }

func (p *Prober) Status() (bool, string) { return p.Ok.Load(), "test agent down" }
func (p *Prober) PublicDetail() string   { return "" }
func (p *Prober) Wait(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// SSE reads a text/event-stream strictly: every event is "data: ", one
// compact JSON value, and a blank line; nothing else is allowed (no other
// field, no comment, no [DONE], no bare line).
type SSE struct {
	t testing.TB
	r *bufio.Reader
}

// NewSSE reads body.
func NewSSE(t testing.TB, body io.Reader) *SSE { return &SSE{t: t, r: bufio.NewReader(body)} }

// Next is the next event's JSON, or "" at the end of the stream.
func (s *SSE) Next() string {
	s.t.Helper()
	line, err := s.r.ReadString('\n')
	if err == io.EOF && line == "" {
		return ""
	}
	if err != nil {
		s.t.Fatalf("SSE: reading an event: %v (read %q)", err, line)
	}
	data, ok := strings.CutPrefix(line, "data: ")
	data, nl := strings.CutSuffix(data, "\n")
	if !ok || !nl || !json.Valid([]byte(data)) || strings.ContainsAny(data, "\r\n") {
		s.t.Fatalf("SSE: line %q is not data: <one JSON value>", line)
	}
	if blank, err := s.r.ReadString('\n'); blank != "\n" {
		s.t.Fatalf("SSE: after %q, %q (%v), want the blank line that ends the event", line, blank, err)
	}
	return data
}

// All reads the events to the end of the stream.
func (s *SSE) All() []string {
	s.t.Helper()
	var events []string
	for e := s.Next(); e != ""; e = s.Next() {
		events = append(events, e)
	}
	return events
}

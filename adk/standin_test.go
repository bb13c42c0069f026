package adk

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/upstream"
)

// standIn is an ADK api server on a real HTTP listener with the routes
// the handlers use. It creates sessions as Python's server does (a
// chosen id read from the body, spaces trimmed; POST …/sessions/{id}
// takes the state itself as its body) or, with tsCreate, as TypeScript's
// (an id in the body ignored; POST …/sessions/{id} takes {state}; events
// dropped).
type standIn struct {
	apps      string // the GET /list-apps reply
	tsCreate  bool
	runStatus int // when set, POST /run_sse answers it with an error

	mu       sync.Mutex
	sessions map[string]map[string]any // "user/id" → session
	requests []string                  // "VERB path" of each request
	release  chan struct{}             // closed: a run ends after its first event
	stop     chan struct{}             // closed: runs end, for the server's Close
	runGone  chan struct{}             // a run's request ended before it finished
}

func newStandIn(t *testing.T, apps string, tsCreate bool) (*standIn, string) {
	s := &standIn{apps: apps, tsCreate: tsCreate, sessions: map[string]map[string]any{},
		release: make(chan struct{}), stop: make(chan struct{}), runGone: make(chan struct{}, 8)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /list-apps", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(s.apps))
	})
	mux.HandleFunc("POST /apps/{app}/users/{user}/sessions", s.create)
	mux.HandleFunc("POST /apps/{app}/users/{user}/sessions/{id}", s.create)
	mux.HandleFunc("GET /apps/{app}/users/{user}/sessions/{id}", s.get)
	mux.HandleFunc("DELETE /apps/{app}/users/{user}/sessions/{id}", s.delete)
	mux.HandleFunc("POST /run_sse", s.run)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.EscapedPath())
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(s.stop)
		srv.Close()
	})
	return s, srv.URL
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *standIn) create(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		reply(w, 422, map[string]string{"detail": err.Error()})
		return
	}
	id, state, events := r.PathValue("id"), body["state"], body["events"]
	switch {
	case id != "" && !s.tsCreate: // Python: the body is the state
		state, _ = json.Marshal(body)
	case id == "" && !s.tsCreate:
		json.Unmarshal(body["sessionId"], &id)
		id = strings.TrimSpace(id)
	}
	if s.tsCreate {
		events = nil
	}
	if id == "" {
		id = rand.Text()
	}
	var st map[string]any
	json.Unmarshal(state, &st)
	var evs []any
	json.Unmarshal(events, &evs)
	sess := map[string]any{"id": id, "appName": r.PathValue("app"), "userId": r.PathValue("user"), "state": st, "events": evs}
	key := r.PathValue("user") + "/" + id
	s.mu.Lock()
	_, dup := s.sessions[key]
	if !dup {
		s.sessions[key] = sess
	}
	s.mu.Unlock()
	if dup {
		reply(w, 409, map[string]string{"detail": "Session already exists: " + id})
		return
	}
	reply(w, 200, sess)
}

func (s *standIn) session(user, id string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[user+"/"+id]
}

func (s *standIn) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

func (s *standIn) get(w http.ResponseWriter, r *http.Request) {
	if sess := s.session(r.PathValue("user"), r.PathValue("id")); sess != nil {
		reply(w, 200, sess)
		return
	}
	reply(w, 404, map[string]string{"detail": "Session not found"})
}

func (s *standIn) delete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	delete(s.sessions, r.PathValue("user")+"/"+r.PathValue("id"))
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// run sends one event, then a second when the run is released; a caller
// that leaves first ends it, as the servers' runs end.
func (s *standIn) run(w http.ResponseWriter, r *http.Request) {
	var req runRequest
	json.NewDecoder(r.Body).Decode(&req)
	if s.session(req.UserID, req.SessionID) == nil {
		reply(w, 404, map[string]string{"detail": "Session not found"})
		return
	}
	if s.runStatus != 0 {
		reply(w, s.runStatus, map[string]string{"detail": "the run failed"})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"ev-1\",\"author\":\"agent\"}\n\n")
	w.(http.Flusher).Flush()
	select {
	case <-s.release:
		fmt.Fprintf(w, "data: {\"id\":\"ev-2\",\"author\":\"agent\"}\n\n")
	case <-r.Context().Done():
		s.runGone <- struct{}{}
	case <-s.stop:
	}
}

// newApp is an App for the stand-in at url, and the preset's methods.
func newApp(t *testing.T, url string) (*App, map[string]*config.Method) {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: "+url+"}\npreset: adk\nadk: {app: weather}\n"))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	client, err := upstream.New(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("upstream.New: %v", err)
	}
	t.Cleanup(client.Close)
	methods := map[string]*config.Method{}
	for _, m := range cfg.Methods {
		methods[m.Name] = m
	}
	return &App{Client: client, Name: "weather", Limits: cfg.Limits}, methods
}

func input(t *testing.T, raw string) core.Input {
	t.Helper()
	in, err := core.ParseInput(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("ParseInput(%s): %v", raw, err)
	}
	return in
}

// runInput is streaming_agent_run_with_events' input for request_json.
func runInput(t *testing.T, request string) core.Input {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"request_json": request})
	return input(t, string(in))
}

// testContext is a context that ends with the test's deadline or after d.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestTemporarySessionDeleted: streaming_agent_run_with_events deletes the
// session it made for the run when the stream is closed, whether the run
// ended, the caller left mid-run, or the run was refused; a named session
// is kept.
func TestTemporarySessionDeleted(t *testing.T) {
	const method = "streaming_agent_run_with_events"
	temporary := `{"message":"hi","user_id":"u"}`
	t.Run("run ends", func(t *testing.T) {
		srv, url := newStandIn(t, `["weather"]`, false)
		close(srv.release)
		a, methods := newApp(t, url)
		st, closeRun, err := a.Stream(testContext(t, 10*time.Second), methods[method], method, runInput(t, temporary), nil)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		var sid string
		n := 0
		for st.Next() {
			var rec struct {
				SessionID string `json:"session_id"`
			}
			json.Unmarshal(st.Record(), &rec)
			sid = rec.SessionID
			n++
		}
		if st.Err() != nil || n != 2 || sid == "" {
			t.Fatalf("stream: %d records, session %q, err %v; want 2 records naming the session", n, sid, st.Err())
		}
		if srv.session("u", sid) == nil {
			t.Fatalf("the session %s is gone before the stream is closed", sid)
		}
		closeRun()
		if srv.session("u", sid) != nil || srv.count() != 0 {
			t.Errorf("session %s outlived its closed run; requests %q", sid, srv.requests)
		}
	})
	t.Run("caller leaves", func(t *testing.T) {
		srv, url := newStandIn(t, `["weather"]`, false)
		a, methods := newApp(t, url)
		ctx, leave := context.WithCancel(testContext(t, 10*time.Second))
		st, closeRun, err := a.Stream(ctx, methods[method], method, runInput(t, temporary), nil)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if !st.Next() {
			t.Fatalf("no first record: %v", st.Err())
		}
		leave()
		closeRun() // as the proxy does when its caller is gone
		select {
		case <-srv.runGone:
		case <-time.After(5 * time.Second):
			t.Fatal("the run's request was not cancelled")
		}
		if srv.count() != 0 {
			t.Errorf("the temporary session outlived the caller who left; requests %q", srv.requests)
		}
	})
	t.Run("run refused", func(t *testing.T) {
		srv, url := newStandIn(t, `["weather"]`, false)
		srv.runStatus = http.StatusInternalServerError
		a, methods := newApp(t, url)
		_, _, err := a.Stream(testContext(t, 10*time.Second), methods[method], method, runInput(t, temporary), nil)
		var se *core.StatusError
		if !errors.As(err, &se) || se.Status != 500 {
			t.Fatalf("Stream = %v, want the run's 500", err)
		}
		if srv.count() != 0 {
			t.Errorf("the temporary session outlived its refused run; requests %q", srv.requests)
		}
	})
	t.Run("named session kept", func(t *testing.T) {
		srv, url := newStandIn(t, `["weather"]`, false)
		close(srv.release)
		a, methods := newApp(t, url)
		ctx := testContext(t, 10*time.Second)
		if _, err := a.Unary(ctx, methods["create_session"], "create_session", input(t, `{"user_id":"u","session_id":"kept"}`), nil); err != nil {
			t.Fatalf("create_session: %v", err)
		}
		st, closeRun, err := a.Stream(ctx, methods[method], method, runInput(t, `{"message":"hi","user_id":"u","session_id":"kept"}`), nil)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		for st.Next() {
		}
		closeRun()
		if srv.session("u", "kept") == nil {
			t.Errorf("the named session was deleted; requests %q", srv.requests)
		}
	})
}

// TestChosenIDForm: how a chosen session id reaches the server is learned
// from a probe session of the sidecar's own, never from a caller's id: a
// caller whose " x" Python's server trims to "x" changes nothing, and the
// next chosen-id session keeps its state flat on either server, whether
// Ready learned the form or the first create did.
func TestChosenIDForm(t *testing.T) {
	for _, ts := range []bool{false, true} {
		for _, ready := range []bool{true, false} {
			t.Run(fmt.Sprintf("typescript=%v ready=%v", ts, ready), func(t *testing.T) {
				srv, url := newStandIn(t, `["weather"]`, ts)
				a, methods := newApp(t, url)
				ctx := testContext(t, 10*time.Second)
				if ready {
					if err := a.Ready(ctx); err != nil {
						t.Fatalf("Ready: %v", err)
					}
				}
				create := func(in string) map[string]any {
					t.Helper()
					out, err := a.Unary(ctx, methods["create_session"], "create_session", input(t, in), nil)
					var s map[string]any
					if err != nil || json.Unmarshal(out, &s) != nil {
						t.Fatalf("create_session(%s) = %s, %v", in, out, err)
					}
					return s
				}
				create(`{"user_id":"u1","session_id":" x","state":{"a":1}}`)
				s := create(`{"user_id":"u2","session_id":"y","state":{"city":"Paris"}}`)
				want := `{"city":"Paris"}`
				got, _ := json.Marshal(s["state"])
				stored, _ := json.Marshal(srv.session("u2", "y")["state"])
				if s["id"] != "y" || string(got) != want || string(stored) != want {
					t.Errorf("session y: id %v, state %s, stored %s; want id y, state %s", s["id"], got, stored, want)
				}
				if n := srv.count(); n != 2 {
					t.Errorf("%d sessions on the server, want the 2 created (the probe's deleted); requests %q", n, srv.requests)
				}
			})
		}
	}
}

// TestReady: the sidecar is ready only when the server lists the app, and
// the error names the app and what the server has.
func TestReady(t *testing.T) {
	many := make([]string, 15)
	for i := range many {
		many[i] = fmt.Sprintf("app%d", i)
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		apps    string
		want    []string // in the error; none: ready
		notWant string
	}{
		{`["weather"]`, nil, ""},
		{`["a","weather","b"]`, nil, ""},
		{`["a","b"]`, []string{`ADK app "weather" not found`, `"a", "b"`}, ""},
		{`[]`, []string{`ADK app "weather" not found: the api server has no apps`}, ""},
		{string(manyJSON), []string{`"app0"`, `"app9"`, "and 5 more"}, `"app10"`},
		{`["` + strings.Repeat("n", 5000) + `"]`, []string{`not found`, "…"}, strings.Repeat("n", 101)},
		{`{"apps":["weather"]}`, []string{"not a list of app names"}, ""},
	}
	for _, tt := range tests {
		srv, url := newStandIn(t, tt.apps, false)
		a, _ := newApp(t, url)
		err := a.Ready(testContext(t, 10*time.Second))
		if tt.want == nil {
			if err != nil {
				t.Errorf("Ready with apps %s = %v, want ready", tt.apps, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Ready with apps %.80s = nil, want not ready", tt.apps)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Ready with apps %.80s = %q, want it to contain %q", tt.apps, err, w)
			}
		}
		if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
			t.Errorf("Ready with apps %.80s = %.200q, want no %.20q", tt.apps, err, tt.notWant)
		}
		if srv.count() != 0 || len(srv.requests) != 1 {
			t.Errorf("Ready for a missing app made requests %q, want GET /list-apps only", srv.requests)
		}
	}
}

// TestSeedEventsWording: a server that drops events when it creates a
// session cannot seed one; the 400 names the input the caller used.
func TestSeedEventsWording(t *testing.T) {
	srv, url := newStandIn(t, `["weather"]`, true)
	a, methods := newApp(t, url)
	ctx := testContext(t, 10*time.Second)
	events := `[{"id":"e1","author":"user"}]`
	tests := []struct {
		method  string
		in      core.Input
		want    string
		notWant string
	}{
		{"streaming_agent_run_with_events", runInput(t, `{"message":"hi","events":`+events+`}`), "request_json.events cannot seed", "session_events"},
		{"async_stream_query", input(t, `{"user_id":"u","message":"hi","session_events":`+events+`}`), "session_events cannot seed", ""},
	}
	for _, tt := range tests {
		_, _, err := a.Stream(ctx, methods[tt.method], tt.method, tt.in, nil)
		var se *core.StatusError
		if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Detail, tt.want) || (tt.notWant != "" && strings.Contains(se.Detail, tt.notWant)) {
			t.Errorf("%s with events = %v, want 400 saying %q", tt.method, err, tt.want)
		}
	}
	if srv.count() != 0 {
		t.Errorf("unseeded sessions were left behind; requests %q", srv.requests)
	}
}

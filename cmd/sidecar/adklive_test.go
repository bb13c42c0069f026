package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// liveADK is a stand-in for an ADK api server that serves /run_live, on a
// real listener. No ADK api server that installs offline serves one (the
// TypeScript one has none), so this is a stand-in, not the Python ADK:
// its sessions are the TypeScript api server's (a create reads only the
// state, an id goes in the path), its /run_live the Python api server's
// as its source has it: the query's app_name, user_id and session_id
// (FastAPI refuses the upgrade without them), the session looked up once
// accepted (missing: close 1002 "Session not found"), each text frame a
// LiveRequest (content, blob, close, activity_start, activity_end), each
// frame back an Event (here one per content, its text echoed).
type liveADK struct {
	mu       sync.Mutex
	sessions map[string]bool // "user/id"
	creates  []string        // the user of each session create, not the readiness probe's
	queries  []url.Values    // each /run_live upgrade's query
	frames   []string        // the LiveRequests /run_live read, in order
}

func startLiveADK(t *testing.T) (*liveADK, string) {
	s := &liveADK{sessions: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /list-apps", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`["weather"]`))
	})
	create := func(w http.ResponseWriter, r *http.Request) {
		id, user := r.PathValue("id"), r.PathValue("user")
		if id == "" {
			id = rand.Text()
		}
		s.mu.Lock()
		s.sessions[user+"/"+id] = true
		if user != "sidecar-readiness-probe" {
			s.creates = append(s.creates, user)
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "appName": r.PathValue("app"), "userId": user, "state": map[string]any{}, "events": []any{}})
	}
	mux.HandleFunc("POST /apps/{app}/users/{user}/sessions", create)
	mux.HandleFunc("POST /apps/{app}/users/{user}/sessions/{id}", create)
	mux.HandleFunc("DELETE /apps/{app}/users/{user}/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		delete(s.sessions, r.PathValue("user")+"/"+r.PathValue("id"))
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /run_live", s.runLive)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// add makes a session as if created before the conversation.
func (s *liveADK) add(user, id string) {
	s.mu.Lock()
	s.sessions[user+"/"+id] = true
	s.mu.Unlock()
}

// seen is what the stand-in saw: the session creates, the upgrades'
// queries and the frames read.
func (s *liveADK) seen() ([]string, []url.Values, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.creates), slices.Clone(s.queries), slices.Clone(s.frames)
}

func (s *liveADK) runLive(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for _, k := range []string{"app_name", "user_id", "session_id"} {
		if !q.Has(k) {
			http.Error(w, "missing query parameter "+k, http.StatusForbidden)
			return
		}
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	s.mu.Lock()
	s.queries = append(s.queries, q)
	found := q.Get("app_name") == "weather" && s.sessions[q.Get("user_id")+"/"+q.Get("session_id")]
	s.mu.Unlock()
	if !found {
		c.Close(websocket.StatusProtocolError, "Session not found")
		return
	}
	ctx := r.Context()
	for n := 1; ; n++ {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.frames = append(s.frames, string(data))
		s.mu.Unlock()
		var req struct {
			Content *struct {
				Parts []struct{ Text string }
			}
			Close bool
		}
		if typ != websocket.MessageText || json.Unmarshal(data, &req) != nil {
			c.Close(websocket.StatusInternalError, "1 validation error for LiveRequest")
			return
		}
		if req.Close {
			c.Close(websocket.StatusNormalClosure, "")
			return
		}
		if req.Content == nil || len(req.Content.Parts) == 0 {
			continue
		}
		event, _ := json.Marshal(map[string]any{"id": "e" + string(rune('0'+n)), "invocationId": "i1", "author": "weather",
			"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": "echo: " + req.Content.Parts[0].Text}}}})
		if c.Write(ctx, websocket.MessageText, event) != nil {
			return
		}
	}
}

// adkLiveSidecar is a sidecar with the ADK preset in front of url and the
// live door mounted at /live; it returns the door's ws:// URL.
func adkLiveSidecar(t *testing.T, url, framing string, adk ...string) string {
	t.Helper()
	base := startSidecar(t, "upstream: {url: "+url+", ready: {path: /list-apps}}\npreset: adk\nadk: {app: weather"+strings.Join(adk, "")+"}\n"+
		"protocols:\n  live: {mount: /live, method: bidi_stream_query"+framing+"}\n")
	return "ws" + strings.TrimPrefix(base, "http") + "/live"
}

// talk opens a conversation at url with the platform's setup frame for
// bidi_stream_query and input.
func talk(t *testing.T, url, input string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dialing %s: %v", url, err)
	}
	t.Cleanup(func() { c.CloseNow() })
	say(t, c, `{"setup":{"name":"projects/p/locations/us-central1/reasoningEngines/1","class_method":"bidi_stream_query","input":`+input+`}}`)
	return c
}

func say(t *testing.T, c *websocket.Conn, text string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(text)); err != nil {
		t.Fatalf("writing %s: %v", text, err)
	}
}

// heard is c's next frame, or how it closed.
func heard(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return "close " + strings.TrimPrefix(ce.Code.String(), "StatusCode(") + " " + ce.Reason
	case err != nil:
		t.Fatalf("reading: %v", err)
	case typ != websocket.MessageText:
		t.Fatalf("a binary frame %x, want text", b)
	}
	return string(b)
}

const (
	sayHi    = `{"content":{"role":"user","parts":[{"text":"hi"}]}}`
	sayAgain = `{"content":{"role":"user","parts":[{"text":"again"}]}}`
)

// TestADKLive: the ADK preset's bidi_stream_query through the live door,
// the platform's framing byte for byte, against the stand-in /run_live.
// A setup with user_id only creates the user's session first and opens
// /run_live on it; its live_request is the server's first frame (the
// setup's input itself never reaches it), each later bidi_stream_input
// crosses as it is, and each Event comes back in bidiStreamOutput. A
// setup naming a session opens it without creating one; a session the
// server lacks is its close, 1002, passed on; a setup without user_id is
// refused, 1008, before the server is asked anything.
func TestADKLive(t *testing.T) {
	adk, agentURL := startLiveADK(t)
	url := adkLiveSidecar(t, agentURL, "")

	t.Run("user_id only", func(t *testing.T) {
		c := talk(t, url, `{"user_id":"u1","live_request":`+sayHi+`}`)
		if got, want := heard(t, c), `{"bidiStreamOutput":{"author":"weather","content":{"parts":[{"text":"echo: hi"}],"role":"model"},"id":"e1","invocationId":"i1"}}`; got != want {
			t.Errorf("first frame = %s, want %s", got, want)
		}
		say(t, c, `{"bidi_stream_input":`+sayAgain+`}`)
		if got := heard(t, c); !strings.Contains(got, `"echo: again"`) || !strings.HasPrefix(got, `{"bidiStreamOutput":{`) {
			t.Errorf("second frame = %s, want the Event for again in bidiStreamOutput", got)
		}
		say(t, c, `{"bidi_stream_input":{"close":true}}`)
		if got := heard(t, c); got != "close StatusNormalClosure " {
			t.Errorf("after close: %q, want the server's 1000", got)
		}
		creates, queries, frames := adk.seen()
		if !slices.Equal(creates, []string{"u1"}) || len(queries) != 1 {
			t.Fatalf("session creates %q, upgrades %v: want one create for u1, then one upgrade", creates, queries)
		}
		if q := queries[0]; q.Get("app_name") != "weather" || q.Get("user_id") != "u1" || q.Get("session_id") == "" {
			t.Errorf("/run_live query = %v, want app_name weather, user_id u1 and the new session", q)
		}
		if want := []string{sayHi, sayAgain, `{"close":true}`}; !slices.Equal(frames, want) {
			t.Errorf("/run_live read %q, want %q", frames, want)
		}
	})

	t.Run("a session named", func(t *testing.T) {
		adk.add("u2", "s-given")
		c := talk(t, url, `{"user_id":"u2","session_id":"s-given","run_config":{"response_modalities":["TEXT"]}}`)
		say(t, c, `{"bidi_stream_input":`+sayHi+`}`)
		if got := heard(t, c); !strings.Contains(got, `"echo: hi"`) {
			t.Errorf("frame = %s, want the Event for hi", got)
		}
		c.Close(websocket.StatusNormalClosure, "")
		creates, queries, frames := adk.seen()
		q := queries[len(queries)-1]
		if len(creates) != 1 || q.Get("user_id") != "u2" || q.Get("session_id") != "s-given" || !slices.Equal(q["modalities"], []string{"TEXT"}) {
			t.Errorf("creates %q, /run_live query %v: want no new session, u2's s-given, modalities TEXT", creates, q)
		}
		if last := frames[len(frames)-1]; last != sayHi {
			t.Errorf("/run_live's last frame = %s, want the input alone (no live_request, no setup input)", last)
		}
	})

	t.Run("a session the server lacks", func(t *testing.T) {
		c := talk(t, url, `{"user_id":"u3","session_id":"nope"}`)
		if got := heard(t, c); got != "close StatusProtocolError Session not found" {
			t.Errorf("conversation = %q, want the server's 1002 Session not found", got)
		}
	})

	t.Run("no user_id", func(t *testing.T) {
		_, before, _ := adk.seen()
		c := talk(t, url, `{"live_request":`+sayHi+`}`)
		if got := heard(t, c); got != "close StatusPolicyViolation input.user_id: is required" {
			t.Errorf("conversation = %q, want 1008 naming user_id", got)
		}
		if _, after, _ := adk.seen(); len(after) != len(before) {
			t.Errorf("/run_live was dialled for a setup without user_id")
		}
	})
}

// TestADKLiveSnake: under adk.keys: snake the Events' keys are AdkApp's
// snake_case, as a stream's are.
func TestADKLiveSnake(t *testing.T) {
	_, agentURL := startLiveADK(t)
	c := talk(t, adkLiveSidecar(t, agentURL, "", ", keys: snake"), `{"user_id":"u1","live_request":`+sayHi+`}`)
	if got := heard(t, c); !strings.Contains(got, `"invocation_id":"i1"`) || strings.Contains(got, "invocationId") {
		t.Errorf("frame = %s, want its keys snake_case", got)
	}
}

// TestADKLiveRaw: the live door's raw framing has no setup frame to carry
// bidi_stream_query's first input: its upgrade is refused, 400, saying
// which framing to use.
func TestADKLiveRaw(t *testing.T) {
	_, agentURL := startLiveADK(t)
	url := adkLiveSidecar(t, agentURL, ", framing: raw")
	_, resp, err := websocket.Dial(context.Background(), url, nil)
	if err == nil || resp == nil {
		t.Fatalf("upgrade = %v, %v; want 400", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if want := "bidi_stream_query opens with a setup frame naming its first input: open it on the live door with the platform's framing"; resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), want) {
		t.Errorf("upgrade = %s %s, want 400 saying %q", resp.Status, body, want)
	}
}

// TestADKLiveTypeScript: the real TypeScript ADK api server serves no
// /run_live, so a bidi_stream_query conversation in front of it is
// closed, 1011, with a reason that says so, not left hanging.
func TestADKLiveTypeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the TypeScript ADK api server")
	}
	deps.NPM(t, "adk")
	url := adkLiveSidecar(t, startADKTypeScript(t), "")
	c := talk(t, url, `{"user_id":"u1","live_request":`+sayHi+`}`)
	if got := heard(t, c); !strings.HasPrefix(got, "close StatusInternalError the ADK api server serves no /run_live WebSocket (its upgrade answered 404") {
		t.Errorf("conversation = %q, want 1011 saying the server serves no /run_live", got)
	}
}

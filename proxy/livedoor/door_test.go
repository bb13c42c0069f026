package livedoor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// liveAgent is an agent serving WebSockets under /live: it keeps every
// frame it gets and the URL of every upgrade, and echoes each frame,
// except the text "binary", answered with the binary frame 00 01 ff,
// and the text "plain", answered with the text "hello, world" (no JSON).
type liveAgent struct {
	URL    string
	mu     sync.Mutex
	urls   []string
	frames []string
	// offered is the subprotocols each upgrade offered.
	offered []string
}

func (a *liveAgent) got() ([]string, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.urls...), append([]string(nil), a.frames...)
}

func newLiveAgent(t testing.TB) *liveAgent {
	a := &liveAgent{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/live") {
			http.NotFound(w, r)
			return
		}
		a.mu.Lock()
		a.urls = append(a.urls, r.URL.RequestURI())
		a.offered = append(a.offered, r.Header.Get("Sec-WebSocket-Protocol"))
		a.mu.Unlock()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := context.Background()
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			a.mu.Lock()
			a.frames = append(a.frames, string(b))
			a.mu.Unlock()
			switch string(b) {
			case `"binary"`:
				typ, b = websocket.MessageBinary, []byte{0, 1, 0xff}
			case `"plain"`:
				b = []byte("hello, world")
			}
			if c.Write(ctx, typ, b) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// liveMethods are the test's method map: talk and other converse at
// /live, fields fills its path from user_id and session_id, query is a
// unary method.
const liveMethods = `methods:
  query: {}
  talk: {mode: bidi, call: GET /live}
  other: {mode: bidi, call: GET /live/other}
  fields: {mode: bidi, call: "GET /live/{user_id}?session_id={session_id}"}
`

// liveSidecar is a Server in front of agent serving the live door whose
// section is section (e.g. {listen: …, method: talk}); head goes before
// the methods. It returns the door's ws:// URL.
func liveSidecar(t testing.TB, agentURL, head, section string, setup ...func(*proxy.Server)) (string, *proxy.Server, *observer.ObservedLogs) {
	t.Helper()
	yaml := "upstream: {url: \"" + agentURL + "\"}\n" + head + liveMethods + "protocols:\n  live: " + section + "\n"
	cfg, err := config.Parse("test.yaml", []byte(yaml), Protocol.Kind)
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	s := &proxy.Server{Config: cfg, Logger: zap.New(observed), Protocols: []string{Name}}
	for _, f := range setup {
		f(s)
	}
	door := cfg.Protocols.Door(Name)
	d, err := New(cfg, Protocol.Options(door, core.Host{}))
	if err != nil {
		t.Fatal(err)
	}
	h := s.HandlerFor(d)
	path := "/"
	if door.Mount != "" {
		h = proxy.Mounted(http.NotFoundHandler(), []proxy.Mount{{Path: door.Mount, Claims: cfg.Claims(door), Handler: h}})
		path = door.Mount
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + path, s, logs
}

// dial opens a caller's conversation at url.
func dial(t *testing.T, url string, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	c, resp, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: header})
	if c != nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

// send writes a text frame.
func send(t *testing.T, c *websocket.Conn, text string) {
	t.Helper()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(text)); err != nil {
		t.Fatalf("writing %s: %v", text, err)
	}
}

// next is the next frame's text; it fails the test on anything else.
func next(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	typ, b, err := c.Read(context.Background())
	if err != nil || typ != websocket.MessageText {
		t.Fatalf("reading a frame = %v %q, %v; want a text frame", typ, b, err)
	}
	return string(b)
}

// closed is how c was closed: the read after its last frame.
func closed(t *testing.T, c *websocket.Conn) websocket.CloseError {
	t.Helper()
	_, b, err := c.Read(context.Background())
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("read = %q, %v; want a close", b, err)
	}
	return ce
}

// callLine waits for the conversation's one call log line.
func callLine(t *testing.T, logs *observer.ObservedLogs) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l := logs.FilterMessage("call").All(); len(l) > 0 {
			if len(l) > 1 {
				t.Errorf("%d call log lines, want one", len(l))
			}
			return l[0].ContextMap()
		}
	}
	t.Fatal("no call log line")
	return nil
}

// TestPlatformFraming: the platform's bidi framing as its Python SDK sends
// it, byte for byte, mounted and on the door's own listener: the setup's
// input is the agent's first frame, each bidi_stream_input's contents
// (ProtoJSON's bidiStreamInput too) the next, verbatim; the agent's frames
// come back as bidiStreamOutput, JSON as it is, other text as a string,
// binary as inline_data; the caller's close reaches the agent; neither
// the caller nor the agent is offered a subprotocol; one log line names
// the method the setup named.
func TestPlatformFraming(t *testing.T) {
	for _, section := range []string{`{mount: /live, method: talk}`, `{listen: "127.0.0.1:0", method: talk, framing: platform}`} {
		t.Run(section, func(t *testing.T) {
			agent := newLiveAgent(t)
			url, _, logs := liveSidecar(t, agent.URL, "", section)
			c, resp, err := dial(t, url, http.Header{"Sec-WebSocket-Protocol": {"chat"}})
			if err != nil {
				t.Fatal(err)
			}
			if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "" {
				t.Errorf("the upgrade chose subprotocol %q, want none", p)
			}
			send(t, c, `{"setup":{"name":"projects/P/locations/L/reasoningEngines/ID","class_method":"other","input":{"query":"hello"}}}`)
			for _, tt := range []struct{ in, out string }{
				{"", `{"bidiStreamOutput":{"query":"hello"}}`},
				{`{"bidi_stream_input": {"a": [1, 2.50]}}`, `{"bidiStreamOutput":{"a": [1, 2.50]}}`},
				{`{"bidiStreamInput":"plain"}`, `{"bidiStreamOutput":"hello, world"}`},
				{`{"bidi_stream_input":"binary"}`, `{"bidiStreamOutput":{"inline_data":{"mime_type":"application/octet-stream","data":"AAH/"}}}`},
			} {
				if tt.in != "" {
					send(t, c, tt.in)
				}
				if got := next(t, c); got != tt.out {
					t.Errorf("after %s the caller got %s, want %s", tt.in, got, tt.out)
				}
			}
			c.Close(websocket.StatusNormalClosure, "bye")
			urls, frames := agent.got()
			if want := []string{`{"query":"hello"}`, `{"a": [1, 2.50]}`, `"plain"`, `"binary"`}; strings.Join(frames, "\n") != strings.Join(want, "\n") {
				t.Errorf("the agent got %q, want %q", frames, want)
			}
			if len(urls) != 1 || urls[0] != "/live/other" {
				t.Errorf("the agent's upgrades = %q, want one at /live/other (the setup's class_method)", urls)
			}
			agent.mu.Lock()
			offered := agent.offered
			agent.mu.Unlock()
			if len(offered) != 1 || offered[0] != "" {
				t.Errorf("the agent's upgrade offered subprotocols %q, want none: the caller got none", offered)
			}
			f := callLine(t, logs)
			if f["class_method"] != "other" || f["protocol"] != Name || f["frames_in"] != int64(4) || f["frames_out"] != int64(4) || f["ended_by"] != "caller" || f["close_code"] != int64(1000) {
				t.Errorf("call log line = %v, want class_method other, 4 frames each way, ended by the caller with 1000", f)
			}
		})
	}
}

// TestPlatformSetup: a setup without class_method goes to the door's
// method and without input sends the agent nothing first; the setup's
// input fills the method's path {field}s, and one missing closes the
// caller 1008 naming it.
func TestPlatformSetup(t *testing.T) {
	agent := newLiveAgent(t)
	url, _, _ := liveSidecar(t, agent.URL, "", `{listen: "127.0.0.1:0", method: talk}`)
	c, _, err := dial(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"setup":{"input":null}}`)
	send(t, c, `{"bidi_stream_input":{"n":1}}`)
	if got := next(t, c); got != `{"bidiStreamOutput":{"n":1}}` {
		t.Errorf("the caller got %s, want the echo of its first input", got)
	}
	c.Close(websocket.StatusNormalClosure, "")
	urls, frames := agent.got()
	if len(urls) != 1 || urls[0] != "/live" || len(frames) != 1 {
		t.Errorf("the agent had upgrades %q and frames %q, want one at /live (the door's method) and one frame", urls, frames)
	}

	c, _, err = dial(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"setup":{"class_method":"fields","input":{"user_id":"u/1","session_id":"s 1","query":"hi"}}}`)
	if got := next(t, c); got != `{"bidiStreamOutput":{"user_id":"u/1","session_id":"s 1","query":"hi"}}` {
		t.Errorf("the caller got %s, want the echo of the setup's input", got)
	}
	c.Close(websocket.StatusNormalClosure, "")
	if urls, _ := agent.got(); len(urls) != 2 || urls[1] != "/live/u%2F1?session_id=s+1" {
		t.Errorf("the agent's upgrades = %q, want the second at /live/u%%2F1?session_id=s+1", urls)
	}

	c, _, err = dial(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"setup":{"class_method":"fields","input":{"user_id":"u1"}}}`)
	if ce := closed(t, c); ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "session_id") {
		t.Errorf("a setup without session_id closed the caller %d %q, want 1008 naming session_id", ce.Code, ce.Reason)
	}
	if urls, _ := agent.got(); len(urls) != 2 {
		t.Errorf("the agent had %d upgrades, want 2: none for the setup missing a field", len(urls))
	}
}

// TestPlatformRefusals: what the framing cannot carry ends the
// conversation with the close the caller is told why with: a binary or
// non-setup first frame, a class_method that is not a bidi method of the
// map, a binary frame, a frame that is not bidi_stream_input, a second
// setup; a setup that never comes is cut at limits.header_timeout.
func TestPlatformRefusals(t *testing.T) {
	const setup = `{"setup":{"class_method":"talk"}}`
	tests := []struct {
		name   string
		frames []string // "binary:" starts a binary frame
		code   websocket.StatusCode
		reason string
	}{
		{"binary first", []string{"binary:x"}, websocket.StatusUnsupportedData, "binary first frame"},
		{"no setup first", []string{`{"bidi_stream_input":{}}`}, websocket.StatusInvalidFramePayloadData, `want {"setup"`},
		{"not JSON first", []string{`hello`}, websocket.StatusInvalidFramePayloadData, "not a setup frame"},
		{"unknown class_method", []string{`{"setup":{"class_method":"nope"}}`}, websocket.StatusPolicyViolation, `class_method "nope" is not a bidi method`},
		{"unary class_method", []string{`{"setup":{"class_method":"query"}}`}, websocket.StatusPolicyViolation, `class_method "query" is not a bidi method`},
		{"binary", []string{setup, "binary:x"}, websocket.StatusUnsupportedData, "binary frame"},
		{"not input", []string{setup, `{"other":1}`}, websocket.StatusInvalidFramePayloadData, `want {"bidi_stream_input"`},
		{"extra key", []string{setup, `{"bidi_stream_input":1,"x":2}`}, websocket.StatusInvalidFramePayloadData, "not an input frame"},
		{"second setup", []string{setup, setup}, websocket.StatusInvalidFramePayloadData, "second setup"},
	}
	agent := newLiveAgent(t)
	url, _, logs := liveSidecar(t, agent.URL, "", `{listen: "127.0.0.1:0", method: talk}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := dial(t, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.frames {
				if b, ok := strings.CutPrefix(f, "binary:"); ok {
					c.Write(context.Background(), websocket.MessageBinary, []byte(b))
				} else {
					send(t, c, f)
				}
			}
			if ce := closed(t, c); ce.Code != tt.code || !strings.Contains(ce.Reason, tt.reason) {
				t.Errorf("closed %d %q, want %d saying %q", ce.Code, ce.Reason, tt.code, tt.reason)
			}
		})
	}
	n := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && n < len(tests); time.Sleep(10 * time.Millisecond) {
		n = len(logs.FilterMessage("call").All()) // a relayed conversation's is written as it ends
	}
	if n != len(tests) {
		t.Errorf("%d call log lines, want one for each of the %d conversations", n, len(tests))
	}

	t.Run("no setup", func(t *testing.T) {
		url, _, logs := liveSidecar(t, agent.URL, "limits: {header_timeout: 300ms}\n", `{listen: "127.0.0.1:0", method: talk}`)
		c, _, err := dial(t, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ce := closed(t, c); ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "limits.header_timeout") {
			t.Errorf("a caller that sends nothing was closed %d %q, want 1008 naming limits.header_timeout", ce.Code, ce.Reason)
		}
		if f := callLine(t, logs); f["outcome"] != "timeout" || f["ended_by"] != "sidecar" {
			t.Errorf("call log line = %v, want a timeout the sidecar ended", f)
		}
	})
}

// TestPlatformAgentUnreachable: the agent's WebSocket not opening closes
// the caller, upgraded already, with 1011 and the reason.
func TestPlatformAgentUnreachable(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	url, _, logs := liveSidecar(t, down.URL, "", `{listen: "127.0.0.1:0", method: talk}`)
	c, _, err := dial(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"setup":{"input":{"q":1}}}`)
	if ce := closed(t, c); ce.Code != websocket.StatusInternalError || !strings.Contains(ce.Reason, "unreachable") {
		t.Errorf("closed %d %q, want 1011 saying the agent is unreachable", ce.Code, ce.Reason)
	}
	if f := callLine(t, logs); f["class_method"] != "talk" || f["ended_by"] != "agent" || f["close_code"] != int64(1011) {
		t.Errorf("call log line = %v, want talk ended by the agent with 1011", f)
	}
}

// TestRaw: framing raw relays frames unchanged both ways, text and
// binary, to the door's method, mounted and on its own listener, the
// caller's subprotocol passed on; its path's {field}s come from the
// upgrade's query, one missing refused 400 before the upgrade.
func TestRaw(t *testing.T) {
	for _, where := range []string{`mount: /live`, `listen: "127.0.0.1:0"`} {
		t.Run(where, func(t *testing.T) {
			agent := newLiveAgent(t)
			url, _, logs := liveSidecar(t, agent.URL, "", `{`+where+`, method: talk, framing: raw}`)
			c, _, err := dial(t, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, f := range []struct {
				typ  websocket.MessageType
				data string
			}{{websocket.MessageText, `{"setup":{}}`}, {websocket.MessageBinary, "\x00\x01\xff"}, {websocket.MessageText, "plain text"}} {
				c.Write(ctx, f.typ, []byte(f.data))
				typ, b, err := c.Read(ctx)
				if err != nil || typ != f.typ || string(b) != f.data {
					t.Errorf("echo of %v %q = %v %q, %v", f.typ, f.data, typ, b, err)
				}
			}
			c.Close(websocket.StatusNormalClosure, "")
			if f := callLine(t, logs); f["class_method"] != "talk" || f["frames_in"] != int64(3) || f["frames_out"] != int64(3) {
				t.Errorf("call log line = %v, want talk, 3 frames each way", f)
			}
		})
	}
	t.Run("fields", func(t *testing.T) {
		agent := newLiveAgent(t)
		url, _, _ := liveSidecar(t, agent.URL, "", `{listen: "127.0.0.1:0", method: fields, framing: raw}`)
		c, _, err := dial(t, url+"?user_id=u1&session_id=s1&other=x", nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Close(websocket.StatusNormalClosure, "")
		if urls, _ := agent.got(); len(urls) != 1 || urls[0] != "/live/u1?session_id=s1" {
			t.Errorf("the agent's upgrades = %q, want one at /live/u1?session_id=s1", urls)
		}
		_, resp, err := dial(t, url+"?user_id=u1", nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("an upgrade without session_id = %v, %v; want 400", resp, err)
		}
	})
}

// TestDoorRoutes: the door serves GET at its root only; another path is
// its 404, another method its 405, a GET without an upgrade 426.
func TestDoorRoutes(t *testing.T) {
	url, _, _ := liveSidecar(t, newLiveAgent(t).URL, "", `{listen: "127.0.0.1:0", method: talk}`)
	base := "http" + strings.TrimPrefix(url, "ws")
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/other", http.StatusNotFound},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodGet, "/", http.StatusUpgradeRequired},
	} {
		req, _ := http.NewRequest(tt.method, strings.TrimSuffix(base, "/")+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s = %d %s, want %d JSON", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.status)
		}
	}
}

// TestGuard: a protected door wants a token (401 before the upgrade, the
// agent never reached), and an upgrade from another site's page is
// refused 403.
func TestGuard(t *testing.T) {
	p := idptest.Start(t)
	agent := newLiveAgent(t)
	url, _, _ := liveSidecar(t, agent.URL, "", `{listen: "127.0.0.1:0", method: talk}`, func(s *proxy.Server) {
		s.Config.Auth = config.Auth{Issuer: p.URL, Audience: doortest.Audience, Doors: []string{Name}, Line: 1}
		s.Auth = auth.New(s.Config.Auth, nil)
	})
	if _, resp, err := dial(t, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("upgrade without a token = %v, %v; want 401", resp, err)
	}
	tok := "Bearer " + p.Token(t, "alice", doortest.Audience, "")
	if _, resp, err := dial(t, url, http.Header{"Authorization": {tok}, "Origin": {"https://evil.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("upgrade from another site's page = %v, %v; want 403", resp, err)
	}
	c, _, err := dial(t, url, http.Header{"Authorization": {tok}})
	if err != nil {
		t.Fatalf("upgrade with a token: %v", err)
	}
	send(t, c, `{"setup":{"input":"hi"}}`)
	if got := next(t, c); got != `{"bidiStreamOutput":"hi"}` {
		t.Errorf("the caller got %s, want the echo", got)
	}
	c.Close(websocket.StatusNormalClosure, "")
	if urls, _ := agent.got(); len(urls) != 1 {
		t.Errorf("the agent had %d upgrades, want 1: the refused ones never reached it", len(urls))
	}
}

// TestSpan: the conversation's span names the method the setup named.
func TestSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	url, _, logs := liveSidecar(t, newLiveAgent(t).URL, "", `{listen: "127.0.0.1:0", method: talk}`, func(s *proxy.Server) { s.Tracer = tp.Tracer("test") })
	c, _, err := dial(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"setup":{"class_method":"other","input":1}}`)
	next(t, c)
	c.Close(websocket.StatusNormalClosure, "")
	callLine(t, logs) // written once the span ended
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	var name attribute.Value
	for _, a := range spans[0].Attributes() {
		if a.Key == "sidecar.class_method" {
			name = a.Value
		}
	}
	if name.AsString() != "other" {
		t.Errorf("the span's sidecar.class_method = %q, want other (the setup's)", name.AsString())
	}
}

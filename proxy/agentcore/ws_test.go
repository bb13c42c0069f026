package agentcore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
	"github.com/sidecar-dev/sidecar/quota"
)

// wsAgent is an agent serving WebSockets: GET /live echoes every frame;
// GET /never takes the connection and never answers the upgrade.
type wsAgent struct {
	URL      string
	mu       sync.Mutex
	header   http.Header
	uri      string // the last /live upgrade's
	upgrades int
	open     int // /live connections not yet ended
}

// opened is the number of /live connections not yet ended.
func (a *wsAgent) opened() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.open
}

func (a *wsAgent) last() (http.Header, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.header, a.upgrades
}

func newWSAgent(t testing.TB) *wsAgent {
	a := &wsAgent{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/live":
			a.mu.Lock()
			a.header, a.uri, a.upgrades = r.Header.Clone(), r.URL.RequestURI(), a.upgrades+1
			a.open++
			a.mu.Unlock()
			defer func() {
				a.mu.Lock()
				a.open--
				a.mu.Unlock()
			}()
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			for {
				typ, b, err := c.Read(context.Background())
				if err != nil {
					return
				}
				if c.Write(context.Background(), typ, b) != nil {
					return
				}
			}
		case "/never":
			<-r.Context().Done() // the sidecar gives up and closes
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// wsSidecar is a Server in front of agent serving an AgentCore door whose
// /ws converses with ws; head goes before the methods (limits, …).
func wsSidecar(t testing.TB, agent *wsAgent, head, ws string, setup ...func(*proxy.Server)) (url string, s *proxy.Server, logs *observer.ObservedLogs) {
	t.Helper()
	yaml := "upstream: {url: \"" + agent.URL + "\"}\n" + head + `methods:
  query: {}
  converse: {mode: bidi, call: GET /live}
  stall: {mode: bidi, call: GET /never, timeouts: {connect: 1s, first_byte: 300ms}}
  fields: {mode: bidi, call: "GET /live?user={user_id}"}
`
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	s = &proxy.Server{Config: cfg, Logger: zap.New(observed), Protocols: []string{Name}}
	for _, f := range setup {
		f(s)
	}
	srv := httptest.NewServer(s.HandlerFor(newDoor(t, Options{Method: "query", WS: ws, InFlight: s.InFlight})))
	t.Cleanup(srv.Close)
	return srv.URL, s, logs
}

func wsURL(url string) string { return "ws" + strings.TrimPrefix(url, "http") + RouteWS }

// dialWS opens a caller's conversation; resp is the upgrade's answer.
func dialWS(t *testing.T, url string, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	c, resp, err := websocket.Dial(context.Background(), wsURL(url), &websocket.DialOptions{HTTPHeader: header})
	if c != nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

// TestWS: GET /ws relays the bidi method's frames, text and binary, both
// ways; the runtime's session and custom headers reach the agent's
// upgrade; the conversation has one call log line.
func TestWS(t *testing.T) {
	const session = "X-Amzn-Bedrock-Agentcore-Runtime-Session-Id"
	agent := newWSAgent(t)
	m := metrics.New(Name)
	url, _, logs := wsSidecar(t, agent, "", "converse", func(s *proxy.Server) { s.Metrics = m })
	c, _, err := dialWS(t, url, http.Header{session: {strings.Repeat("s", 33)}, customPrefix + "Tone": {"dry"}, "X-Other": {"no"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, f := range []struct {
		typ  websocket.MessageType
		data string
	}{{websocket.MessageText, `{"audio":"…"}`}, {websocket.MessageBinary, "\x00\x01\xff"}} {
		c.Write(ctx, f.typ, []byte(f.data))
		typ, b, err := c.Read(ctx)
		if err != nil || typ != f.typ || string(b) != f.data {
			t.Errorf("echo of %v %q = %v %q, %v", f.typ, f.data, typ, b, err)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	h, _ := agent.last()
	if h.Get(session) != strings.Repeat("s", 33) || h.Get(customPrefix+"Tone") != "dry" || h.Get("X-Other") != "" {
		t.Errorf("the agent's upgrade had %s = %q, %sTone = %q, X-Other = %q; want the runtime's headers only", session, h.Get(session), customPrefix, h.Get(customPrefix+"Tone"), h.Get("X-Other"))
	}
	var line observer.LoggedEntry
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l := logs.FilterMessage("call").All(); len(l) > 0 {
			line = l[0]
			break
		}
	}
	f := line.ContextMap()
	if f["route"] != RouteWS || f["frames_in"] != int64(2) || f["frames_out"] != int64(2) || f["ended_by"] != "caller" || f["close_code"] != int64(1000) || f["class_method"] != "converse" {
		t.Errorf("call log line = %v, want route /ws, 2 frames each way, ended by the caller with 1000", f)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		`sidecar_live_frames_total{class_method="converse",direction="in"} 2`,
		`sidecar_live_frames_total{class_method="converse",direction="out"} 2`,
		`sidecar_live_connections 0`,
		`sidecar_calls_total{class_method="converse",outcome="ok",route="/ws"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestWSFields: the bidi method's path {field}s are filled from the
// upgrade URL's query parameters of the same names; one missing is
// refused 400 before the upgrade, the agent never reached.
func TestWSFields(t *testing.T) {
	agent := newWSAgent(t)
	url, _, _ := wsSidecar(t, agent, "", "fields")
	c, _, err := websocket.Dial(context.Background(), wsURL(url)+"?user_id=a%20b", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	agent.mu.Lock()
	uri := agent.uri
	agent.mu.Unlock()
	if uri != "/live?user=a+b" {
		t.Errorf("the agent's upgrade was at %q, want /live?user=a+b", uri)
	}
	if _, resp, err := dialWS(t, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an upgrade without user_id = %v, %v; want 400", status(resp), err)
	}
	if _, n := agent.last(); n != 1 {
		t.Errorf("the agent had %d upgrades, want 1", n)
	}
}

// TestWSGuard: an upgrade from another site's page (Origin) or under a
// rebinding name (Host) is refused 403 before the agent is reached; a
// page of the listener's own loopback origin may converse.
func TestWSGuard(t *testing.T) {
	agent := newWSAgent(t)
	url, _, _ := wsSidecar(t, agent, "", "converse")
	for _, tt := range []struct {
		name   string
		header http.Header
	}{
		{"cross-site Origin", http.Header{"Origin": {"https://evil.example"}}},
		{"rebinding Host", http.Header{"Host": {"rebind.example:8080"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, url+RouteWS, nil)
			for k, v := range tt.header {
				req.Header[k] = v
			}
			if h := tt.header.Get("Host"); h != "" {
				req.Host = h
			}
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("upgrade with %v = %d, want 403", tt.header, resp.StatusCode)
			}
		})
	}
	if _, n := agent.last(); n != 0 {
		t.Errorf("the agent had %d upgrades, want none: refused before", n)
	}
	origin := "http://" + strings.TrimPrefix(url, "http://")
	if _, _, err := dialWS(t, url, http.Header{"Origin": {origin}}); err != nil {
		t.Errorf("upgrade from the listener's own loopback page (%s): %v", origin, err)
	}
}

// TestWSAdmission: the upgrade is a call like any other: a protected door
// wants a token, limits.per_caller counts it (held while it is open),
// limits.live.connections caps the conversations at once, a plain GET is
// told to upgrade, and an agent that never answers its upgrade is bounded
// by the method's connect and first_byte.
func TestWSAdmission(t *testing.T) {
	t.Run("token", func(t *testing.T) {
		p := idptest.Start(t)
		agent := newWSAgent(t)
		url, _, _ := wsSidecar(t, agent, "", "converse", func(s *proxy.Server) {
			s.Config.Auth = config.Auth{Issuer: p.URL, Audience: doortest.Audience, Doors: []string{Name}, Line: 1}
			s.Auth = auth.New(s.Config.Auth, nil)
		})
		if _, resp, err := dialWS(t, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("upgrade without a token = %v, %v; want 401", status(resp), err)
		}
		tok := p.Token(t, "alice", doortest.Audience, "")
		if _, _, err := dialWS(t, url, http.Header{"Authorization": {"Bearer " + tok}}); err != nil {
			t.Errorf("upgrade with a token: %v", err)
		}
	})
	t.Run("per caller", func(t *testing.T) {
		agent := newWSAgent(t)
		url, _, _ := wsSidecar(t, agent, "limits: {per_caller: {concurrent: 1}}\n", "converse", func(s *proxy.Server) {
			s.Quota = quota.New(s.Config.Limits.PerCaller, nil)
		})
		first, _, err := dialWS(t, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, resp, err := dialWS(t, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("a second conversation while the first is open = %v, %v; want 429", status(resp), err)
		}
		first.Close(websocket.StatusNormalClosure, "")
	})
	t.Run("connections", func(t *testing.T) {
		agent := newWSAgent(t)
		url, _, _ := wsSidecar(t, agent, "limits: {live: {connections: 1}}\n", "converse")
		first, _, err := dialWS(t, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, resp, err := dialWS(t, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a conversation past limits.live.connections = %v, %v; want 503 with Retry-After", status(resp), err)
		}
		first.Close(websocket.StatusNormalClosure, "")
	})
	t.Run("agent not ready", func(t *testing.T) {
		url, _, _ := wsSidecar(t, newWSAgent(t), "", "converse", func(s *proxy.Server) {
			s.Prober = &doortest.Prober{} // not ready; ReadyWait 0: no wait
		})
		if _, resp, err := dialWS(t, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("upgrade while the agent is not ready = %v, %v; want 503", status(resp), err)
		}
	})
	t.Run("plain GET", func(t *testing.T) {
		url, _, _ := wsSidecar(t, newWSAgent(t), "", "converse")
		resp, err := http.Get(url + RouteWS)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Upgrade") != "websocket" {
			t.Errorf("GET %s without an upgrade = %d, Upgrade %q; want 426 naming websocket", RouteWS, resp.StatusCode, resp.Header.Get("Upgrade"))
		}
	})
	t.Run("agent never upgrades", func(t *testing.T) {
		url, _, _ := wsSidecar(t, newWSAgent(t), "", "stall")
		start := time.Now()
		_, resp, err := dialWS(t, url, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusGatewayTimeout {
			t.Errorf("upgrade of an agent that never answers = %v, %v; want 504", status(resp), err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("refused after %v, want about the method's 1.3s", d)
		}
	})
}

// TestWSShutdown: EndCalls closes every conversation with 1001, and a
// drain refuses new ones.
func TestWSShutdown(t *testing.T) {
	url, s, _ := wsSidecar(t, newWSAgent(t), "", "converse")
	c, _, err := dialWS(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Write(context.Background(), websocket.MessageText, []byte("hi"))
	c.Read(context.Background()) // the conversation is open
	s.Drain()
	if _, resp, err := dialWS(t, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("upgrade while draining = %v, %v; want 503", status(resp), err)
	}
	s.EndCalls()
	_, _, err = c.Read(context.Background())
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || !strings.Contains(ce.Reason, "shutting down") {
		t.Errorf("the caller's read after EndCalls = %v, want 1001 saying the sidecar is shutting down", err)
	}
	if !s.WaitIdle(time.Now().Add(10 * time.Second)) {
		t.Errorf("in flight after EndCalls: %d, want 0", s.InFlight())
	}
}

func status(resp *http.Response) any {
	if resp == nil {
		return "no answer"
	}
	return resp.StatusCode
}

var _ proxy.Conversing = (*Door)(nil)

// TestWSOutlivesRequestDeadlines: the public server's read and write
// deadlines bound a request until it is a call (the binary sets them); a
// conversation, which lasts for minutes, must not inherit them on its
// hijacked connection (net/http clears them on Hijack).
func TestWSOutlivesRequestDeadlines(t *testing.T) {
	agent := newWSAgent(t)
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \""+agent.URL+"\"}\nmethods:\n  query: {}\n  converse: {mode: bidi, call: GET /live}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &proxy.Server{Config: cfg}
	srv := httptest.NewUnstartedServer(s.HandlerFor(newDoor(t, Options{Method: "query", WS: "converse", InFlight: s.InFlight})))
	const deadline = 200 * time.Millisecond
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = deadline, deadline
	srv.Start()
	t.Cleanup(srv.Close)
	c, _, err := dialWS(t, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * deadline) // past both deadlines
	ctx := context.Background()
	c.Write(ctx, websocket.MessageText, []byte("still there?"))
	if _, b, err := c.Read(ctx); err != nil || string(b) != "still there?" {
		t.Errorf("echo after the server's deadlines = %q, %v; want the frame back", b, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// TestWSUnixSocket: an agent on a Unix socket (upstream.url unix://) is
// reached for its WebSocket as for its calls.
func TestWSUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		typ, b, err := c.Read(context.Background())
		if err == nil {
			c.Write(context.Background(), typ, append([]byte("unix: "), b...))
		}
		c.Close(websocket.StatusNormalClosure, "")
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	url, _, _ := wsSidecar(t, &wsAgent{URL: "unix://" + sock}, "", "converse")
	c, _, err := dialWS(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Write(context.Background(), websocket.MessageText, []byte("hi"))
	if _, b, err := c.Read(context.Background()); err != nil || string(b) != "unix: hi" {
		t.Errorf("through the socket: %q, %v; want %q", b, err, "unix: hi")
	}
}

// TestWSHeaders: headers.forward and headers.set apply to the agent's
// upgrade as to a call's request: the listed caller header and the trace
// headers pass, headers.set wins over the caller's, and a header neither
// lists stays behind.
func TestWSHeaders(t *testing.T) {
	agent := newWSAgent(t)
	url, _, _ := wsSidecar(t, agent, "headers: {forward: [X-Tenant], set: {X-Caller: sidecar}}\n", "converse")
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	c, _, err := dialWS(t, url, http.Header{"X-Tenant": {"acme"}, "X-Caller": {"forged"}, "X-Other": {"no"}, "Traceparent": {tp}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	h, n := agent.last()
	if n != 1 {
		t.Fatalf("agent upgrades = %d, want 1", n)
	}
	for name, want := range map[string]string{"X-Tenant": "acme", "X-Caller": "sidecar", "X-Other": "", "Traceparent": tp} {
		if got := h.Get(name); got != want {
			t.Errorf("agent's upgrade %s = %q, want %q", name, got, want)
		}
	}
}

// TestWSSpan: a conversation is one SERVER span, a child of the caller's
// trace, whose attributes say its method, the frames and bytes each way,
// who ended it and with which code; the agent's upgrade carries a
// traceparent naming that span, in place of the caller's.
func TestWSSpan(t *testing.T) {
	agent := newWSAgent(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	url, _, logs := wsSidecar(t, agent, "", "converse", func(s *proxy.Server) { s.Tracer = tp.Tracer("test") })
	const traceID, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	c, _, err := dialWS(t, url, http.Header{"Traceparent": {"00-" + traceID + "-" + callerSpan + "-01"},
		"X-Cloud-Trace-Context": {traceID + "/13235353014750950193;o=1"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Write(ctx, websocket.MessageText, []byte("hello"))
	if _, b, err := c.Read(ctx); err != nil || string(b) != "hello" {
		t.Fatalf("echo = %q, %v", b, err)
	}
	c.Close(4000, "bye")
	var spans []sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(10 * time.Second); len(spans) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		spans = rec.Ended()
	}
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	sp := spans[0]
	if sp.SpanKind() != trace.SpanKindServer || sp.Name() != "GET "+RouteWS {
		t.Errorf("span = %v %q, want a SERVER span GET %s", sp.SpanKind(), sp.Name(), RouteWS)
	}
	if sp.SpanContext().TraceID().String() != traceID || sp.Parent().SpanID().String() != callerSpan {
		t.Errorf("span's trace %s parent %s, want the caller's %s %s", sp.SpanContext().TraceID(), sp.Parent().SpanID(), traceID, callerSpan)
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range sp.Attributes() {
		got[kv.Key] = kv.Value
	}
	for key, want := range map[attribute.Key]any{
		"http.request.method":       "GET",
		"http.route":                RouteWS,
		"sidecar.protocol":          Name,
		"sidecar.class_method":      "converse",
		"http.response.status_code": int64(http.StatusSwitchingProtocols),
		"sidecar.frames_in":         int64(1),
		"sidecar.frames_out":        int64(1),
		"sidecar.bytes_in":          int64(5),
		"sidecar.bytes_out":         int64(5),
		"sidecar.ended_by":          "caller",
		"sidecar.close_code":        int64(4000),
		"sidecar.outcome":           "ok",
	} {
		if v, ok := got[key]; !ok || v.AsInterface() != want {
			t.Errorf("span's %s = %v, want %v", key, v.AsInterface(), want)
		}
	}
	if sp.Status().Code == codes.Error {
		t.Errorf("span's status = %v, want not an error", sp.Status())
	}
	h, _ := agent.last()
	if want := "00-" + traceID + "-" + sp.SpanContext().SpanID().String() + "-01"; h.Get("Traceparent") != want {
		t.Errorf("agent's upgrade traceparent = %q, want %q (the conversation's span)", h.Get("Traceparent"), want)
	}
	var line map[string]any
	for deadline := time.Now().Add(10 * time.Second); line == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l := logs.FilterMessage("call").All(); len(l) > 0 {
			line = l[0].ContextMap()
		}
	}
	if line["logging.googleapis.com/trace"] != traceID || line["logging.googleapis.com/spanId"] != sp.SpanContext().SpanID().String() {
		t.Errorf("call log line = %v, want the trace %s and the conversation's span %s", line, traceID, sp.SpanContext().SpanID())
	}
	id := sp.SpanContext().SpanID()
	if want := fmt.Sprintf("%s/%d;o=1", traceID, binary.BigEndian.Uint64(id[:])); h.Get("X-Cloud-Trace-Context") != want {
		t.Errorf("agent's upgrade X-Cloud-Trace-Context = %q, want %q (the conversation's span)", h.Get("X-Cloud-Trace-Context"), want)
	}
}

// TestWSThousandIdle: 1,000 idle conversations open at once through /ws
// cost the sidecar two goroutines each (one reading each side; a
// direction's writer exists only while frames wait), and all end when
// their callers leave.
func TestWSThousandIdle(t *testing.T) {
	const n = 1000
	agent := newWSAgent(t)
	url, s, _ := wsSidecar(t, agent, "limits: {live: {connections: 2000}}\n", "converse")
	ctx := context.Background()
	// The count without the sidecar: the callers' ends and the agent's
	// (one goroutine reading each agent connection).
	direct := func(url string) int {
		before := runtime.NumGoroutine()
		open := make([]*websocket.Conn, 0, n/10)
		for range n / 10 {
			c, _, err := websocket.Dial(ctx, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Write(ctx, websocket.MessageText, []byte("hi"))
			if _, _, err := c.Read(ctx); err != nil {
				t.Fatal(err)
			}
			open = append(open, c)
		}
		grew := runtime.NumGoroutine() - before
		for _, c := range open {
			c.Close(websocket.StatusNormalClosure, "")
		}
		return grew
	}
	ends := direct("ws"+strings.TrimPrefix(agent.URL, "http")+"/live") * 10
	waitFor(t, func() bool { return agent.opened() == 0 })

	before := runtime.NumGoroutine()
	open := make([]*websocket.Conn, 0, n)
	for range n {
		c, _, err := websocket.Dial(ctx, wsURL(url), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(ctx, websocket.MessageText, []byte("hi"))
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	if per := float64(runtime.NumGoroutine()-before-ends) / n; per > 2.05 {
		t.Errorf("the sidecar holds %.2f goroutines per idle conversation, want 2", per)
	}
	for _, c := range open {
		c.Close(websocket.StatusNormalClosure, "")
	}
	waitFor(t, func() bool { return s.InFlight() == 0 && agent.opened() == 0 })
}

// waitFor waits until ok, failing after a generous bound.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still waiting after 30s")
		}
	}
}

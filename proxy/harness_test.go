package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/upstream"
)

// harness is a sidecar (an httptest server around Server.Handler) in front
// of an agent.
type harness struct {
	t       testing.TB
	url     string
	server  *Server
	logs    *observer.ObservedLogs
	prober  context.CancelFunc
	proberW sync.WaitGroup
}

type harnessOption func(*harnessConfig)

type harnessConfig struct {
	serverLimits bool
	writeTimeout time.Duration
	probe        bool
	readyWait    time.Duration
	builtin      core.Agent
	wrapCore     func(zapcore.Core) zapcore.Core
	metrics      *metrics.Metrics
	tracer       trace.Tracer
	server       func(*Server)
}

// withServer has f set up the Server before it serves (its Auth, Quota).
func withServer(f func(*Server)) harnessOption {
	return func(c *harnessConfig) { c.server = f }
}

// withTracer records the harness's spans with tracer.
func withTracer(tracer trace.Tracer) harnessOption {
	return func(c *harnessConfig) { c.tracer = tracer }
}

// withMetrics records the harness's calls in m.
func withMetrics(m *metrics.Metrics) harnessOption {
	return func(c *harnessConfig) { c.metrics = m }
}

// withLogCore wraps the harness's log core, to watch or hold log writes.
func withLogCore(wrap func(zapcore.Core) zapcore.Core) harnessOption {
	return func(c *harnessConfig) { c.wrapCore = wrap }
}

func withBuiltin(b core.Agent) harnessOption {
	return func(c *harnessConfig) { c.builtin = b }
}

func withWriteTimeout(d time.Duration) harnessOption {
	return func(c *harnessConfig) { c.writeTimeout = d }
}

// withServerLimits applies the config's header limits to the server, as
// the sidecar's own http.Server does.
func withServerLimits() harnessOption {
	return func(c *harnessConfig) { c.serverLimits = true }
}

func withProber(wait time.Duration) harnessOption {
	return func(c *harnessConfig) { c.probe, c.readyWait = true, wait }
}

// newHarness parses yaml, with every "AGENT" replaced by agentURL, and
// serves a sidecar for it.
func newHarness(t testing.TB, agentURL, yaml string, opts ...harnessOption) *harness {
	t.Helper()
	var hc harnessConfig
	for _, o := range opts {
		o(&hc)
	}
	cfg, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(yaml, "AGENT", agentURL)))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	observed, logs := observer.New(zap.DebugLevel)
	logCore := zapcore.Core(observed)
	if hc.wrapCore != nil {
		logCore = hc.wrapCore(logCore)
	}
	logger := zap.New(logCore)
	client, err := upstream.New(cfg, logger)
	if err != nil {
		t.Fatalf("upstream.New: %v", err)
	}
	h := &harness{t: t, logs: logs}
	agent := core.Mux{Plain: client, Handlers: hc.builtin}
	h.server = &Server{Config: cfg, Agent: agent, Logger: logger, ReadyWait: hc.readyWait, Metrics: hc.metrics}
	if hc.tracer != nil {
		h.server.Tracer = hc.tracer
		client.Trace(hc.tracer)
	}
	if hc.probe {
		prober := upstream.NewProber(cfg, client)
		h.server.Prober = prober
		ctx, cancel := context.WithCancel(context.Background())
		h.prober = cancel
		h.proberW.Go(func() { prober.Run(ctx) })
	}
	if hc.server != nil {
		hc.server(h.server)
	}
	srv := httptest.NewUnstartedServer(h.server.HandlerFor(platform.Door{}))
	srv.Config.WriteTimeout = hc.writeTimeout
	srv.Config.ReadTimeout = hc.writeTimeout
	if hc.serverLimits {
		srv.Config.ReadHeaderTimeout = cfg.Limits.HeaderTimeout
		srv.Config.MaxHeaderBytes = cfg.Limits.HeaderBytes
	}
	srv.Start()
	h.url = srv.URL
	t.Cleanup(func() {
		srv.Close()
		// Every call has ended: each freed the slot it took, once.
		if free, waiting := h.server.slots.state(); free != h.server.slots.n || waiting != 0 {
			t.Errorf("every call ended, and %d of %d concurrency slots are free, %d calls waiting: want all free, none waiting (a slot freed twice, or never)", free, h.server.slots.n, waiting)
		}
		if h.prober != nil {
			h.prober()
			h.proberW.Wait()
		}
		client.Close()
	})
	return h
}

// reply is a finished call to the sidecar.
type reply struct {
	status int
	header http.Header
	body   string
}

func (h *harness) post(route, body string) reply {
	h.t.Helper()
	resp, err := http.Post(h.url+route, "application/json", strings.NewReader(body))
	if err != nil {
		h.t.Fatalf("POST %s: %v", route, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("reading %s reply: %v", route, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (h *harness) unary(method, input string) reply {
	h.t.Helper()
	return h.post(core.RouteUnary, `{"class_method":"`+method+`","input":`+input+`}`)
}

func (h *harness) stream(method, input string) reply {
	h.t.Helper()
	return h.post(core.RouteStream, `{"class_method":"`+method+`","input":`+input+`}`)
}

// lines splits an ndjson body, checking each line is one compact JSON value.
func lines(t *testing.T, body string) []string {
	t.Helper()
	if body == "" {
		return nil
	}
	if !strings.HasSuffix(body, "\n") {
		t.Fatalf("stream body %q does not end with a newline (torn last line)", body)
	}
	out := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	for _, l := range out {
		if !json.Valid([]byte(l)) {
			t.Fatalf("stream line %q is not valid JSON", l)
		}
	}
	return out
}

// detail reads the {"detail": …} of an error reply.
func detail(t *testing.T, r reply) string {
	t.Helper()
	var d struct {
		Detail *string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(r.body), &d); err != nil || d.Detail == nil {
		t.Fatalf("error body %q is not {\"detail\": …}", r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	return *d.Detail
}

// lineReader reads a live stream line by line.
type lineReader struct {
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc // ends the call
}

func (h *harness) open(ctx context.Context, route, body string) *lineReader {
	h.t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+route, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		h.t.Fatalf("POST %s: %v", route, err)
	}
	h.t.Cleanup(func() { resp.Body.Close(); cancel() })
	return &lineReader{resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}
}

// promptly bounds the wait for a line the sidecar must flush while the
// agent holds the rest: it comes at once, or never (the agent waits for
// the test), so the bound is the behaviour, not the machine's speed.
const promptly = 2 * time.Second

// nextPrompt is next for such a line: when it has not come within
// promptly, the test fails then, saying so, instead of at the call's
// deadline.
func (l *lineReader) nextPrompt(t *testing.T) string {
	t.Helper()
	fired := make(chan struct{})
	late := time.AfterFunc(promptly, func() {
		defer close(fired)
		t.Errorf("no stream line within %v while the agent holds the rest: not flushed", promptly)
		l.cancel()
	})
	defer func() {
		if !late.Stop() {
			<-fired
		}
	}()
	return l.next(t)
}

func (l *lineReader) next(t *testing.T) string {
	t.Helper()
	s, err := l.r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading stream line: %v (got %q)", err, s)
	}
	return strings.TrimSuffix(s, "\n")
}

// heldAgent is an agent that reads each request, then answers body once
// release is closed or its caller leaves; calls counts the requests. It
// closes when the test ends, after the test's own defers: so that a test
// that fails (t.Fatal, on any path) holding calls cannot hang in a Close
// that waits for them, it lets them answer as the test ends (t.Context),
// before any cleanup closes a server.
func heldAgent(t *testing.T, release <-chan struct{}, body string) (*atomic.Int32, *httptest.Server) {
	t.Helper()
	calls := new(atomic.Int32)
	ended := t.Context()
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.ReadAll(r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		case <-ended.Done():
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(agent.Close)
	return calls, agent
}

// hangsAfter gives t a deadline of its own: a test that could hang (a
// call that never ends, a server whose Close waits for it) fails by
// name after d, with every goroutine's stack, instead of running until
// the package's timeout. d is far beyond the test's own run; the
// deadline covers the test's defers and cleanups registered after it,
// so call it first.
func hangsAfter(t *testing.T, d time.Duration) {
	t.Helper()
	name := t.Name()
	timer := time.AfterFunc(d, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("%s did not end within %v: a call or a server that never ended (the goroutines below)", name, d))
	})
	t.Cleanup(func() { timer.Stop() })
}

// taken is the number of concurrency slots calls hold.
func (h *harness) taken() int {
	free, _ := h.server.slots.state()
	return h.server.slots.n - free
}

// waiting is the number of calls waiting for a slot.
func (h *harness) waiting() int {
	_, waiting := h.server.slots.state()
	return waiting
}

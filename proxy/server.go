package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Server serves the platform contract in front of one agent. Fill its
// fields, then serve Handler.
type Server struct {
	// Config is the method map.
	Config *config.Config
	// Agent answers the calls.
	Agent core.Agent
	// Prober reports the agent's readiness. If nil, the agent is taken to
	// be ready and /healthz reports only the sidecar.
	Prober Prober
	// ReadyWait is how long a call waits for an agent that is not ready
	// before it is answered 503. Zero means it does not wait.
	ReadyWait time.Duration
	// Logger gets one line per call. If nil, nothing is logged.
	Logger *zap.Logger
	// Metrics records every call. If nil, nothing is recorded.
	Metrics *metrics.Metrics
	// Map is the mapping stage between the agent's records and the
	// caller's: each stream's records pass through it. If nil, they pass
	// unchanged.
	Map core.Stage
	// Project is the Google Cloud project ($GOOGLE_CLOUD_PROJECT), for the
	// trace field of log lines. Empty: the bare trace id is logged.
	Project string

	draining atomic.Bool
	inFlight atomic.Int64
	// notReady is the readiness detail last logged.
	notReady atomic.Pointer[string]
	// slots holds one token per call being served when
	// Config.Limits.Concurrency is set; queued counts the calls waiting.
	slots  chan struct{}
	queued atomic.Int64
	// calls is the parent of every call's context; cancelling it with
	// ErrShuttingDown ends the calls still in flight.
	calls    context.Context
	endCalls context.CancelCauseFunc
}

// Prober reports the agent's readiness (upstream.Prober does).
type Prober interface {
	// Status reports whether the agent is ready, and why not.
	Status() (ok bool, detail string)
	// PublicDetail is why the agent is not ready in words fit for the
	// public port, or "" for the generic ones.
	PublicDetail() string
	// Wait waits until the agent is ready or ctx ends.
	Wait(ctx context.Context) error
}

// ErrShuttingDown ends the calls still in flight when the drain budget
// after SIGTERM runs out.
var ErrShuttingDown = core.ErrShuttingDown

// Drain makes /healthz answer 503 and new calls get 503 with Retry-After
// from now on, so the platform stops routing calls here while the calls in
// flight finish.
func (s *Server) Drain() { s.draining.Store(true) }

// InFlight is the number of calls being served.
func (s *Server) InFlight() int64 { return s.inFlight.Load() }

// EndCalls ends every call still in flight: a stream gets a final
// "shutting_down" error line, a call not yet answered a 503. The agent's
// requests are cancelled.
func (s *Server) EndCalls() { s.endCalls(ErrShuttingDown) }

// Handler is the sidecar's public HTTP surface: the two contract routes
// and /healthz, nothing else. Call it once: it also sets the server up.
func (s *Server) Handler() http.Handler {
	if s.Logger == nil {
		s.Logger = zap.NewNop()
	}
	s.calls, s.endCalls = context.WithCancelCause(context.Background())
	s.Metrics.Gauge("sidecar_calls_in_flight", "Calls being served.", func() float64 { return float64(s.inFlight.Load()) })
	if s.Prober != nil {
		s.Metrics.Gauge("sidecar_agent_ready", "1 while the agent answers its readiness probe, else 0.", func() float64 {
			if ok, _ := s.Prober.Status(); ok {
				return 1
			}
			return 0
		})
	}
	s.slots = make(chan struct{}, Concurrency(s.Config))
	// SkipClean: a path is served as sent or not at all. mux would answer
	// "/./healthz", "//api/reasoning_engine" or an absolute-form target
	// with a 301 to the cleaned path, and a probe that gets a redirect
	// counts as failed.
	r := mux.NewRouter().SkipClean(true)
	r.HandleFunc(config.RouteUnary, s.handle(config.RouteUnary, false, s.serveUnary)).Methods(http.MethodPost)
	r.HandleFunc(config.RouteStream, s.handle(config.RouteStream, true, s.serveStream)).Methods(http.MethodPost)
	r.HandleFunc(routeBidi, bidiNotSupported).Methods(http.MethodPost)
	for _, path := range healthPaths {
		r.HandleFunc(path, s.ServeHealth).Methods(http.MethodGet, http.MethodHead)
	}
	r.NotFoundHandler = http.HandlerFunc(notFound)
	r.MethodNotAllowedHandler = http.HandlerFunc(methodNotAllowed)
	return r
}

// routeBidi is the platform's route for api_mode bidi_stream methods.
const routeBidi = "/api/bidi_reasoning_engine"

// healthPaths all answer as /healthz: the platform has been seen probing
// "/" and "/health" too, and killing a container that answers a redirect.
var healthPaths = []string{"/healthz", "/health", "/"}

func bidiNotSupported(w http.ResponseWriter, _ *http.Request) {
	writeError(w, failure{status: http.StatusNotImplemented, message: "bidi streaming (api_mode bidi_stream) is not supported by the sidecar; " +
		"serve the method as unary (:query) or streaming (:streamQuery)"})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, failure{status: http.StatusNotFound, message: fmt.Sprintf(
		"no route %q; the sidecar serves POST %s, POST %s and GET /healthz",
		clip(r.URL.Path), config.RouteUnary, config.RouteStream)})
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	allow := http.MethodPost
	if slices.Contains(healthPaths, r.URL.Path) {
		allow = "GET, HEAD"
	}
	w.Header().Set("Allow", allow)
	writeError(w, failure{status: http.StatusMethodNotAllowed, message: fmt.Sprintf(
		"method %q not allowed on %s; use %s", clip(r.Method), r.URL.Path, allow)})
}

// ServeHealth answers /healthz: 200 while the agent is ready, 503 while it is
// not or the sidecar drains. Why the agent is not ready (a dial error can
// name its socket) is not said on the public port: it is logged, and
// ServeHealthDetail says it.
func (s *Server) ServeHealth(w http.ResponseWriter, _ *http.Request) { s.serveHealth(w, false) }

// ServeHealthDetail answers as ServeHealth does, with why the agent is not
// ready: for the private admin listener.
func (s *Server) ServeHealthDetail(w http.ResponseWriter, _ *http.Request) { s.serveHealth(w, true) }

func (s *Server) serveHealth(w http.ResponseWriter, full bool) {
	type health struct {
		Status string `json:"status"`
		Agent  string `json:"agent,omitempty"`
		Detail string `json:"detail,omitempty"`
	}
	h, code := health{Status: "ok"}, http.StatusOK
	if s.Prober != nil {
		ok, detail := s.Prober.Status()
		h.Agent = "ready"
		s.logReadiness(ok, detail)
		if !ok {
			if !full {
				detail = core.ErrNotReady.Error()
				if public := s.Prober.PublicDetail(); public != "" {
					detail = public
				}
			}
			h, code = health{Status: "unavailable", Agent: "not_ready", Detail: detail}, http.StatusServiceUnavailable
		}
	}
	if s.draining.Load() {
		h, code = health{Status: "draining", Detail: "sidecar is shutting down"}, http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(h)
}

// callContext is the context of one call: it ends when the caller leaves
// or when EndCalls ends every call.
func (s *Server) callContext(r *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(s.calls, func() { cancel(context.Cause(s.calls)) })
	return ctx, func() { stop(); cancel(nil) }
}

// call is one class_method call, from request to log line.
type call struct {
	start   time.Time
	route   string
	method  string
	status  int
	notes   core.Notes // the reply's format and the agent's retries
	records int
	bytes   int64
	outcome metrics.Outcome // who ended the call
	phase   string          // the clock that ran out, for a timeout
	reason  string          // the failure's reason, for a call that did not end ok
	err     error
	release func()        // frees the call's concurrency slot, if it took one
	entry   string        // the method map entry that served it
	first   time.Duration // to the first line of a stream
}

func (c *call) done() {
	if c.release != nil {
		c.release()
	}
}

// Concurrency is the number of calls served at once: limits.concurrency,
// or when that is 0, 2 × GOMAXPROCS + 1 (GOMAXPROCS is the container's
// CPU limit, at least 2): the platform's own containerConcurrency for its
// CPU count (9 on its default 4 CPUs). Every call in a slot may hold its
// request body in memory, so the slots bound that memory.
func Concurrency(cfg *config.Config) int {
	if n := cfg.Limits.Concurrency; n > 0 {
		return n
	}
	return 2*runtime.GOMAXPROCS(0) + 1
}

// acquire takes a concurrency slot, waiting in the bounded queue for one
// when they are all taken.
func (s *Server) acquire(ctx context.Context) (func(), error) {
	release := func() { <-s.slots }
	select {
	case s.slots <- struct{}{}:
		return release, nil
	default:
	}
	lim := s.Config.Limits
	if s.queued.Add(1) > int64(lim.Queue) {
		s.queued.Add(-1)
		return nil, fmt.Errorf("%w: %d calls in flight and %d waiting", core.ErrBusy, lim.Concurrency, lim.Queue)
	}
	defer s.queued.Add(-1)
	t := time.NewTimer(lim.QueueTimeout)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-t.C:
		return nil, fmt.Errorf("%w: no slot freed within %s", core.ErrBusy, lim.QueueTimeout)
	}
}

// errLoop is a call that came from a sidecar's request to its agent: the
// agent is a sidecar, this one most likely, and the call would go round.
var errLoop = &RequestError{Status: http.StatusLoopDetected, Msg: "loop detected: this call came from a sidecar (it carries " +
	core.HopHeader + "); is upstream.url the sidecar's own address?"}

// smallBody is the largest request body read before its call waits for a
// concurrency slot. Reading it lets net/http notice a queued caller who
// leaves; a larger body (or one of unknown length) is read only once the
// call has its slot, so the bodies in memory are bounded by the slots, not
// by the callers, and a caller turned away gets its 503 before sending it.
const smallBody = 64 << 10

// begin takes a concurrency slot, reads and normalizes the request, finds
// its method and waits for the agent to be ready. It returns what the
// agent call needs.
//
// Memory: a call in a slot holds its body once: read at its exact length
// when Content-Length gives it (else in growing steps, up to about twice
// it while reading), decoded in place (a JSON string holding the envelope
// too), its input compacted in place and indexed without copying values
// (core.ParseInput). Building the agent's request may copy the input
// once more. So request bodies take at most Concurrency × request_bytes ×
// 4, plus smallBody per queued call.
func (s *Server) begin(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call, stream bool) (core.Call, error) {
	if r.Header.Get(core.HopHeader) != "" {
		return core.Call{}, errLoop
	}
	if s.draining.Load() {
		return core.Call{}, ErrShuttingDown
	}
	limit := s.Config.Limits.RequestBytes
	if r.ContentLength > limit {
		return core.Call{}, &http.MaxBytesError{Limit: limit} // refused unread
	}
	// A small body is read and checked before the call queues: a bad
	// request never takes a slot. A large one waits for its slot unread.
	var call core.Call
	var err error
	early := r.ContentLength >= 0 && r.ContentLength <= smallBody
	if early {
		if call, err = s.request(w, r, c, stream); err != nil {
			return core.Call{}, err
		}
	}
	release, err := s.acquire(ctx)
	if err != nil {
		return core.Call{}, err
	}
	c.release = release
	if !early {
		if call, err = s.request(w, r, c, stream); err != nil {
			return core.Call{}, err
		}
	}
	// Agents think for minutes: the server's read and write deadlines
	// protect reading the request, not the call (DESIGN.md lesson 3).
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	if err := s.waitReady(ctx); err != nil {
		return core.Call{}, err
	}
	return call, nil
}

// request reads the request body, decodes its envelope and finds its
// method: the call for the agent.
func (s *Server) request(w http.ResponseWriter, r *http.Request, c *call, stream bool) (core.Call, error) {
	body, err := readBody(w, r, s.Config.Limits.RequestBytes)
	if err != nil {
		return core.Call{}, err
	}
	env, err := decodeEnvelope(body, stream)
	if err != nil {
		return core.Call{}, err
	}
	c.method = env.method
	m := s.Config.Lookup(env.method, stream)
	if m == nil {
		return core.Call{}, s.methodNotFound(env.method, stream)
	}
	c.entry = m.Name
	in := core.Input{Raw: env.input}
	if core.ReadsFields(m) {
		if in, err = core.ParseInput(env.input); err != nil {
			return core.Call{}, badRequest("%v", err)
		}
	}
	return core.Call{Method: m, Name: env.method, Input: in, Header: r.Header, Route: c.route, Notes: &c.notes}, nil
}

// readBody reads the request body, up to limit bytes: into a buffer of
// its exact size when the request gives its Content-Length.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	var b []byte
	var err error
	if n := r.ContentLength; n >= 0 && n <= limit {
		b = make([]byte, n)
		_, err = io.ReadFull(body, b)
	} else {
		b, err = io.ReadAll(body)
	}
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, err
		}
		return nil, badRequest("reading request body: %v", err)
	}
	return b, nil
}

// methodNotFound words the error as the managed server does, listing only
// the methods of the route that was called.
func (s *Server) methodNotFound(name string, stream bool) error {
	names := s.Config.RouteMethods(stream)
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	msg := fmt.Sprintf("User-specified method `%s` not found. Available methods are: [%s]", name, strings.Join(quoted, ", "))
	if other := s.Config.Lookup(name, !stream); other != nil && other.Name != "*" {
		if stream {
			msg += fmt.Sprintf(". `%s` is a unary method: call it with :query (%s)", name, config.RouteUnary)
		} else {
			msg += fmt.Sprintf(". `%s` is a streaming method: call it with :streamQuery (%s)", name, config.RouteStream)
		}
	}
	return &RequestError{Status: http.StatusBadRequest, Msg: msg}
}

func (s *Server) waitReady(ctx context.Context) error {
	if s.Prober == nil {
		return nil
	}
	if ok, _ := s.Prober.Status(); ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.ReadyWait)
	defer cancel()
	if err := s.Prober.Wait(ctx); err != nil {
		if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
			return cause
		}
		_, detail := s.Prober.Status()
		return fmt.Errorf("%w (%s, waited %s)", core.ErrNotReady, detail, s.ReadyWait)
	}
	return nil
}

// handle wraps a route's serve function in what every call shares: it is
// counted in flight, gets its context, has its request read and checked,
// and ends with one log line.
func (s *Server) handle(route string, stream bool, serve func(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call, call core.Call)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{start: time.Now(), route: route}
		defer s.log(r, c)
		defer c.done()
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		ctx, done := s.callContext(r)
		defer done()
		call, err := s.begin(ctx, w, r, c, stream)
		if err != nil {
			s.fail(w, r, c, err)
			return
		}
		defer boundWrites(ctx, w, r, c.start, call.Method.Timeouts.Total)()
		serve(ctx, w, r, c, call)
	}
}

// writeGrace is how long a write to the caller may still take once the
// call's total time has run out or its context has ended: time for the
// final line to reach a caller that reads.
const writeGrace = time.Second

// boundWrites bounds every write of the call's reply, which begin freed
// from the server's write timeout: a caller that stops reading would
// otherwise hold the call, its goroutine and its concurrency slot for as
// long as its connection stays open. A write ends with an error
// writeGrace after the call's total time (none if total is 0) or
// after ctx ends (EndCalls, the caller leaving), whichever is sooner. The
// returned stop leaves writeGrace for what net/http writes after the
// handler (the stream's last chunk) when the server has a write timeout,
// which it sets afresh for the connection's next request; without one,
// it clears the deadline.
func boundWrites(ctx context.Context, w http.ResponseWriter, r *http.Request, start time.Time, total time.Duration) (stop func()) {
	rc := http.NewResponseController(w)
	var deadline time.Time
	if total > 0 {
		deadline = start.Add(total + writeGrace)
	}
	var mu sync.Mutex // guards deadline and stopped
	stopped := false
	set := func(d time.Time) {
		deadline = d
		rc.SetWriteDeadline(d)
	}
	set(deadline)
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if d := time.Now().Add(writeGrace); !stopped && (deadline.IsZero() || d.Before(deadline)) {
			set(d)
		}
	})
	return func() {
		stopAfter()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server); srv != nil && srv.WriteTimeout > 0 {
			if d := time.Now().Add(writeGrace); deadline.IsZero() || d.Before(deadline) {
				set(d)
			}
			return
		}
		set(time.Time{})
	}
}

// serveUnary answers POST /api/reasoning_engine with {"output": …}.
func (s *Server) serveUnary(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call, call core.Call) {
	out, err := s.Agent.Unary(ctx, call)
	if err != nil {
		s.fail(w, r, c, err)
		return
	}
	body := make([]byte, 0, len(out)+12)
	body = append(body, `{"output":`...)
	body = append(body, out...)
	body = append(body, "}\n"...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	c.status, c.records, c.outcome = http.StatusOK, 1, metrics.OK
	n, err := w.Write(body)
	if err == nil {
		// The reply leaves now, not after the call's log line and metrics.
		err = http.NewResponseController(w).Flush()
	}
	c.bytes = int64(n)
	if err != nil {
		c.callerLeft(err)
	}
}

// serveStream answers POST /api/stream_reasoning_engine with one compact
// JSON record per line, each flushed as soon as the agent produced it.
func (s *Server) serveStream(ctx context.Context, w http.ResponseWriter, r *http.Request, c *call, call core.Call) {
	records, err := s.openStream(ctx, call)
	if err != nil {
		s.fail(w, r, c, err)
		return
	}
	records = s.mapped(records)
	defer records.Close()

	// The agent has answered 2xx: the 200 goes out now, before the first
	// record, so the caller knows the call was accepted.
	out := newNDJSON(w)
	c.status = http.StatusOK
	if err := out.begin(); err != nil {
		c.callerLeft(err)
		return
	}
	err = out.Copy(records)
	c.records, c.bytes = out.records, out.bytes
	if out.records > 0 {
		c.first = out.first.Sub(c.start)
	}
	if err != nil {
		c.callerLeft(err)
		return
	}
	if err := records.Err(); err != nil {
		err = explain(ctx, r.Context(), err)
		f := c.failed(failureOf(err), err)
		if f.outcome == metrics.CallerLeft {
			return
		}
		out.final(errorLine(f))
		c.bytes = out.bytes
		return
	}
	c.outcome = metrics.OK
}

// mapped is the mapping stage of a stream's records: Map, or the records
// unchanged.
func (s *Server) mapped(r core.Records) core.Records {
	if s.Map == nil {
		return r
	}
	return s.Map(r)
}

// openStream runs records on a goroutine of its own and waits for it.
// The HTTP client's calls go deep, and a goroutine keeps the largest stack
// it ever needed for as long as it lives; the handler's goroutine, which
// then waits on the stream for as long as it is open, stays shallow. At
// 1,000 open idle streams this is 19 MB of stacks against 12 MB
// (BENCHMARKS.md). A panic is raised again on the handler's goroutine, as
// if the call had run there.
func (s *Server) openStream(ctx context.Context, call core.Call) (records core.Records, err error) {
	var panicked any
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		defer func() { panicked = recover() }()
		records, err = s.Agent.Stream(ctx, call)
	}()
	<-opened
	if panicked != nil {
		panic(panicked)
	}
	return records, err
}

// fail answers a call that failed before its first byte.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, c *call, err error) {
	err = explain(s.calls, r.Context(), err)
	f := c.failed(failureOf(err), err)
	c.status = f.status
	if f.outcome == metrics.CallerLeft {
		return // nobody is listening
	}
	writeError(w, f)
}

// log writes the call's one log line and records its metrics. Bodies are
// never logged.
func (s *Server) log(r *http.Request, c *call) {
	s.Metrics.Call(metrics.Call{
		Method: c.entry, Route: c.route, Outcome: c.outcome, Phase: c.phase, Duration: time.Since(c.start), FirstLine: c.first,
		Records: c.records, Bytes: c.bytes, Retries: c.notes.Retries, Stream: c.route == config.RouteStream,
	})
	level := zap.InfoLevel
	if c.status >= 500 || (c.outcome != metrics.OK && c.status == http.StatusOK) {
		level = zap.WarnLevel
	}
	ce := s.Logger.Check(level, "call")
	if ce == nil {
		return
	}
	fields := []zap.Field{
		zap.String("class_method", c.method),
		zap.String("route", c.route),
		zap.Int("status", c.status),
		zap.String("reply", c.notes.Reply),
		zap.Int("records", c.records),
		zap.Int64("bytes", c.bytes),
		zap.Duration("duration", time.Since(c.start)),
		zap.String("outcome", string(c.outcome)),
	}
	if c.phase != "" {
		fields = append(fields, zap.String("phase", c.phase))
	}
	if c.reason != "" {
		fields = append(fields, zap.String("reason", c.reason))
	}
	if c.notes.Retries > 0 {
		fields = append(fields, zap.Int("retries", c.notes.Retries))
	}
	if id := r.Header.Get("X-Request-Id"); id != "" {
		fields = append(fields, zap.String("request_id", clip(id)))
	}
	fields = append(fields, traceFields(r.Header, s.Project)...)
	if c.err != nil {
		fields = append(fields, zap.String("error", c.err.Error()))
	}
	ce.Write(fields...)
}

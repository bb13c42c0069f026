package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/hostcheck"
	"github.com/sidecar-dev/sidecar/quota"
	"github.com/sidecar-dev/sidecar/upstream"
)

// Server serves front doors in front of one agent. Fill its fields, then
// serve HandlerFor each door.
type Server struct {
	// Config is the method map.
	Config *config.Config
	// Agent answers the calls.
	Agent core.Agent
	// Talker opens the agent's side of the conversations whose bidi method
	// names a handler (the ADK preset's bidi_stream_query). If nil, such a
	// conversation is refused as a call of a handler method is without
	// its handlers (core.ErrNoHandler).
	Talker Talker
	// Prober reports the agent's readiness. If nil, the agent is taken to
	// be ready and /healthz reports only the sidecar.
	Prober Prober
	// Store is the shared state's store (state.store: redis), whose
	// reachability /healthz reports. If nil, /healthz says nothing of it.
	Store Store
	// Auth verifies the bearer tokens of the doors the auth section
	// protects (admit); nil: no door checks tokens.
	Auth *auth.Verifier
	// Quota counts each caller's calls against limits.per_caller
	// (admit); nil: no per-caller limit.
	Quota *quota.Limiter
	// ReadyWait is how long a call waits for an agent that is not ready
	// before it is answered 503. Zero means it does not wait.
	ReadyWait time.Duration
	// Logger gets one line per call. If nil, nothing is logged.
	Logger *zap.Logger
	// Metrics records every call. If nil, nothing is recorded.
	Metrics *metrics.Metrics
	// Protocols are the protocols a call's log line and metrics may name:
	// the registered doors' (proxy/doors.Names). A door naming none of
	// them is "other" (ProtocolOf): the set is closed, a metrics label.
	Protocols []string
	// Project is the Google Cloud project ($GOOGLE_CLOUD_PROJECT), for the
	// trace field of log lines. Empty: the bare trace id is logged.
	Project string
	// Tracer records a SERVER span for every call, continuing the
	// caller's trace context; the agent's requests are its children. If
	// nil, no span is recorded (the agent still gets the caller's trace
	// headers).
	Tracer trace.Tracer

	setupOnce sync.Once
	draining  atomic.Bool
	inFlight  atomic.Int64
	// peak is the most calls in flight since the last collect, and
	// collecting is set while a collect runs.
	peak       atomic.Int64
	collecting atomic.Bool
	// notReady is the readiness detail last logged.
	notReady atomic.Pointer[string]
	// slots are the concurrency slots (Concurrency) and their queue.
	slots *slots
	// calls ends with ErrShuttingDown when EndCalls is called.
	calls    context.Context
	endCalls context.CancelCauseFunc
	// live are the calls in flight (callContext), linked through their
	// prev and next; ended is EndCalls' cause once it was called.
	liveMu sync.Mutex
	live   *call
	ended  error
	// talks are the conversations (converse.go).
	talks conversations
	// storeHealth is the store's last ping, shared by /healthz's probes.
	storeHealth storeHealth
}

// Store is the state store as /healthz sees it (state.Redis is one).
type Store interface {
	// Ping checks that the store answers, within ctx.
	Ping(ctx context.Context) error
}

// storeHealthWait bounds /healthz's ping of the store: under a platform
// probe's own timeout (Cloud Run's default is 1 s), so that a store that
// does not answer reads "unreachable" rather than failing the probe.
const storeHealthWait = 800 * time.Millisecond

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

// WaitIdle waits until deadline at most for the calls in flight to end. It
// reports whether they did.
func (s *Server) WaitIdle(deadline time.Time) bool {
	for s.InFlight() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// EndCalls ends every call still in flight: a stream gets a final
// "shutting_down" error line, a call not yet answered a 503, a
// conversation a 1001 close on both sides. The agent's
// requests are cancelled.
func (s *Server) EndCalls() {
	s.endCalls(ErrShuttingDown)
	s.talks.endAll() // each closed with 1001
	s.liveMu.Lock()
	s.ended = ErrShuttingDown
	var live []*call
	for c := s.live; c != nil; c = c.next {
		live = append(live, c)
	}
	s.liveMu.Unlock()
	for _, c := range live {
		c.end.EndCall(ErrShuttingDown)
	}
}

// HandlerFor is door's public surface, its calls served here: every door
// of one Server shares its in-flight count, concurrency slots and queue,
// readiness, drain, log line and metrics, each call, and each request
// the door refuses itself, labelled with its door's protocol (ProtocolOf,
// one of Protocols). Serve each door on a listener of its own.
//
// Every request first passes the guard every door shares (hostcheck):
// on a loopback connection a Host that is not a loopback name (any port)
// nor one of Config.TrustedHosts, and a state-changing request with
// another site's Origin, are refused 403 in the door's shape before the
// door routes them (health probes included: a probe on loopback sends a
// loopback Host). On a route where the door takes only JSON (guard.go),
// a call whose body is not declared JSON is refused 415 before it is
// read.
func (s *Server) HandlerFor(door Door) http.Handler {
	s.setupOnce.Do(s.setup)
	protocol := ProtocolOf(door, s.Protocols)
	refuse := s.refuser(door, protocol)
	h := door.Handler(func(route string, stream bool) http.Handler {
		if c, ok := door.(Conversing); ok && c.Converses(route) {
			return s.converse(door, c, protocol, route, refuse)
		}
		call := s.handle(door, protocol, route, stream)
		if jsonOnly(door, route) {
			return jsonBody(route, refuse, call)
		}
		return call
	}, http.HandlerFunc(s.ServeHealth), refuse)
	guard := s.guardOf(door)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := guard.Check(r); !ok {
			refuse(w, r, "", f) // before routing: no route of the door's
			return
		}
		r, release, ok := s.admit(w, r, door, protocol, refuse)
		if !ok {
			return
		}
		if hostcheck.Upgrade(r) {
			// A conversation holds the caller's place until it ends,
			// past its handler's return (converse.go).
			h := &handoff{release: release}
			r = r.WithContext(context.WithValue(r.Context(), handoffKey{}, h))
			defer h.end()
		} else {
			defer release()
		}
		h.ServeHTTP(w, r)
	})
}

// setup readies the server for its first handler.
func (s *Server) setup() {
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
	s.slots = newSlots(Concurrency(s.Config), s.Config.Limits.Queue)
	s.talks.client = agentClient(s.Config.Upstream)
	s.talks.headers = upstream.NewHeaders(s.Config)
	s.Metrics.Gauge("sidecar_live_connections", "Conversations open (bidi methods).", func() float64 { return float64(s.talks.liveCount()) })
}

// Ready reports whether calls are being taken: the agent is ready (or
// there is no Prober) and the sidecar is not draining. It is what
// ServeHealth answers, for a door whose health route has its own shape.
func (s *Server) Ready() bool {
	if s.draining.Load() {
		return false
	}
	if s.Prober == nil {
		return true
	}
	ok, detail := s.Prober.Status()
	s.logReadiness(ok, detail)
	return ok
}

// ServeHealth answers the Door's health routes (/healthz): 200 while the agent is ready, 503 while it is
// not or the sidecar drains. With a Store, its reachability is one more
// field ("store": "ok" or "unreachable") that never changes the status;
// the store is pinged at most once a second however many probes come
// (storeHealth). Why the agent is not ready (a dial error can
// name its socket) is not said on the public port: it is logged, and
// ServeHealthDetail says it.
func (s *Server) ServeHealth(w http.ResponseWriter, r *http.Request) { s.serveHealth(w, r, false) }

// ServeHealthDetail answers as ServeHealth does, with why the agent is not
// ready: for the private admin listener.
func (s *Server) ServeHealthDetail(w http.ResponseWriter, r *http.Request) { s.serveHealth(w, r, true) }

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request, full bool) {
	type health struct {
		Status string `json:"status"`
		Agent  string `json:"agent,omitempty"`
		Detail string `json:"detail,omitempty"`
		// Store is the state store's reachability, "ok" or
		// "unreachable", with state.store: redis; StoreDetail, why,
		// on the admin listener only.
		Store       string `json:"store,omitempty"`
		StoreDetail string `json:"store_detail,omitempty"`
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
	if s.Store != nil {
		// A store outage does not fail the probe: the stateless doors
		// still serve, and a platform that restarts the container for
		// it would take them down too (docs/operations.md).
		err := s.storeHealth.check(r.Context(), s.Store)
		h.Store = "ok"
		if err != nil {
			h.Store = "unreachable"
			if full {
				h.StoreDetail = err.Error()
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(h)
}

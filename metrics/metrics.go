// Package metrics owns the sidecar's Prometheus metrics. They are served on
// the admin listener only, never on the public port (every container path
// is reachable by anyone with query permission on the engine).
package metrics

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the sidecar's counters, histograms and gauges. A nil
// *Metrics records nothing.
type Metrics struct {
	registry   *prometheus.Registry
	calls      *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	firstLine  *prometheus.HistogramVec
	records    *prometheus.CounterVec
	bytes      *prometheus.CounterVec
	retries    *prometheus.CounterVec
	streamEnds *prometheus.CounterVec
	timeouts   *prometheus.CounterVec
	restarts   prometheus.Counter
	protocols  *prometheus.CounterVec
	frames     *prometheus.CounterVec

	// series are the label lookups of Call resolved once per set of
	// labels (a closed set: method map entries, routes, outcomes,
	// protocols), read without a lock; a new set is added under mu.
	series atomic.Pointer[map[seriesKey]*series]
	mu     sync.Mutex
}

// seriesKey is the labels of the series one finished call adds to.
type seriesKey struct {
	method, route, protocol string
	outcome                 Outcome
	stream                  bool
}

// series are the counters and histograms one seriesKey's calls add to.
type series struct {
	calls, protocol, bytes prometheus.Counter // protocol nil: none named
	duration               prometheus.Observer
	// A stream's:
	records, streamEnds prometheus.Counter
	firstLine           prometheus.Observer
}

// Outcome is who ended a call. It is a label value, so it comes from this
// fixed set only: never an agent's own error code, which would add a
// series per code.
type Outcome string

// The outcomes of a call.
const (
	OK                Outcome = "ok"                 // the call was answered in full
	CallerLeft        Outcome = "caller_left"        // the caller disconnected
	Timeout           Outcome = "timeout"            // a clock ran out (Call.Phase says which)
	AgentError        Outcome = "agent_error"        // the agent answered an error, or a reply the sidecar cannot pass on
	AgentDisconnected Outcome = "agent_disconnected" // the agent closed the connection before its reply was complete
	NotReady          Outcome = "not_ready"          // the agent was not ready within ready.wait
	Busy              Outcome = "busy"               // every concurrency slot was taken
	ShuttingDown      Outcome = "shutting_down"      // the sidecar was draining
	BadRequest        Outcome = "bad_request"        // the caller's request was refused
	Unauthorized      Outcome = "unauthorized"       // the caller's token was missing, invalid or short of a scope (auth)
	RateLimited       Outcome = "rate_limited"       // the caller was over limits.per_caller
)

// Call is one finished call, as the proxy saw it.
type Call struct {
	// Method is the method map entry that served it ("*" for passthrough,
	// "" when no entry matched): a bounded label, unlike the called name.
	Method    string
	Route     string
	Outcome   Outcome
	Phase     string // for a Timeout: connect, first_byte, idle or total
	Duration  time.Duration
	FirstLine time.Duration // zero when no line went out
	Records   int
	Bytes     int64
	Retries   int
	Stream    bool
	// Protocol is the front door's protocol (proxy.ProtocolOf: a
	// registered door's, or other; a closed set).
	Protocol string
}

// New registers the sidecar's metrics, plus the Go runtime and process
// collectors, on a registry of its own. protocols are the registered
// doors' names (proxy/doors.Names), which the protocol label's help lists.
func New(protocols ...string) *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900}
	m := &Metrics{
		registry: r,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_calls_total", Help: "Calls served, by method map entry, route and outcome (who ended the call).",
		}, []string{"class_method", "route", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sidecar_call_duration_seconds", Help: "Time from request to the call's end.", Buckets: buckets,
		}, []string{"class_method", "route"}),
		firstLine: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sidecar_time_to_first_line_seconds", Help: "Time from request to a stream's first line.", Buckets: buckets,
		}, []string{"class_method"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_records_total", Help: "Records streamed to callers.",
		}, []string{"class_method"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_response_bytes_total", Help: "Response body bytes written to callers.",
		}, []string{"class_method", "route"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_retries_total", Help: "Requests to the agent retried (refused connections, idempotent 429/503).",
		}, []string{"class_method"}),
		streamEnds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_stream_ends_total", Help: "Streams ended, by reason (the call's outcome): ok, caller_left, timeout, agent_error, agent_disconnected, shutting_down, ….",
		}, []string{"reason"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_timeouts_total", Help: "Calls ended by a timeout, by method map entry, route and phase: connect, first_byte, idle, total.",
		}, []string{"class_method", "route", "phase"}),
		protocols: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_protocol_calls_total", Help: "Calls served, by front door protocol (" + strings.Join(append(slices.Clip(protocols), "other"), ", ") + ") and outcome.",
		}, []string{"protocol", "outcome"}),
		frames: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_live_frames_total", Help: "Frames relayed in conversations (bidi methods), by method map entry and direction: in (caller to agent), out (agent to caller).",
		}, []string{"class_method", "direction"}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sidecar_agent_restarts_total", Help: "Times a started agent was restarted after it failed.",
		}),
	}
	r.MustRegister(m.calls, m.duration, m.firstLine, m.records, m.bytes, m.retries, m.streamEnds, m.timeouts, m.restarts, m.protocols, m.frames)
	return m
}

// Call records a finished call.
func (m *Metrics) Call(c Call) {
	if m == nil {
		return
	}
	s := m.seriesOf(seriesKey{method: c.Method, route: c.Route, protocol: c.Protocol, outcome: c.Outcome, stream: c.Stream})
	s.calls.Inc()
	if s.protocol != nil {
		s.protocol.Inc()
	}
	if c.Outcome == Timeout { // rare: looked up each time
		m.timeouts.WithLabelValues(c.Method, c.Route, c.Phase).Inc()
	}
	s.duration.Observe(c.Duration.Seconds())
	s.bytes.Add(float64(c.Bytes))
	if c.Retries > 0 {
		m.retries.WithLabelValues(c.Method).Add(float64(c.Retries))
	}
	if c.Stream {
		s.records.Add(float64(c.Records))
		if c.FirstLine > 0 {
			s.firstLine.Observe(c.FirstLine.Seconds())
		}
		s.streamEnds.Inc()
	}
}

// seriesOf is k's series, resolved the first time a call has k's labels.
func (m *Metrics) seriesOf(k seriesKey) *series {
	if known := m.series.Load(); known != nil {
		if s, ok := (*known)[k]; ok {
			return s
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	known := m.series.Load()
	if known != nil {
		if s, ok := (*known)[k]; ok {
			return s
		}
	}
	outcome := string(k.outcome)
	s := &series{
		calls:    m.calls.WithLabelValues(k.method, k.route, outcome),
		duration: m.duration.WithLabelValues(k.method, k.route),
		bytes:    m.bytes.WithLabelValues(k.method, k.route),
	}
	if k.protocol != "" {
		s.protocol = m.protocols.WithLabelValues(k.protocol, outcome)
	}
	if k.stream {
		s.records = m.records.WithLabelValues(k.method)
		s.firstLine = m.firstLine.WithLabelValues(k.method)
		s.streamEnds = m.streamEnds.WithLabelValues(outcome)
	}
	// Copied on write: readers never lock, and there are only as many
	// sets of labels as the method map and the doors make.
	next := make(map[seriesKey]*series, 1)
	if known != nil {
		next = make(map[seriesKey]*series, len(*known)+1)
		maps.Copy(next, *known)
	}
	next[k] = s
	m.series.Store(&next)
	return s
}

// Frames counts the frames of a finished conversation of method: in,
// caller to agent; out, agent to caller.
func (m *Metrics) Frames(method string, in, out int64) {
	if m != nil {
		m.frames.WithLabelValues(method, "in").Add(float64(in))
		m.frames.WithLabelValues(method, "out").Add(float64(out))
	}
}

// AgentRestarted counts a restart of the agent process.
func (m *Metrics) AgentRestarted() {
	if m != nil {
		m.restarts.Inc()
	}
}

// Gauge registers a gauge read from f at every scrape (in-flight calls,
// agent readiness).
func (m *Metrics) Gauge(name, help string, f func() float64) {
	if m != nil {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

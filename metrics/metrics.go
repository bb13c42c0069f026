// Package metrics owns the sidecar's Prometheus metrics. They are served on
// the admin listener only, never on the public port (every container path
// is reachable by anyone with query permission on the engine).
package metrics

import (
	"net/http"
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
	restarts   prometheus.Counter
}

// Call is one finished call, as the proxy saw it.
type Call struct {
	// Method is the method map entry that served it ("*" for passthrough,
	// "" when no entry matched): a bounded label, unlike the called name.
	Method    string
	Route     string
	Outcome   string // "ok" or the error code
	Duration  time.Duration
	FirstLine time.Duration // zero when no line went out
	Records   int
	Bytes     int64
	Retries   int
	Stream    bool
}

// New registers the sidecar's metrics, plus the Go runtime and process
// collectors, on a registry of its own.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900}
	m := &Metrics{
		registry: r,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_calls_total", Help: "Calls served, by method map entry, route and outcome (ok or the error code).",
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
			Name: "sidecar_stream_ends_total", Help: "Streams ended, by reason: ok, client_gone, timeout, agent_disconnected, agent_error, shutting_down, …",
		}, []string{"reason"}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sidecar_agent_restarts_total", Help: "Times a started agent was restarted after it failed.",
		}),
	}
	r.MustRegister(m.calls, m.duration, m.firstLine, m.records, m.bytes, m.retries, m.streamEnds, m.restarts)
	return m
}

// Call records a finished call.
func (m *Metrics) Call(c Call) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(c.Method, c.Route, c.Outcome).Inc()
	m.duration.WithLabelValues(c.Method, c.Route).Observe(c.Duration.Seconds())
	m.bytes.WithLabelValues(c.Method, c.Route).Add(float64(c.Bytes))
	if c.Retries > 0 {
		m.retries.WithLabelValues(c.Method).Add(float64(c.Retries))
	}
	if c.Stream {
		m.records.WithLabelValues(c.Method).Add(float64(c.Records))
		if c.FirstLine > 0 {
			m.firstLine.WithLabelValues(c.Method).Observe(c.FirstLine.Seconds())
		}
		m.streamEnds.WithLabelValues(c.Outcome).Inc()
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

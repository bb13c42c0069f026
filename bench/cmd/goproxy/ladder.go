package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/upstream"
)

// The floor ladder (-mode ladder -rung NAME): go-raw, then one thing the
// sidecar does per unary call added at each rung, cumulatively, each in
// the sidecar's own way (the project's packages where they are
// exported), up to the sidecar's own handler. Every rung takes the
// platform's request (POST /api/reasoning_engine with the envelope) and
// calls the agent's POST /query, as the benchmark's sidecar does.
// bench/cmd/load's floor row measures their CPU per call side by side,
// BenchmarkFloorLadder their allocations (BENCHMARKS.md).
//
//	go-raw         net/http's server and the hand-written client of raw.go
//	log            + the call's log line: zap, JSON, as cmd/sidecar's newLogger
//	               makes it (stderr, info), with the sidecar's fields
//	metrics        + the call recorded in package metrics (metrics.Call)
//	mux            + gorilla/mux: the platform door's own router (platform.Door.Handler)
//	envelope       + the envelope decoded and the method looked up (platform.Door.Open),
//	               the agent's input sent, its reply read whole and answered
//	               {"output": …} (platform.Door.WriteOutput)
//	retryablehttp  + the agent's request as an *http.Request through
//	               go-retryablehttp and http.Client, the hand-written client
//	               as their RoundTripper
//	peek           + the liveness peek on a pooled connection before reuse,
//	               as upstream's pool does
//	readresponse   + the reply's head read by net/http's ReadResponse, as
//	               upstream's transport does, in place of the hand parser
//	upstream       the ladder's client replaced by the sidecar's, upstream.Client
//	               (its request building, clocks, contexts, net/http's ReadResponse)
//	server         the sidecar's handler: proxy.Server with the platform door,
//	               upstream.Client, the log line and metrics (call context,
//	               concurrency slot, write bounds, Server-Timing, dialect stage)
//
// Above that is the sidecar binary itself (load's floor row runs it with
// metrics on). One more rung is off the ladder, a proposal measured:
//
//	server-buflog  server, its log lines written through zap's
//	               BufferedWriteSyncer (256 KiB, flushed every second):
//	               one write(2) per many lines, but lines still in the
//	               buffer are lost if the process dies
var rungs = []string{"go-raw", "log", "metrics", "mux", "envelope", "retryablehttp", "peek", "readresponse", "upstream", "server", "server-buflog"}

const (
	rungLog = iota + 1
	rungMetrics
	rungMux
	rungEnvelope
	rungRetry
	rungPeek
	rungReadResponse
	rungUpstream
	rungServer
	rungServerBuffered
)

func rungOf(name string) (int, error) {
	for i, r := range rungs {
		if r == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("-rung %q: want one of %v", name, rungs)
}

// ladderConfig is the method map of bench/cmd/load's sidecar.
func ladderConfig(agentAddr string) (*config.Config, error) {
	return config.Parse("ladder.yaml", fmt.Appendf(nil, `upstream:
  url: http://%s
limits: {concurrency: 10000}
methods:
  query:        {call: POST /query}
  stream_query: {mode: stream, call: POST /stream}
`, agentAddr))
}

// ladderLogger is cmd/sidecar's newLogger at info level (the same
// encoder settings; Cloud Logging's severity names) writing to w.
func ladderLogger(w zapcore.WriteSyncer) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey, enc.MessageKey, enc.LevelKey = "time", "message", "severity"
	enc.EncodeLevel = func(l zapcore.Level, enc zapcore.PrimitiveArrayEncoder) {
		if l == zapcore.InfoLevel {
			enc.AppendString("INFO")
			return
		}
		enc.AppendString(l.CapitalString())
	}
	enc.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	enc.EncodeDuration = zapcore.MillisDurationEncoder
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), w, zapcore.InfoLevel))
}

// newLadder is the handler of one rung, in front of the agent at
// agentAddr, logging to logOut. stop ends what the rung started (the
// buffered log's flusher, which it flushes).
func newLadder(rung int, agentAddr string, logOut io.Writer) (h http.Handler, stop func(), err error) {
	cfg, err := ladderConfig(agentAddr)
	if err != nil {
		return nil, nil, err
	}
	stop = func() {}
	var logger *zap.Logger
	if rung == rungServerBuffered {
		ws := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(logOut), Size: 256 << 10, FlushInterval: time.Second}
		logger, stop = ladderLogger(ws), func() { ws.Stop() }
	} else {
		logger = ladderLogger(zapcore.Lock(zapcore.AddSync(logOut)))
	}
	m := metrics.New(doors.Names(doors.All)...)
	if rung >= rungServer {
		client, err := upstream.New(cfg, logger)
		if err != nil {
			return nil, nil, err
		}
		s := &proxy.Server{Config: cfg, Logger: logger, Metrics: m, Protocols: doors.Names(doors.All),
			Agent: dialect.Agent{Agent: core.Mux{Plain: client}, MaxReply: cfg.Limits.ReplyBytes, MaxRecord: cfg.Limits.RecordBytes}}
		return s.HandlerFor(platform.Door{}), stop, nil
	}
	l := &ladder{rung: rung, cfg: cfg, raw: newRaw(agentAddr)}
	l.raw.path = "/query"
	if rung >= rungLog {
		l.logger = logger
	}
	if rung >= rungMetrics {
		l.metrics = m
	}
	if rung >= rungRetry {
		rt := &rawRT{raw: l.raw, peek: rung >= rungPeek, readResponse: rung >= rungReadResponse}
		l.retrying = &retryablehttp.Client{
			HTTPClient: &http.Client{
				Transport:     rt,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			},
			RetryWaitMin: 20 * time.Millisecond,
			RetryWaitMax: 500 * time.Millisecond,
			RetryMax:     3,
			CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
				if ctx.Err() != nil {
					return false, context.Cause(ctx)
				}
				var op *net.OpError
				return resp == nil && errors.As(err, &op) && op.Op == "dial", nil
			},
			Backoff:      retryablehttp.DefaultBackoff,
			ErrorHandler: retryablehttp.PassthroughErrorHandler,
			PrepareRetry: func(req *http.Request) error {
				if b, ok := req.Body.(*reqBody); ok {
					b.Reset(b.b)
				}
				return nil
			},
		}
	}
	if rung >= rungUpstream {
		if l.client, err = upstream.New(cfg, logger); err != nil {
			return nil, nil, err
		}
	}
	if rung < rungMux {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serve(w, r, core.RouteUnary) }), stop, nil
	}
	return platform.Door{}.Handler(func(route string, _ bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serve(w, r, route) })
	}, http.NotFoundHandler(), refuse), stop, nil
}

// refuse is the ladder's core.Refuse: the benchmark's calls are never
// refused, so no log line or metrics for a refusal.
func refuse(w http.ResponseWriter, _ *http.Request, _ string, err error) {
	http.Error(w, err.Error(), http.StatusNotFound)
}

// ladder is one rung below the sidecar's own handler.
type ladder struct {
	rung     int
	cfg      *config.Config
	raw      *raw
	logger   *zap.Logger           // nil below rungLog
	metrics  *metrics.Metrics      // nil below rungMetrics
	retrying *retryablehttp.Client // nil below rungRetry
	client   *upstream.Client      // nil below rungUpstream
}

func (l *ladder) serve(w http.ResponseWriter, r *http.Request, route string) {
	start := time.Now()
	var status int
	var written int64
	if l.rung < rungEnvelope {
		status, written = l.raw.serve(w, r)
	} else {
		status, written = l.call(w, r, route)
	}
	outcome := metrics.OK
	if status != http.StatusOK {
		outcome = metrics.AgentError
	}
	l.metrics.Call(metrics.Call{Method: "query", Route: route, Outcome: outcome, Duration: time.Since(start), Records: 1,
		Bytes: written, Protocol: platform.Name})
	if l.logger == nil {
		return
	}
	if ce := l.logger.Check(zap.InfoLevel, "call"); ce != nil {
		// The sidecar's fields for a unary call that ended ok.
		ce.Write(
			zap.String("class_method", "query"),
			zap.String("protocol", platform.Name),
			zap.String("route", route),
			zap.Int("status", status),
			zap.String("reply", "json"),
			zap.Int("records", 1),
			zap.Int64("bytes", written),
			zap.Duration("duration", time.Since(start)),
			zap.String("outcome", string(outcome)),
		)
	}
}

// call is the rungs from envelope up: the request read at its length and
// opened by the platform door, the method's input sent to the agent, its
// reply read whole and answered {"output": …}.
func (l *ladder) call(w http.ResponseWriter, r *http.Request, route string) (int, int64) {
	body := make([]byte, max(r.ContentLength, 0))
	if _, err := io.ReadFull(r.Body, body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest, 0
	}
	r.Body.Close()
	ex, err := platform.Door{}.Open(l.cfg, route, r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest, 0
	}
	var out []byte
	switch {
	case l.client != nil:
		var notes core.Notes
		ex.Call.Notes = &notes
		out, err = l.client.Unary(r.Context(), ex.Call)
	case l.retrying != nil:
		out, err = l.viaRetrying(r.Context(), ex.Call.Input.Raw)
	default:
		out, err = l.direct(ex.Call.Input.Raw)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return http.StatusBadGateway, 0
	}
	n, _ := platform.Door{}.WriteOutput(w, out)
	return http.StatusOK, int64(n)
}

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/adk"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/supervise"
	"github.com/sidecar-dev/sidecar/upstream"
)

// agentIO is what a started agent inherits from the sidecar.
type agentIO struct {
	env            []string // the sidecar's environment
	stdout, stderr io.Writer
}

// serve runs the sidecar on ln until ctx ends or a started agent exits
// for good, then shuts down within cfg.Shutdown.Budget(): /healthz turns
// 503, calls in flight get the drain to finish, what is left is ended with
// a shutting_down error and its connection closed, and only then is the
// agent stopped.
func serve(ctx context.Context, cfg *config.Config, ln net.Listener, logger *zap.Logger, aio agentIO, lim serverLimits) error {
	client, err := upstream.New(cfg, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer client.Close()
	prober := upstream.NewProber(cfg, client)
	var m *metrics.Metrics
	if cfg.Admin.Listen != "" {
		m = metrics.New()
	}
	// The one Agent: methods that name a handler go to the ADK app, the
	// rest to the agent over HTTP.
	calls := core.Mux{Plain: client}
	if cfg.ADK.App != "" {
		app := &adk.App{Client: client, Name: cfg.ADK.App, Limits: cfg.Limits, SnakeKeys: cfg.ADK.Keys == "snake"}
		calls.Handlers, prober.Check = app.Agent(), app.Ready
	}
	s := &proxy.Server{Config: cfg, Door: platform.Door{}, Agent: calls, Prober: prober, ReadyWait: cfg.Upstream.Ready.Wait, Logger: logger,
		Metrics: m, Project: envValue(aio.env, "GOOGLE_CLOUD_PROJECT")}
	srv := newHTTPServer(cfg, s.Handler(), logger, lim)

	var wg sync.WaitGroup
	defer wg.Wait()
	probeCtx, stopProbe := context.WithCancel(context.WithoutCancel(ctx))
	defer stopProbe()
	wg.Go(func() { prober.Run(probeCtx) })

	var agent *supervise.Supervisor
	var agentDone <-chan struct{} // nil without a command: never ready
	// stopAgent ends the agent's whole process group (SIGTERM, SIGKILL
	// after the grace) and waits for it until deadline at most.
	stopAgent := func(deadline time.Time) {
		if agent == nil {
			return
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		if err := agent.Stop(ctx, cfg.Shutdown.AgentGrace); err != nil {
			logger.Error("agent not reaped within the shutdown budget", zap.Error(err))
		}
	}
	agentBudget := func() time.Time {
		return time.Now().Add(cfg.Shutdown.AgentGrace + config.ShutdownMargin)
	}
	if len(cfg.Upstream.Command) > 0 {
		agent, err = supervise.Start(supervise.Options{
			Command:     cfg.Upstream.Command,
			Env:         agentEnv(aio.env, cfg.Upstream),
			Stdout:      aio.stdout,
			Stderr:      aio.stderr,
			Restart:     supervise.Policy(cfg.Upstream.Restart.Policy),
			MaxRestarts: cfg.Upstream.Restart.Max,
			Backoff:     cfg.Upstream.Restart.Backoff,
			ReapOrphans: true,
			Logger:      logger,
		})
		if err != nil {
			ln.Close()
			// 127, as a shell answers a command it cannot run.
			return &exitError{code: 127, msg: "sidecar: starting the agent: " + err.Error()}
		}
		agentDone = agent.Done()
		watched := make(chan struct{})
		go func() { defer close(watched); watchAgent(agent, prober, m) }()
		// watchAgent ends with the agent's events; an agent that a
		// failed Stop left running is not waited for.
		defer func() {
			select {
			case <-agentDone:
				<-watched
			default:
			}
		}()
	}

	if cfg.Admin.Listen != "" {
		stopAdmin, err := serveAdmin(cfg.Admin.Listen, ln.Addr(), m, s, logger)
		if err != nil {
			ln.Close()
			stopAgent(agentBudget())
			return err
		}
		defer stopAdmin()
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("listening", zap.String("addr", ln.Addr().String()),
		zap.String("upstream", cfg.Upstream.URL), zap.Int("methods", len(cfg.Methods)), zap.String("version", version))

	agentExited := false
	select {
	case err := <-errc:
		stopAgent(agentBudget())
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
		logger.Info("draining", zap.String("reason", "signal"), zap.String("signal", context.Cause(ctx).Error()),
			zap.Duration("drain", cfg.Shutdown.Drain), zap.Duration("budget", cfg.Shutdown.Budget()))
	case <-agentDone:
		agentExited = true
		logger.Info("draining", zap.String("reason", "agent exited"), zap.Int("exit_code", agent.ExitCode()),
			zap.Duration("drain", cfg.Shutdown.Drain), zap.Duration("budget", cfg.Shutdown.Budget()))
	}

	// One budget for the whole shutdown, whatever callers and the agent
	// do: nothing below waits past its own share of it.
	begun := time.Now()
	drained := drain(srv, s, errc, begun.Add(cfg.Shutdown.Drain))
	stopAgent(begun.Add(cfg.Shutdown.Budget()))
	// Calls whose connections were closed unwind meanwhile; give them
	// what is left, so the process exits with its handlers done.
	waitIdle(s, begun.Add(cfg.Shutdown.Budget()))
	logger.Info("stopped", zap.Bool("drained", drained), zap.Duration("duration", time.Since(begun)))
	switch {
	case agentExited && agent.ExitCode() != 0:
		return &exitError{code: agent.ExitCode()}
	case !drained:
		return &exitError{code: 1, msg: "sidecar: the drain budget ran out; calls still in flight were ended"}
	}
	return nil
}

// serverLimits are the public server's fixed limits.
type serverLimits struct {
	// requestTime is how long a caller has to send its request, head and
	// body, not counting the waits for a slot and for the agent.
	requestTime time.Duration
	// idleTime is how long a caller's connection may stay open between
	// requests; maxIdle is how many may be idle at once.
	idleTime time.Duration
	maxIdle  int
	// answerTime is kept for writing an answer once a call's waits are
	// over.
	answerTime time.Duration
}

var defaultServerLimits = serverLimits{
	requestTime: 60 * time.Second,
	// Longer than the 600s Google's load balancers keep a connection to a
	// backend idle, so the sidecar never closes one they are about to use.
	idleTime:   620 * time.Second,
	maxIdle:    1000,
	answerTime: 5 * time.Second,
}

// newHTTPServer is the public server. Its read and write deadlines cover
// a call until its request is read and it has a slot and a ready agent,
// when the call clears them (streams run for minutes): so they include
// the longest waits the config allows, limits.queue_timeout and
// ready.wait, and the queue's 503 always reaches the caller.
func newHTTPServer(cfg *config.Config, h http.Handler, logger *zap.Logger, lim serverLimits) *http.Server {
	deadline := lim.requestTime + cfg.Limits.QueueTimeout + cfg.Upstream.Ready.Wait + lim.answerTime
	idle := &idleConns{max: lim.maxIdle, since: map[net.Conn]time.Time{}}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.Limits.HeaderTimeout,
		ReadTimeout:       deadline,
		WriteTimeout:      deadline,
		IdleTimeout:       lim.idleTime,
		ConnState:         idle.track,
		MaxHeaderBytes:    cfg.Limits.HeaderBytes,
		ErrorLog:          zap.NewStdLog(logger.Named("http")),
	}
}

// idleConns bounds the caller connections idle between requests: each
// holds a goroutine and buffers, and a caller could open any number.
// Beyond max, the longest idle is closed.
type idleConns struct {
	max   int
	mu    sync.Mutex
	since map[net.Conn]time.Time
}

func (c *idleConns) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if state != http.StateIdle {
		delete(c.since, conn)
		return
	}
	c.since[conn] = time.Now()
	if len(c.since) <= c.max {
		return
	}
	var oldest net.Conn
	for k, t := range c.since {
		if oldest == nil || t.Before(c.since[oldest]) {
			oldest = k
		}
	}
	delete(c.since, oldest)
	oldest.Close()
}

// drain stops the server by end: it reports whether every call finished
// on its own. The listener stays open meanwhile, so /healthz can answer
// 503 and new calls a 503 with Retry-After. Calls still running in the
// drain's last stretch (endWindow) are ended with a shutting_down error;
// at end every connection still open is closed, whatever its call is
// doing: reading a body the caller sends slowly, writing to a caller
// that does not read, or ignoring its cancellation.
func drain(srv *http.Server, s *proxy.Server, served <-chan error, end time.Time) bool {
	s.Drain()
	drained := waitIdle(s, end.Add(-endWindow(time.Until(end))))
	if !drained {
		s.EndCalls()
		waitIdle(s, end)
	}
	// Shutdown closes the idle connections and waits for the others; a
	// connection that never sent a request counts as active for 5s, so
	// it gets a second at most.
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	ctx, cancelSecond := context.WithTimeout(ctx, time.Second)
	defer cancelSecond()
	if srv.Shutdown(ctx) != nil {
		srv.Close()
	}
	<-served
	return drained
}

// endWindow is the part of a drain of length d kept for ending the calls
// still running: time for their final lines and 503s to be written. A
// second, or a quarter of a drain shorter than 4s.
func endWindow(d time.Duration) time.Duration { return min(d/4, time.Second) }

// waitIdle waits until deadline at most for the calls in flight to end.
func waitIdle(s *proxy.Server, deadline time.Time) bool {
	for s.InFlight() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// watchAgent marks the agent down the moment its process exits, so calls
// get 503 without waiting for the next probe, and keeps it down until a
// new run starts: a probe answered meanwhile (begun before the exit, or
// by a process the run left behind) is not the agent's. (The supervisor
// logs the agent's lifecycle itself.)
func watchAgent(agent *supervise.Supervisor, prober *upstream.Prober, m *metrics.Metrics) {
	for ev := range agent.Events() {
		switch ev.Kind {
		case supervise.Started:
			prober.Resume()
		case supervise.Exited:
			prober.MarkDown(fmt.Sprintf("agent process exited with code %d", ev.ExitCode))
		case supervise.Restarting:
			m.AgentRestarted()
		}
	}
}

// agentEnv is a started agent's environment: the sidecar's own, with
// $PORT (which belongs to the sidecar: the platform's port) replaced by
// the agent's port for a TCP upstream, or removed and AGENT_SOCKET set for
// a Unix socket. SIDECAR_UPSTREAM_URL is the upstream URL either way.
func agentEnv(base []string, up config.Upstream) []string {
	env := make([]string, 0, len(base)+2)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PORT", "AGENT_SOCKET", "SIDECAR_UPSTREAM_URL":
			continue
		}
		env = append(env, kv)
	}
	if up.Network == "unix" {
		env = append(env, "AGENT_SOCKET="+up.Address)
	} else if _, port, err := net.SplitHostPort(up.Address); err == nil {
		env = append(env, "PORT="+port)
	}
	return append(env, "SIDECAR_UPSTREAM_URL="+up.URL)
}

// envValue is NAME's value in env ("NAME=value" entries), or "".
func envValue(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// serveAdmin serves /metrics and /healthz on the admin address, which must
// not be the public one. It returns the function that stops it.
func serveAdmin(addr string, public net.Addr, m *metrics.Metrics, s *proxy.Server, logger *zap.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener on %s: %w", addr, err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		if p, ok := public.(*net.TCPAddr); ok && a.Port == p.Port {
			ln.Close()
			return nil, fmt.Errorf("admin.listen %s is the public port", addr)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", s.ServeHealthDetail)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	logger.Info("admin listening", zap.String("addr", ln.Addr().String()))
	return func() { srv.Close(); <-done }, nil
}

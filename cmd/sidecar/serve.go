package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/adk"
	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/dialect"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
	"github.com/sidecar-dev/sidecar/quota"
	"github.com/sidecar-dev/sidecar/supervise"
	"github.com/sidecar-dev/sidecar/tracing"
	"github.com/sidecar-dev/sidecar/upstream"
)

// serve runs the sidecar, the platform's contract on ln (nil when
// protocols.agent_platform is off) and every other protocol on its own
// listener (openDoors), until ctx ends or a started agent exits
// for good, then shuts down within cfg.Shutdown.Budget(): /healthz turns
// 503, calls in flight get the drain to finish, what is left is ended with
// a shutting_down error and its connection closed, and only then is the
// agent stopped.
func serve(ctx context.Context, cfg *config.Config, ln net.Listener, logger *zap.Logger, aio agentIO, lim serverLimits) error {
	spans, err := tracing.FromEnv(ctx, func(name string) string { return envValue(aio.env, name) }, logger)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return &exitError{code: 1, msg: "sidecar: " + err.Error()}
	}
	store, err := openStore(ctx, cfg, aio.env, logger)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return err
	}
	if store != nil {
		defer store.Close()
	}
	client, err := upstream.New(cfg, logger)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return err
	}
	defer client.Close()
	// A return before the shutdown below (which flushed them already)
	// still sends the spans of the calls served.
	defer func() { flushSpans(spans, time.Now().Add(config.ShutdownMargin), logger) }()
	if spans != nil {
		client.Trace(spans.Tracer())
		logger.Info("tracing", zap.String("endpoint", spans.Endpoint), zap.String("protocol", spans.Protocol))
	}
	prober := upstream.NewProber(cfg, client)
	var m *metrics.Metrics
	if cfg.Admin.Listen != "" {
		m = metrics.New(doors.Names(doors.All)...)
	}
	// The one Agent: methods that name a handler go to the ADK app, the
	// rest to the agent over HTTP. Readiness waits for the ADK api server
	// to list the app only when its handlers serve a method: adk.app may
	// only name the author of emit: adk events, in front of an agent that
	// has no /list-apps.
	calls := core.Mux{Plain: client}
	var talker proxy.Talker // the conversations of a handler's bidi method
	if cfg.ServesADK() {
		app := &adk.App{Client: client, Name: cfg.ADK.App, Limits: cfg.Limits, SnakeKeys: cfg.ADK.Keys == "snake"}
		calls.Handlers, prober.Check, talker = app.Agent(), app.Ready, app
	}
	// The mapping stage: a method that emits text or ADK events gets its
	// agent's dialect mapped; the rest pass through untouched.
	mapped := dialect.Agent{Agent: calls, Author: cfg.ADK.App, SnakeKeys: cfg.ADK.Keys == "snake", MaxReply: cfg.Limits.ReplyBytes,
		MaxRecord: cfg.Limits.RecordBytes, MaxQuestion: cfg.Limits.Questions.Bytes, Parts: cfg.Limits.Parts}
	s := &proxy.Server{Config: cfg, Agent: mapped, Talker: talker, Prober: prober, ReadyWait: cfg.Upstream.Ready.Wait, Logger: logger,
		Metrics: m, Protocols: doors.Names(doors.All), Project: envValue(aio.env, "GOOGLE_CLOUD_PROJECT"), Tracer: spans.Tracer()}
	if store != nil {
		s.Store = store
	}
	if cfg.Auth.Issuer != "" {
		s.Auth = auth.New(cfg.Auth, nil)
		logger.Info("auth", zap.String("issuer", cfg.Auth.Issuer), zap.String("audience", cfg.Auth.Audience), zap.Strings("doors", cfg.Auth.Doors))
	}
	if cfg.Limits.PerCaller.On() {
		var shared quota.Shared
		if store != nil {
			shared = quota.Redis{Store: store}
		}
		s.Quota = quota.New(cfg.Limits.PerCaller, shared)
	}
	served, err := openDoors(cfg, s, ln, aio.env, logger, lim)
	if err != nil {
		return err
	}
	// Before the store closes (deferred above), once the calls are over.
	defer stopDoors(served)
	warnPlatformVars(cfg, aio.env, logger)
	closeDoors := func() {
		for _, d := range served {
			d.ln.Close()
		}
	}

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
		if agent, err = superviseAgent(cfg.Upstream, aio, logger); err != nil {
			closeDoors()
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
		stopAdmin, err := serveAdmin(cfg.Admin.Listen, served[0].ln.Addr(), m, s, logger)
		if err != nil {
			closeDoors()
			stopAgent(agentBudget())
			return err
		}
		defer stopAdmin()
	}

	errc := make(chan error, len(served))
	srvs := make([]*http.Server, len(served))
	for i, d := range served {
		srvs[i] = d.srv
		go func() { errc <- d.srv.Serve(d.ln) }()
		logger.Info("listening", zap.String("protocol", d.protocol), zap.String("addr", d.ln.Addr().String()),
			zap.String("upstream", cfg.Upstream.URL), zap.Int("methods", len(cfg.Methods)), zap.String("version", version))
		if d.protocol != config.ProtocolAgentPlatform {
			continue
		}
		for _, m := range cfg.Mounted() {
			logger.Info("listening", zap.String("protocol", m.Name), zap.String("addr", d.ln.Addr().String()), zap.String("mount", m.Mount))
		}
	}

	agentExited := false
	select {
	case err := <-errc:
		for _, srv := range srvs {
			srv.Close()
		}
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
	drained := drain(srvs, s, errc, begun.Add(cfg.Shutdown.Drain))
	// The spans of the calls go out while the agent stops, once the
	// calls are over (their spans ended), within what is left of the budget.
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		s.WaitIdle(begun.Add(cfg.Shutdown.Budget()))
		flushSpans(spans, begun.Add(cfg.Shutdown.Budget()), logger)
	}()
	stopAgent(begun.Add(cfg.Shutdown.Budget()))
	// Calls whose connections were closed unwind meanwhile; give them
	// what is left, so the process exits with its handlers done.
	s.WaitIdle(begun.Add(cfg.Shutdown.Budget()))
	<-flushed
	logger.Info("stopped", zap.Bool("drained", drained), zap.Duration("duration", time.Since(begun)))
	switch {
	case agentExited && agent.ExitCode() != 0:
		return &exitError{code: agent.ExitCode()}
	case !drained:
		return &exitError{code: 1, msg: "sidecar: the drain budget ran out; calls still in flight were ended"}
	}
	return nil
}

// flushSpans sends the spans not yet exported, by deadline at most, and
// stops the exporter. Spans still unsent then are lost, and logged so.
func flushSpans(p *tracing.Provider, deadline time.Time, logger *zap.Logger) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		logger.Warn("spans not flushed within the shutdown budget", zap.Error(err))
	}
}

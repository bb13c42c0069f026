package main

import (
	"fmt"
	"io"
	"net"
	"strings"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/supervise"
	"github.com/sidecar-dev/sidecar/upstream"
)

// agentIO is what a started agent inherits from the sidecar.
type agentIO struct {
	env            []string // the sidecar's environment
	stdout, stderr io.Writer
}

// superviseAgent starts the agent's command and supervises it as up says.
func superviseAgent(up config.Upstream, aio agentIO, logger *zap.Logger) (*supervise.Supervisor, error) {
	return supervise.Start(supervise.Options{
		Command:     up.Command,
		Env:         agentEnv(aio.env, up),
		Stdout:      aio.stdout,
		Stderr:      aio.stderr,
		Restart:     supervise.Policy(up.Restart.Policy),
		MaxRestarts: up.Restart.Max,
		Backoff:     up.Restart.Backoff,
		ReapOrphans: true,
		Logger:      logger,
	})
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

package main

import (
	"fmt"
	"net"
	"net/http"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/a2a"
	"github.com/sidecar-dev/sidecar/proxy/agentcore"
	"github.com/sidecar-dev/sidecar/proxy/foundry"
	"github.com/sidecar-dev/sidecar/proxy/platform"
)

// door is one protocol served: its listener and its server, with the
// limits of every public server (newHTTPServer), in front of the one
// proxy.Server.
type door struct {
	protocol string
	ln       net.Listener
	srv      *http.Server
}

// doorOf is the front door of an enabled protocol: the one place that
// turns the protocols section into doors.
func doorOf(protocol string, cfg *config.Config, s *proxy.Server, env []string) (proxy.Door, error) {
	switch protocol {
	case config.ProtocolAgentPlatform:
		return platform.Door{}, nil
	case config.ProtocolAgentCore:
		return agentcore.New(*cfg.Protocols.AgentCore, s.InFlight), nil
	case config.ProtocolFoundry:
		return foundry.New(*cfg.Protocols.Foundry, envValue(env, foundry.EnvSessionID)), nil
	case config.ProtocolA2A:
		p := cfg.Protocols.A2A
		// Without protocols.a2a.url the door builds the card's url from
		// where the card was asked (X-Forwarded-* or the Host), which is
		// what a caller can reach.
		return a2a.NewDoor(cfg, a2a.Options{Method: p.Method, URL: p.URL,
			Card: a2a.CardInfo{Name: p.Card.Name, Description: p.Card.Description}}), nil
	}
	return nil, fmt.Errorf("unknown protocol %q", protocol)
}

// openDoors builds a server for every enabled protocol: the platform's on
// ln (opened by run from --listen, $PORT or listen; nil when the platform
// is off), each other one on a listener of its own. On error, every
// listener it opened, ln included, is closed.
func openDoors(cfg *config.Config, s *proxy.Server, ln net.Listener, env []string, logger *zap.Logger, lim serverLimits) ([]door, error) {
	var doors []door
	fail := func(err error) ([]door, error) {
		if ln != nil {
			ln.Close()
		}
		for _, d := range doors {
			if d.ln != ln {
				d.ln.Close()
			}
		}
		return nil, err
	}
	for _, p := range cfg.Listens() {
		d, err := doorOf(p[0], cfg, s, env)
		if err != nil {
			return fail(err)
		}
		l := ln
		if p[0] != config.ProtocolAgentPlatform {
			if l, err = net.Listen("tcp", p[1]); err != nil {
				return fail(fmt.Errorf("protocols.%s: listening on %s: %w", p[0], p[1], err))
			}
		} else if l == nil {
			continue
		}
		doors = append(doors, door{protocol: p[0], ln: l, srv: newHTTPServer(cfg, s.HandlerFor(d), logger, lim)})
	}
	if len(doors) == 0 {
		return fail(fmt.Errorf("no protocol is enabled (protocols.agent_platform is off and no other is configured)"))
	}
	return doors, nil
}

// a2aCard is the agent card the A2A door of cfg serves, advertising url:
// by default protocols.a2a.url, else http://localhost and protocols.a2a's
// port, as a local client reaches it.
func a2aCard(cfg *config.Config, url string) ([]byte, error) {
	p := cfg.Protocols.A2A
	if p == nil {
		return nil, fmt.Errorf("the config has no protocols.a2a")
	}
	if url == "" {
		url = p.URL
	}
	if url == "" {
		_, port, err := net.SplitHostPort(p.Listen)
		if err != nil {
			return nil, fmt.Errorf("protocols.a2a.listen %q: %v", p.Listen, err)
		}
		url = "http://localhost:" + port + "/"
	}
	door, err := doorOf(config.ProtocolA2A, cfg, nil, nil)
	if err != nil {
		return nil, err
	}
	return door.(*a2a.Door).Card(url), nil
}

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
	"github.com/sidecar-dev/sidecar/state"
)

// door is one protocol served: its listener and its server, with the
// limits of every public server (newHTTPServer), in front of the one
// proxy.Server.
type door struct {
	protocol string
	ln       net.Listener
	srv      *http.Server
	// closers are the doors served here (the platform's mounts too) that
	// work in the background (A2A's lease renewal with a shared store):
	// closed at shutdown, once the calls are over.
	closers []io.Closer
}

// stopDoors stops what the served doors do in the background.
func stopDoors(served []door) {
	for _, d := range served {
		for _, c := range d.closers {
			c.Close()
		}
	}
}

// openDoors builds a server for every enabled protocol: the platform's on
// ln (opened by run from --listen, $PORT or listen; nil when the platform
// is off) with the mounted doors beside it (proxy.Mounted), each other
// one on a listener of its own. On error, every listener it opened, ln
// included, is closed.
func openDoors(cfg *config.Config, s *proxy.Server, ln net.Listener, env []string, logger *zap.Logger, lim serverLimits) ([]door, error) {
	return openDoorsOf(doors.All, cfg, s, ln, env, logger, lim)
}

// openDoorsOf is openDoors building the doors of list: the program's
// (doors.All), or a test's with a door of its own.
func openDoorsOf(list []doors.Door, cfg *config.Config, s *proxy.Server, ln net.Listener, env []string, logger *zap.Logger, lim serverLimits) ([]door, error) {
	var opened []door
	fail := func(err error) ([]door, error) {
		if ln != nil {
			ln.Close()
		}
		for _, d := range opened {
			if d.ln != ln {
				d.ln.Close()
			}
		}
		return nil, err
	}
	host := core.Host{InFlight: s.InFlight, Getenv: func(name string) string { return envValue(env, name) }, Version: version,
		Proxies: cfg.TrustedProxies}
	if store, ok := s.Store.(*state.Redis); ok {
		host.Store = store
	}
	for _, p := range cfg.Listens() {
		d, err := doors.Build(list, cfg, p[0], host)
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
		h := s.HandlerFor(d)
		var closers []io.Closer
		if c, ok := d.(io.Closer); ok {
			closers = append(closers, c)
		}
		if p[0] == config.ProtocolAgentPlatform {
			mounts, mounted, err := mountDoors(cfg, list, s, host)
			if err != nil {
				return fail(err)
			}
			h = proxy.Mounted(h, mounts)
			closers = append(closers, mounted...)
		}
		opened = append(opened, door{protocol: p[0], ln: l, srv: newHTTPServer(cfg, h, logger, lim), closers: closers})
	}
	if len(opened) == 0 {
		return fail(fmt.Errorf("no protocol is enabled (protocols.agent_platform is off and no other is configured)"))
	}
	return opened, nil
}

// mountDoors builds the doors of list mounted on the platform's listener,
// each served on the paths it claims there.
func mountDoors(cfg *config.Config, list []doors.Door, s *proxy.Server, host core.Host) ([]proxy.Mount, []io.Closer, error) {
	var mounts []proxy.Mount
	var closers []io.Closer
	for _, m := range cfg.Mounted() {
		d, err := doors.Build(list, cfg, m.Name, host)
		if err != nil {
			return nil, nil, err
		}
		if c, ok := d.(io.Closer); ok {
			closers = append(closers, c)
		}
		mounts = append(mounts, proxy.Mount{Path: m.Mount, Claims: cfg.Claims(m), Handler: s.HandlerFor(d)})
	}
	return mounts, closers, nil
}

package main

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy"
)

// serveAdmin serves /metrics and /healthz on the admin address, which must
// not be the public one, held to the Host check of every door
// (proxy.Server.Guard). It returns the function that stops it.
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
	// Behind the Host check every door makes: a page under a rebinding
	// name on this machine could otherwise read the metrics and the
	// agent's readiness detail (its address among them).
	srv := &http.Server{Handler: s.Guard(mux), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	logger.Info("admin listening", zap.String("addr", ln.Addr().String()))
	return func() { srv.Close(); <-done }, nil
}

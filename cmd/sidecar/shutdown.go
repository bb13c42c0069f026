package main

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/sidecar-dev/sidecar/proxy"
	"go.uber.org/zap"
)

// drain stops the server by end: it reports whether every call finished
// on its own. The listener stays open meanwhile, so /healthz can answer
// 503 and new calls a 503 with Retry-After. Calls still running in the
// drain's last stretch (endWindow) are ended with a shutting_down error
// (logged as "ending calls"); at end every connection still open is
// closed, whatever its call is doing: reading a body the caller sends
// slowly, writing to a caller that does not read, or ignoring its
// cancellation. It returns as soon as no call is in flight and the
// connections are closed, so the agent, stopped next, gets its SIGTERM
// when the last call is over, at the latest at end.
//
// Every door's server drains in the one budget: the calls are the one
// proxy.Server's, and the servers shut down side by side; served gets
// one value from each.
func drain(srvs []*http.Server, s *proxy.Server, served <-chan error, end time.Time) bool {
	s.Drain()
	drained := s.WaitIdle(end.Add(-endWindow(time.Until(end))))
	if !drained {
		s.Logger.Info("ending calls", zap.Int64("in_flight", s.InFlight()), zap.Duration("left", time.Until(end)))
		s.EndCalls()
		s.WaitIdle(end)
	}
	// Shutdown closes the idle connections and waits for the others; a
	// connection that never sent a request counts as active for 5s, so
	// it gets a second at most.
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	ctx, cancelSecond := context.WithTimeout(ctx, time.Second)
	defer cancelSecond()
	var wg sync.WaitGroup
	for _, srv := range srvs {
		wg.Go(func() {
			if srv.Shutdown(ctx) != nil {
				srv.Close()
			}
		})
	}
	wg.Wait()
	for range srvs {
		<-served
	}
	return drained
}

// endWindow is the part of a drain of length d kept for ending the calls
// still running: time for their final lines and 503s to be written. A
// second, or a quarter of a drain shorter than 4s.
func endWindow(d time.Duration) time.Duration { return min(d/4, time.Second) }

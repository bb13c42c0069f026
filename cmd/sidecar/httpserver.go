package main

import (
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
)

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

package proxy

import (
	"runtime"
	"time"
)

// collectDrop is how far the calls in flight must fall from their peak,
// and to at most half of it, for the memory the ended calls held to be
// collected at once (collect). An idle open stream holds about 40 KB, so
// this is about 10 MB set free.
const collectDrop = 256

// callBegun counts a call in flight and notes the peak.
func (s *Server) callBegun() {
	n := s.inFlight.Add(1)
	for {
		peak := s.peak.Load()
		if n <= peak || s.peak.CompareAndSwap(peak, n) {
			return
		}
	}
}

// callEnded counts a call out, and collects the garbage of many calls that
// ended (collect).
func (s *Server) callEnded() {
	n := s.inFlight.Add(-1)
	peak := s.peak.Load()
	if peak-n >= collectDrop && n <= peak/2 && s.peak.CompareAndSwap(peak, n) {
		s.collect()
	}
}

// collect runs a garbage collection on a goroutine of its own, unless one
// it started is still running. Open streams allocate little, so without it
// the memory of many closed streams (long calls hold their buffers, their
// request and their connection's) could stay garbage until enough other
// work allocated to trigger the next collection, and the streams opened
// meanwhile would take fresh memory beside it: about half as much again
// per stream after a churn of thousands (BENCHMARKS.md). A collection
// then costs little, as what stays live is small.
func (s *Server) collect() {
	if !s.collecting.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(collectDelay, func() {
		defer s.collecting.Store(false)
		runtime.GC()
	})
}

// collectDelay is how long collect waits: calls that end together (the
// streams of clients that went away) end over some milliseconds, and one
// collection after them sets them all free.
const collectDelay = 100 * time.Millisecond

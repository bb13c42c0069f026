package proxy

import (
	"context"
	"sync"
	"time"
)

// storeHealthCache is how long /healthz reuses the store's last ping:
// probes come from the platform, load balancers and operators at once,
// and a probe storm must not become a storm of round trips to Redis. A
// change of the store's state shows within it (plus the ping's own
// bound, storeHealthWait).
const storeHealthCache = time.Second

// storeHealth is the store's reachability as /healthz reports it: the
// last ping's result, reused for ttl, and at most one ping in flight,
// whose result every probe that arrives meanwhile shares.
type storeHealth struct {
	// ttl and now are storeHealthCache and time.Now, unless a test set
	// them.
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	at  time.Time // when the last ping ended; zero before the first
	err error     // its result
	// pinging is closed when the ping in flight ends; nil when none is.
	pinging chan struct{}
}

// check returns the store's reachability: the cached result while it is
// fresh, else the result of the ping in flight or of a new one, which
// this caller runs. A caller whose ctx ends while it waits for another's
// ping gets ctx's error.
func (h *storeHealth) check(ctx context.Context, store Store) error {
	h.mu.Lock()
	if h.now == nil {
		h.now, h.ttl = time.Now, storeHealthCache
	}
	if !h.at.IsZero() && h.now().Sub(h.at) < h.ttl {
		err := h.err
		h.mu.Unlock()
		return err
	}
	if wait := h.pinging; wait != nil {
		h.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.err
	}
	wait := make(chan struct{})
	h.pinging = wait
	h.mu.Unlock()

	// The ping is shared: a probe that gives up must not cut it short for
	// the others, so it is bounded by storeHealthWait only (and keeps the
	// probe's values, its span among them).
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeHealthWait)
	err := store.Ping(pctx)
	cancel()

	h.mu.Lock()
	h.at, h.err, h.pinging = h.now(), err, nil
	h.mu.Unlock()
	close(wait)
	return err
}

package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingStore counts its pings; fail makes them fail, and a ping
// waits for release (when set) before it answers.
type countingStore struct {
	pings   atomic.Int64
	fail    atomic.Bool
	release chan struct{}
}

func (c *countingStore) Ping(ctx context.Context) error {
	c.pings.Add(1)
	if c.release != nil {
		select {
		case <-c.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.fail.Load() {
		return errors.New("pinging redis at 127.0.0.1:1: connection refused")
	}
	return nil
}

// storeField is the "store" field of a /healthz answer.
func storeField(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	var h struct{ Store string }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz = %d (%v), want 200 with JSON", resp.StatusCode, err)
	}
	return h.Store
}

// TestStoreHealthOnePing: 100 probes at once cost the store one ping.
// The ping answers only once all 100 probes have reached the server, so
// each of them finds it in flight (or its result cached): a probe that
// pinged on its own would make the count more than one.
func TestStoreHealthOnePing(t *testing.T) {
	const probes = 100
	store := &countingStore{release: make(chan struct{})}
	s := &Server{Store: store}
	// A clock that does not move: whatever the machine's speed, no
	// probe finds the result stale.
	s.storeHealth.ttl, s.storeHealth.now = time.Second, func() time.Time { return time.Unix(1, 0) }
	var arrived atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == probes {
			close(store.release)
		}
		s.ServeHealth(w, r)
	}))
	defer srv.Close()
	// A probe storm that never completes fails here by name, not by the
	// package's timeout.
	timer := time.AfterFunc(30*time.Second, func() { panic("TestStoreHealthOnePing: 100 probes did not complete in 30s") })
	defer timer.Stop()

	var wg sync.WaitGroup
	got := make([]string, probes)
	for i := range probes {
		wg.Go(func() { got[i] = storeField(t, srv.URL) })
	}
	wg.Wait()
	if n := store.pings.Load(); n != 1 {
		t.Errorf("100 concurrent probes pinged the store %d times, want 1", n)
	}
	for i, g := range got {
		if g != "ok" {
			t.Errorf("probe %d: store = %q, want ok", i, g)
		}
	}
}

// TestStoreHealthChange: a change of the store's state shows once the
// cached result is storeHealthCache old, and not before; each refresh is
// one ping.
func TestStoreHealthChange(t *testing.T) {
	store := &countingStore{}
	s := &Server{Store: store}
	var clock atomic.Int64 // ms
	s.storeHealth.ttl, s.storeHealth.now = storeHealthCache, func() time.Time { return time.UnixMilli(clock.Load()) }
	srv := httptest.NewServer(http.HandlerFunc(s.ServeHealthDetail))
	defer srv.Close()

	if got := storeField(t, srv.URL); got != "ok" {
		t.Fatalf("store = %q, want ok", got)
	}
	store.fail.Store(true)
	clock.Add(storeHealthCache.Milliseconds() - 1)
	if got := storeField(t, srv.URL); got != "ok" || store.pings.Load() != 1 {
		t.Errorf("just within the cache time: store = %q after %d pings, want the cached ok after 1", got, store.pings.Load())
	}
	clock.Add(1)
	if got := storeField(t, srv.URL); got != "unreachable" || store.pings.Load() != 2 {
		t.Errorf("after the cache time: store = %q after %d pings, want unreachable after 2", got, store.pings.Load())
	}
	store.fail.Store(false)
	clock.Add(storeHealthCache.Milliseconds())
	if got := storeField(t, srv.URL); got != "ok" || store.pings.Load() != 3 {
		t.Errorf("store back, after the cache time: store = %q after %d pings, want ok after 3", got, store.pings.Load())
	}
	if storeHealthCache > time.Second {
		t.Errorf("storeHealthCache = %s: a change would show later than the documented second", storeHealthCache)
	}
}

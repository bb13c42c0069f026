package quota

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/redistest"
	"github.com/sidecar-dev/sidecar/state"
)

// TestShared: two replicas' limiters sharing one Redis count one quota: a
// caller's calls on either add up; the key lapses with its window; with
// Redis stopped, Take counts in the process and says why; Redis back, the
// replicas count one quota again.
func TestShared(t *testing.T) {
	srv := redistest.Start(t)
	st := config.State{Store: config.StoreRedis, Redis: config.RedisState{URL: srv.URL(), KeyPrefix: "q", TaskTTL: config.DefaultTaskTTL, Lease: config.DefaultLease}}
	open := func() *state.Redis {
		r, err := state.Open(st, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	ra, rb := open(), open()
	l := config.PerCaller{Requests: 10, Per: time.Minute}
	a, b := New(l, Redis{ra}), New(l, Redis{rb})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 10 {
		q := a
		if i%2 == 1 {
			q = b
		}
		d, err := q.Take(ctx, "alice")
		if err != nil || !d.Allowed || d.Remaining != 9-i {
			t.Fatalf("call %d: %+v %v, want allowed, %d remaining", i+1, d, err, 9-i)
		}
	}
	for _, q := range []*Limiter{a, b} {
		if d, err := q.Take(ctx, "alice"); err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 6*time.Second {
			t.Fatalf("call 11: %+v %v, want refused, retry within one interval", d, err)
		}
	}
	if d, _ := b.Take(ctx, "bob"); !d.Allowed {
		t.Fatal("bob refused")
	}
	ttl, err := ra.Client().PTTL(ctx, ra.Key("quota", "alice")).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("PTTL of alice's key = %v %v, want within the window", ttl, err)
	}

	srv.Stop()
	d, err := a.Take(ctx, "carol")
	if !state.IsError(err) || !d.Allowed {
		t.Fatalf("Redis stopped: %+v %v, want allowed in the process with a store error", d, err)
	}
	srv.Restart() // empty: the test's server keeps nothing on disk
	// a asks Redis again SharedRetry after its failure.
	later := time.Now().Add(SharedRetry)
	a.now = func() time.Time { return later }
	da, erra := a.Take(ctx, "dave")
	db, errb := b.Take(ctx, "dave")
	if erra != nil || errb != nil || da.Remaining != 9 || db.Remaining != 8 {
		t.Fatalf("Redis back: %+v %v, %+v %v; want one quota counted by both again", da, erra, db, errb)
	}
}

// TestSharedSilent: a Redis that takes connections but answers nothing
// (CLIENT PAUSE) costs one call the store's bounds, and returns it the
// error; the calls after it are counted in the process at once, without
// an error, for SharedRetry; then one call at a time asks Redis (the
// others still counted in the process) until Redis answers, and from then
// every call is counted in Redis again.
func TestSharedSilent(t *testing.T) {
	srv := redistest.Start(t)
	st := config.State{Store: config.StoreRedis, Redis: config.RedisState{URL: srv.URL(), KeyPrefix: "q", TaskTTL: config.DefaultTaskTTL, Lease: config.DefaultLease}}
	r, err := state.Open(st, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	admin, err := state.Open(st, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	q := New(config.PerCaller{Requests: 100, Per: time.Minute}, Redis{r})
	var mu sync.Mutex
	clock := time.Now()
	q.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	pause := func() {
		// Longer than two attempts' bounds: the failed call never waits
		// for the pause to end.
		if err := admin.Client().Do(ctx, "CLIENT", "PAUSE", (4 * (state.DialTimeout + state.ReadTimeout)).Milliseconds(), "ALL").Err(); err != nil {
			t.Fatal(err)
		}
	}
	resumed := func() {
		for admin.Client().Ping(ctx).Err() != nil {
			if ctx.Err() != nil {
				t.Fatal("Redis still paused")
			}
		}
	}
	pause()
	if _, err := q.Take(ctx, "alice"); !state.IsError(err) {
		t.Fatalf("the first call with Redis silent: %v, want the store's error", err)
	}
	// 50 calls at once, the clock still: none asks Redis.
	errs := takeAll(ctx, q, 50)
	if errs != 0 {
		t.Errorf("within SharedRetry: %d calls asked Redis, want none", errs)
	}
	// Past SharedRetry, Redis still silent: one of 50 calls at once asks.
	advance(SharedRetry)
	if errs := takeAll(ctx, q, 50); errs != 1 {
		t.Errorf("past SharedRetry: %d calls asked Redis, want 1", errs)
	}
	resumed()
	advance(SharedRetry)
	d, err := q.Take(ctx, "bob")
	if err != nil || d.Remaining != 99 {
		t.Fatalf("Redis back: %+v %v, want counted in Redis", d, err)
	}
	if n, err := admin.Client().Exists(ctx, r.Key("quota", "bob")).Result(); err != nil || n != 1 {
		t.Errorf("bob's key in Redis: %d %v, want it there", n, err)
	}
	if d, err := q.Take(ctx, "bob"); err != nil || d.Remaining != 98 {
		t.Errorf("the next call: %+v %v, want counted in Redis too", d, err)
	}
}

// takeAll runs n Takes of distinct callers at once and counts the errors.
func takeAll(ctx context.Context, q *Limiter, n int) int {
	var wg sync.WaitGroup
	var errs atomic.Int64
	for i := range n {
		wg.Go(func() {
			if d, err := q.Take(ctx, "c"+strconv.Itoa(i)); err != nil {
				errs.Add(1)
			} else if !d.Allowed {
				errs.Add(100)
			}
		})
	}
	wg.Wait()
	return int(errs.Load())
}

// hangUp is a go-redis hook that cancels a call's context as its command
// goes to Redis, when the context carries a cancel (hangUpKey): the
// caller hangs up during the round trip.
type hangUp struct{}

type hangUpKey struct{}

func (hangUp) DialHook(next redis.DialHook) redis.DialHook { return next }

func (hangUp) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cancel, ok := ctx.Value(hangUpKey{}).(context.CancelFunc); ok {
			cancel()
		}
		return next(ctx, cmd)
	}
}

func (hangUp) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestSharedCallerHangsUp: a call whose own context is cancelled during
// its round trip to Redis is no store failure: the next call, another
// caller's, is still counted in Redis, not in the process.
func TestSharedCallerHangsUp(t *testing.T) {
	srv := redistest.Start(t)
	st := config.State{Store: config.StoreRedis, Redis: config.RedisState{URL: srv.URL(), KeyPrefix: "q", TaskTTL: config.DefaultTaskTTL, Lease: config.DefaultLease}}
	r, err := state.Open(st, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Client().AddHook(hangUp{})
	q := New(config.PerCaller{Requests: 10, Per: time.Minute}, Redis{r})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	gone, hang := context.WithCancel(ctx)
	if _, err := q.Take(context.WithValue(gone, hangUpKey{}, hang), "alice"); err == nil {
		t.Fatal("a call whose caller hung up during its round trip: no error")
	}
	d, err := q.Take(ctx, "bob")
	if err != nil || !d.Allowed {
		t.Fatalf("bob's call after alice hung up: %+v %v, want allowed", d, err)
	}
	if n, err := r.Client().Exists(ctx, r.Key("quota", "bob")).Result(); err != nil || n != 1 {
		t.Errorf("bob's key in Redis after alice hung up: %d %v, want it there (counted in Redis, not in the process)", n, err)
	}
}

// TestSharedKeyLivesTheWindow: a caller's key lives as long as its
// quota takes to come back, not one interval: after 10 calls of 10 a
// minute its PTTL is close to the minute.
func TestSharedKeyLivesTheWindow(t *testing.T) {
	srv := redistest.Start(t)
	st := config.State{Store: config.StoreRedis, Redis: config.RedisState{URL: srv.URL(), KeyPrefix: "q", TaskTTL: config.DefaultTaskTTL, Lease: config.DefaultLease}}
	r, err := state.Open(st, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	q := New(config.PerCaller{Requests: 10, Per: time.Minute}, Redis{r})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	for i := range 10 {
		if d, err := q.Take(ctx, "alice"); err != nil || !d.Allowed {
			t.Fatalf("call %d: %+v %v, want allowed", i+1, d, err)
		}
	}
	ttl, err := r.Client().PTTL(ctx, r.Key("quota", "alice")).Result()
	// The key was set within the calls: its PTTL is the minute less the
	// time they took at most.
	if low := time.Minute - time.Since(start); err != nil || ttl < low || ttl > time.Minute {
		t.Errorf("PTTL of alice's key after 10 calls of 10 a minute = %v %v, want within [%v, 1m]", ttl, err, low)
	}
}

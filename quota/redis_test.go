package quota

import (
	"context"
	"testing"
	"time"

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
	da, erra := a.Take(ctx, "dave")
	db, errb := b.Take(ctx, "dave")
	if erra != nil || errb != nil || da.Remaining != 9 || db.Remaining != 8 {
		t.Fatalf("Redis back: %+v %v, %+v %v; want one quota counted by both again", da, erra, db, errb)
	}
}

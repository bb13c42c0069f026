package quota

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
)

// clocked is a limiter of l on a clock the test moves.
func clocked(l config.PerCaller) (*Limiter, *time.Time) {
	q := New(l, nil)
	now := time.Unix(1_800_000_000, 0)
	q.now = func() time.Time { return now }
	return q, &now
}

// TestRate: 60 a minute is a burst of 60, then one a second; a refused
// call says when the next is allowed; another caller has its own quota.
func TestRate(t *testing.T) {
	q, now := clocked(config.PerCaller{Requests: 60, Per: time.Minute})
	ctx := context.Background()
	for i := range 60 {
		d, _ := q.Take(ctx, "alice")
		if !d.Allowed || d.Remaining != 59-i {
			t.Fatalf("call %d: %+v, want allowed with %d remaining", i+1, d, 59-i)
		}
	}
	d, _ := q.Take(ctx, "alice")
	if d.Allowed || d.Remaining != 0 || d.RetryAfter != time.Second || d.Reset != time.Minute {
		t.Fatalf("call 61: %+v, want refused, retry in 1s, reset in 1m", d)
	}
	if d, _ := q.Take(ctx, "bob"); !d.Allowed || d.Remaining != 59 {
		t.Fatalf("bob's first call: %+v, want allowed with 59 remaining", d)
	}
	*now = now.Add(time.Second)
	if d, _ := q.Take(ctx, "alice"); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("a second later: %+v, want one allowed", d)
	}
	if d, _ := q.Take(ctx, "alice"); d.Allowed {
		t.Fatalf("and the next: %+v, want refused", d)
	}
	*now = now.Add(time.Minute)
	if d, _ := q.Take(ctx, "alice"); !d.Allowed || d.Remaining != 59 {
		t.Fatalf("a minute later: %+v, want the whole quota back", d)
	}
}

// TestHeaders: the RateLimit fields as the draft writes them, and
// Retry-After on a refusal, in whole seconds rounded up.
func TestHeaders(t *testing.T) {
	q, _ := clocked(config.PerCaller{Requests: 2, Per: 10 * time.Second})
	ctx := context.Background()
	h := http.Header{}
	d, _ := q.Take(ctx, "a")
	q.SetHeaders(h, d)
	if got := h.Get("RateLimit-Policy"); got != `"per-caller";q=2;w=10` {
		t.Errorf("RateLimit-Policy = %s", got)
	}
	if got := h.Get("RateLimit"); got != `"per-caller";r=1;t=5` {
		t.Errorf("RateLimit = %s", got)
	}
	if h.Get("Retry-After") != "" {
		t.Errorf("Retry-After on an allowed call")
	}
	q.Take(ctx, "a")
	d, _ = q.Take(ctx, "a")
	h = http.Header{}
	q.SetHeaders(h, d)
	if h.Get("RateLimit") != `"per-caller";r=0;t=10` || h.Get("Retry-After") != "5" {
		t.Errorf("refused: RateLimit %s, Retry-After %s; want r=0;t=10 and 5", h.Get("RateLimit"), h.Get("Retry-After"))
	}
	off := New(config.PerCaller{Concurrent: 1, Per: time.Minute}, nil)
	h = http.Header{}
	d, _ = off.Take(ctx, "a")
	off.SetHeaders(h, d)
	if !d.Allowed || len(h) != 0 {
		t.Errorf("no rate limit: %+v, headers %v; want allowed, none", d, h)
	}
}

// TestConcurrent: a caller holds at most concurrent calls; a release
// frees one, twice frees it once; another caller is not counted.
func TestConcurrent(t *testing.T) {
	q := New(config.PerCaller{Concurrent: 2, Per: time.Minute}, nil)
	r1, ok1 := q.Hold("a")
	_, ok2 := q.Hold("a")
	_, ok3 := q.Hold("a")
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("holds = %v %v %v, want true true false", ok1, ok2, ok3)
	}
	if _, ok := q.Hold("b"); !ok {
		t.Fatal("another caller refused")
	}
	r1()
	r1()
	_, ok4 := q.Hold("a")
	_, ok5 := q.Hold("a")
	if !ok4 || ok5 {
		t.Fatalf("after one release (called twice): %v %v, want true false", ok4, ok5)
	}
}

// TestCallersBounded: far more distinct callers than maxCallers within
// one window keep at most maxCallers times.
func TestCallersBounded(t *testing.T) {
	q, now := clocked(config.PerCaller{Requests: 10, Per: time.Hour})
	ctx := context.Background()
	for i := range 3 * maxCallers {
		if d, _ := q.Take(ctx, "c"+strconv.Itoa(i)); !d.Allowed {
			t.Fatalf("caller %d refused its first call", i)
		}
		if i%1000 == 0 {
			*now = now.Add(time.Millisecond)
		}
	}
	if n := q.Callers(); n > maxCallers {
		t.Errorf("%d callers kept, want at most %d", n, maxCallers)
	}
}

// TestCallerKey: keys are the kind and a fixed-size hash.
func TestCallerKey(t *testing.T) {
	a, b := CallerKey("sub", "alice"), CallerKey("sub", string(make([]byte, 1<<20)))
	if len(a) != len(b) || a == CallerKey("key", "alice") || a[:4] != "sub:" {
		t.Errorf("keys %q %q", a, b[:40])
	}
}

package quota

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
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

// TestAddressFloodMemory: a flood of distinct client addresses, keyed
// as the doors key an unverified caller (CallerKey of Address), ten
// times past maxCallers within one window: the heap the limiter holds
// stops growing, and every address of one IPv6 /64 is one caller.
func TestAddressFloodMemory(t *testing.T) {
	q, _ := clocked(config.PerCaller{Requests: 10, Per: time.Hour})
	ctx := context.Background()
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	take := func(from, to int) {
		for i := from; i < to; i++ {
			r := &http.Request{RemoteAddr: fmt.Sprintf("10.%d.%d.%d:4242", i>>16&255, i>>8&255, i&255)}
			if i%2 == 1 {
				r.RemoteAddr = fmt.Sprintf("[2001:db8:%x:%x::1]:4242", i>>16, i&0xffff)
			}
			if d, _ := q.Take(ctx, CallerKey("addr", Address(r))); !d.Allowed {
				t.Fatalf("address %s refused its first call", r.RemoteAddr)
			}
		}
	}
	// The map holding the times grows once past the cap (the room the
	// forgotten leave), then no more: ten times the cap holds what three
	// times did, under 256 bytes a caller kept.
	base := heap()
	take(0, 3*maxCallers)
	three := heap()
	take(3*maxCallers, 10*maxCallers)
	ten := heap()
	runtime.KeepAlive(q)
	if n := q.Callers(); n > maxCallers {
		t.Errorf("%d callers kept, want at most %d", n, maxCallers)
	}
	if ten > three+(three-base)/10 || ten-base > 256*maxCallers {
		t.Errorf("the limiter holds %d bytes after %d addresses, %d after %d: want the same, under %d", ten-base, 10*maxCallers, three-base, 3*maxCallers, 256*maxCallers)
	}
	for i := range 10 {
		r := &http.Request{RemoteAddr: fmt.Sprintf("[2001:db8:ffff:1:%x::%x]:1", i, i)}
		q.Take(ctx, CallerKey("addr", Address(r)))
	}
	if d, _ := q.Take(ctx, CallerKey("addr", Address(&http.Request{RemoteAddr: "[2001:db8:ffff:1::9]:2"}))); d.Allowed {
		t.Error("the 11th call from one IPv6 /64, each from its own address: allowed, want refused (one caller, 10 an hour)")
	}
}

// TestCallerKey: keys are the kind and a fixed-size hash.
func TestCallerKey(t *testing.T) {
	a, b := CallerKey("sub", "alice"), CallerKey("sub", string(make([]byte, 1<<20)))
	if len(a) != len(b) || a == CallerKey("key", "alice") || a[:4] != "sub:" {
		t.Errorf("keys %q %q", a, b[:40])
	}
}

// Package quota is the per-caller limits (limits.per_caller): how many
// calls a caller may start in a window, counted as a steady rate with the
// window's whole quota as its burst (GCRA, the generic cell rate
// algorithm: one time per caller, no buckets to refill), and how many it
// may hold at once. The rate is counted in the process, or in Redis for
// every replica (state.store: redis); concurrency in the process.
package quota

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sidecar-dev/sidecar/config"
)

// Policy is the name the RateLimit headers give the limit.
const Policy = "per-caller"

// maxCallers bounds the callers the process keeps a time for: past it,
// the caller whose time is nearest to lapsing among a few is forgotten
// (it then counts from a full quota again). A caller's time lapses a
// window after its last call at most, so only a flood of distinct callers
// within one window reaches it.
const maxCallers = 100_000

// Decision is a call's verdict: allowed or not, and what the RateLimit
// headers say.
type Decision struct {
	Allowed bool
	// Remaining is the calls the caller may still start at once.
	Remaining int
	// Reset is how long until the caller's whole quota is back.
	Reset time.Duration
	// RetryAfter, for a refused call, is how long until one is allowed.
	RetryAfter time.Duration
}

// Limiter counts each caller's calls. Build it with New; it is safe for
// concurrent use.
type Limiter struct {
	limit config.PerCaller
	// interval is the time one call takes of the quota, per/requests.
	interval time.Duration
	shared   Shared // nil: counted in the process only
	now      func() time.Time
	// policy is the RateLimit-Policy field, the same on every reply.
	policy []string
	// downUntil is when, after a round trip to the shared store failed,
	// it is asked again (Unix nanoseconds; 0: it answers); probing is
	// whether a call is asking it then.
	downUntil atomic.Int64
	probing   atomic.Bool

	mu    sync.Mutex
	times map[string]time.Time // a caller's theoretical arrival time (GCRA)
	swept time.Time            // when times was last swept of lapsed callers
	held  map[string]int       // a caller's calls in flight
}

// Shared counts the rate for every replica (Redis): Take is GCRA on the
// caller's key, atomically, with the store's clock.
type Shared interface {
	Take(ctx context.Context, key string, interval, window time.Duration) (Decision, error)
}

// New is the limiter of l; shared, when not nil, counts the rate for
// every replica.
func New(l config.PerCaller, shared Shared) *Limiter {
	q := &Limiter{limit: l, shared: shared, now: time.Now, times: make(map[string]time.Time), held: make(map[string]int)}
	if l.Requests > 0 {
		q.interval = l.Per / time.Duration(l.Requests)
		q.policy = []string{fmt.Sprintf("%q;q=%d;w=%d", Policy, l.Requests, seconds(l.Per))}
	}
	return q
}

// SharedRetry is how long after a failed round trip to the shared store
// the calls are counted in the process without asking it; then one call
// at a time asks it, until one is answered. A store that hangs costs one
// call its bounds (state's timeouts) per SharedRetry, not every call.
const SharedRetry = 2 * time.Second

// Take counts a call of caller key against its rate: allowed or not. A
// failing shared store counts in the process instead (the limit then
// holds per replica): a Redis outage never refuses calls by itself. The
// error is the failed round trip's, returned to the one call that made it.
// A call whose ctx is cancelled during the round trip (its caller hung
// up) is no failure of the store's: it is refused with ctx's error, and
// the next call asks the store as before.
func (q *Limiter) Take(ctx context.Context, key string) (Decision, error) {
	if q.limit.Requests == 0 {
		return Decision{Allowed: true, Remaining: math.MaxInt}, nil
	}
	if q.shared != nil && q.ask() {
		d, err := q.shared.Take(ctx, key, q.interval, q.limit.Per)
		if err != nil && errors.Is(ctx.Err(), context.Canceled) {
			q.probing.Store(false)
			return Decision{}, ctx.Err()
		}
		q.asked(err)
		if err == nil {
			return d, nil
		}
		local, _ := q.take(key)
		return local, err
	}
	return q.take(key)
}

// ask reports whether a call asks the shared store: every call while it
// answers; after a failure none for SharedRetry, then one at a time.
func (q *Limiter) ask() bool {
	down := q.downUntil.Load()
	if down == 0 {
		return true
	}
	return q.now().UnixNano() >= down && q.probing.CompareAndSwap(false, true)
}

// asked records how a round trip to the shared store went.
func (q *Limiter) asked(err error) {
	if err == nil {
		q.downUntil.Store(0)
	} else {
		q.downUntil.Store(q.now().Add(SharedRetry).UnixNano())
	}
	q.probing.Store(false)
}

// take is GCRA on the process's clock and map.
func (q *Limiter) take(key string) (Decision, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	tat, ok := q.times[key]
	if !ok || tat.Before(now) {
		tat = now
	}
	d := gcra(tat.Sub(now), q.interval, q.limit.Per)
	if d.Allowed {
		if !ok && len(q.times) >= maxCallers {
			q.forgetOne(now)
		}
		q.times[key] = tat.Add(q.interval)
	}
	return d, nil
}

// gcra decides a call whose caller's theoretical arrival time is ahead
// of now by ahead (≥ 0), each call taking interval of a window.
func gcra(ahead, interval, window time.Duration) Decision {
	next := ahead + interval // ahead once this call is counted
	if next > window {
		return Decision{Remaining: 0, Reset: ahead, RetryAfter: next - window}
	}
	return Decision{Allowed: true, Remaining: int((window - next) / interval), Reset: next}
}

// forgetOne makes room for one caller: it forgets the lapsed callers (a
// whole sweep, at most once a second), else the one nearest to lapsing of
// a few (map order is random).
func (q *Limiter) forgetOne(now time.Time) {
	if now.Sub(q.swept) >= time.Second {
		q.swept = now
		for k, t := range q.times {
			if !t.After(now) {
				delete(q.times, k)
			}
		}
		if len(q.times) < maxCallers {
			return
		}
	}
	var victim string
	var soonest time.Time
	n := 0
	for k, t := range q.times {
		if n == 0 || t.Before(soonest) {
			victim, soonest = k, t
		}
		if n++; n == 8 {
			break
		}
	}
	delete(q.times, victim)
}

// Hold counts a call of caller key in flight: ok false when it holds
// limits.per_caller.concurrent already. release ends it, once.
func (q *Limiter) Hold(key string) (release func(), ok bool) {
	if q.limit.Concurrent == 0 {
		return func() {}, true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.held[key] >= q.limit.Concurrent {
		return nil, false
	}
	q.held[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			if q.held[key]--; q.held[key] <= 0 {
				delete(q.held, key)
			}
		})
	}, true
}

// Callers is how many callers the process keeps a time for.
func (q *Limiter) Callers() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.times)
}

// SetHeaders writes d as the RateLimit and RateLimit-Policy fields of
// the IETF httpapi draft (draft-ietf-httpapi-ratelimit-headers), and
// Retry-After when refused. Times are whole seconds, rounded up.
func (q *Limiter) SetHeaders(h http.Header, d Decision) {
	if q.limit.Requests == 0 {
		return
	}
	// Assigned, not Set: the names are canonical, and this runs on every
	// call the limit counts.
	h["Ratelimit-Policy"] = q.policy
	b := make([]byte, 0, 48)
	b = append(b, `"`+Policy+`";r=`...)
	b = strconv.AppendInt(b, int64(d.Remaining), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, int64(seconds(d.Reset)), 10)
	h["Ratelimit"] = []string{string(b)}
	if !d.Allowed {
		h.Set("Retry-After", strconv.Itoa(max(1, seconds(d.RetryAfter))))
	}
}

func seconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// CallerKey is the key a caller is counted under: its kind ("sub" for a
// token's issuer and subject, "key" for an API key, "addr" for a client
// address) and a hash of what names it, so that neither a long subject
// nor a key is ever kept as it is.
func CallerKey(kind, name string) string {
	sum := sha256.Sum256([]byte(name))
	return kind + ":" + hex.EncodeToString(sum[:16])
}

// Address is the client address of r as a caller's name: its IP, or for
// IPv6 its /64 (one host's range), so that a host has one name whatever
// address of its range it calls from.
func Address(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		host = ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

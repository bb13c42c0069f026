package auth

import (
	"crypto/sha256"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/idptest"
)

// TestVerifiedCache: a token verified once is taken again without its
// signature checked (the key set is down, the token still verifies) until
// its exp and the leeway; then it is refused as expired, not served from
// the cache.
func TestVerifiedCache(t *testing.T) {
	p := idptest.Start(t)
	v := newVerifier(p, p.URL+"/jwks")
	clock := time.Now()
	v.now = func() time.Time { return clock }
	c := p.Claims("alice", audience, "")
	tok := p.Sign(t, c, "rsa1", "RS256")
	if _, err := authorize(t, v, bearer(tok)); err != nil {
		t.Fatal(err)
	}
	p.SetDown(true)
	v.keys.fetched = time.Time{} // were it checked again, it would fetch, and fail
	if caller, err := authorize(t, v, bearer(tok)); err != nil || caller.Subject != "alice" {
		t.Fatalf("the verified token again: %+v %v, want alice from the cache", caller, err)
	}
	clock = c.Expiry.Time().Add(2 * Leeway)
	_, err := authorize(t, v, bearer(tok))
	var e *Error
	if !errors.As(err, &e) || e.Status == 200 {
		t.Fatalf("the token past its exp: %v, want refused", err)
	}
}

// TestVerifiedCacheBounded: far more tokens than its size keep at most
// size, the expired dropped first.
func TestVerifiedCacheBounded(t *testing.T) {
	c := verifiedCache{size: 100}
	now := time.Now()
	for i := range 1000 {
		exp := now.Add(time.Hour)
		if i%2 == 0 {
			exp = now.Add(-time.Hour) // expired
		}
		c.put(sha256.Sum256([]byte(strconv.Itoa(i))), &Caller{Subject: strconv.Itoa(i), Expiry: exp}, now)
		if len(c.m) > c.size {
			t.Fatalf("%d tokens kept after %d, want at most %d", len(c.m), i+1, c.size)
		}
	}
	if got := c.get(sha256.Sum256([]byte("998")), now); got != nil {
		t.Errorf("an expired token served from the cache: %+v", got)
	}
	if got := c.get(sha256.Sum256([]byte("999")), now); got == nil || got.Subject != "999" {
		t.Errorf("the last token: %+v, want it kept", got)
	}
}

// TestVerifiedCacheSweep: a full cache drops its expired tokens before
// any live one, but looks for them at most once a sweepEvery; between
// sweeps a new token takes the place of any one.
func TestVerifiedCacheSweep(t *testing.T) {
	c := verifiedCache{size: 4}
	now := time.Now()
	key := func(i int) [sha256.Size]byte { return sha256.Sum256([]byte(strconv.Itoa(i))) }
	for i := range 4 {
		exp := now.Add(time.Hour)
		if i < 2 {
			exp = now.Add(-time.Hour)
		}
		c.put(key(i), &Caller{Subject: strconv.Itoa(i), Expiry: exp}, now)
	}
	now = now.Add(sweepEvery)
	c.put(key(4), &Caller{Subject: "4", Expiry: now.Add(time.Hour)}, now)
	for _, i := range []int{2, 3, 4} {
		if c.get(key(i), now) == nil {
			t.Errorf("live token %d dropped by the sweep", i)
		}
	}
	if len(c.m) != 3 {
		t.Fatalf("%d tokens after the sweep, want the 3 live ones", len(c.m))
	}
	c.put(key(5), &Caller{Subject: "5", Expiry: now.Add(-time.Hour)}, now)
	c.put(key(6), &Caller{Subject: "6", Expiry: now.Add(time.Hour)}, now)
	if len(c.m) != 4 || c.m[key(6)] == nil {
		t.Fatalf("between sweeps: %d tokens, the newest kept %v; want 4 and true", len(c.m), c.m[key(6)] != nil)
	}
	if !c.swept.Equal(now) {
		t.Errorf("swept at %v, want %v (one sweep only)", c.swept, now)
	}
}

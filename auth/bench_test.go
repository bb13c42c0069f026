package auth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/idptest"
)

// BenchmarkAuthorize is what a protected call adds: a token seen before
// (verified), and one verification of an RS256 (and an ES256) token with
// the key set cached, its claims read (the cache of verified tokens off).
// `make bench-go` runs it.
func BenchmarkAuthorize(b *testing.B) {
	p := idptest.Start(b)
	for _, tt := range []struct{ name, kid string }{{"RS256", "rsa1"}, {"ES256", "ec1"}, {"verified", "rsa1"}} {
		b.Run(tt.name, func(b *testing.B) {
			v := New(config.Auth{Issuer: p.URL, JWKSURL: p.URL + "/jwks", Audience: audience}, nil)
			if tt.name != "verified" {
				v.verified.size = 0
			}
			c := p.Claims("alice", audience, "tools:call")
			alg := jose.RS256
			if tt.kid == "ec1" {
				alg = jose.ES256
			}
			header := []string{"Bearer " + p.Sign(b, c, tt.kid, alg)}
			ctx := context.Background()
			if _, err := v.Authorize(ctx, header); err != nil { // the key set fetched once, before the loop
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Authorize(ctx, header); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifiedCachePut is a token verified for the first time while
// the cache of verified tokens is full of live ones, as when more than
// maxVerified callers hold tokens: what remembering it costs besides its
// signature check.
func BenchmarkVerifiedCachePut(b *testing.B) {
	c := verifiedCache{size: maxVerified}
	now := time.Now()
	caller := &Caller{Subject: "alice", Expiry: now.Add(time.Hour)}
	var key [sha256.Size]byte
	for i := range maxVerified {
		binary.BigEndian.PutUint64(key[:], uint64(i))
		c.put(key, caller, now)
	}
	b.ReportAllocs()
	i := uint64(maxVerified)
	for b.Loop() {
		i++
		binary.BigEndian.PutUint64(key[:], i)
		c.put(key, caller, now)
	}
}

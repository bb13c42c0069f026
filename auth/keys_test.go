package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/idptest"
)

// TestHeldKeysWhileRefetchFails (issue 37 item 3): once the key set is
// held, a token with an unknown kid refetches it; while that refetch
// fails (the provider answers 500) or hangs, a token signed with a held
// key verifies at once, and only unknown kids are refused 503 (without a
// fetch more within RetryAfter).
func TestHeldKeysWhileRefetchFails(t *testing.T) {
	for _, trouble := range []string{"down", "hanging"} {
		t.Run(trouble, func(t *testing.T) {
			p := idptest.Start(t)
			// No client timeout: the fetch's own bound (timeout) is all.
			v := New(config.Auth{Issuer: p.URL, JWKSURL: p.URL + "/jwks", Audience: audience}, &http.Client{})
			clock := time.Now()
			v.keys.now = func() time.Time { return clock }
			v.keys.timeout = time.Hour // a hanging refetch outlasts the test: released by the provider's cleanup
			token := func(sub, kid string) []string {
				return bearer(p.Sign(t, p.Claims(sub, audience, ""), kid, jose.RS256))
			}
			if _, err := authorize(t, v, token("alice", "rsa1")); err != nil {
				t.Fatal(err)
			}
			clock = clock.Add(RefetchEvery) // an unknown kid may refetch
			switch trouble {
			case "down":
				p.SetDown(true)
				_, err := authorize(t, v, token("mallory", "rotated"))
				var e *Error
				if !errors.As(err, &e) || !e.Unavailable {
					t.Fatalf("an unknown kid while the provider is down: %v, want 503 unavailable", err)
				}
			case "hanging":
				p.SetSlow(true)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					v.Authorize(ctx, token("mallory", "rotated"))
				}()
				defer func() { cancel(); <-done }()
				for deadline := time.Now().Add(time.Minute); p.JWKSHits.Load() < 2; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the unknown kid did not refetch the key set")
					}
				}
			}
			hits := p.JWKSHits.Load()
			// A fresh token (not in the verified cache) of a held kid, while
			// the refetch failed or still hangs: no wait for it (the refetch
			// hangs for the test's life; a wait would end with ctx).
			ctx, cancel := context.WithTimeout(context.Background(), 3*FetchTimeout)
			defer cancel()
			c, err := v.Authorize(ctx, token("bob", "rsa1"))
			if err != nil || c.Subject != "bob" {
				t.Fatalf("a held kid while the refetch is %s: %+v, %v; want bob verified at once", trouble, c, err)
			}
			if trouble == "down" {
				_, err := authorize(t, v, token("mallory", "invented"))
				var e *Error
				if !errors.As(err, &e) || !e.Unavailable || p.JWKSHits.Load() != hits {
					t.Errorf("another unknown kid within RetryAfter: %v, %d fetches more; want 503 at once, none", err, p.JWKSHits.Load()-hits)
				}
			}
		})
	}
}

// TestEncryptionKeyNotForSignatures (issue 37 item 26): a key set whose
// keys are marked for encryption (use "enc") holds no key to verify a
// signature with: its tokens are refused; marked "sig", or with no use,
// they verify.
func TestEncryptionKeyNotForSignatures(t *testing.T) {
	for _, use := range []string{"sig", "", "enc"} {
		t.Run("use="+use, func(t *testing.T) {
			p := idptest.Start(t)
			p.SetUse(use)
			v := newVerifier(p, p.URL+"/jwks")
			_, err := authorize(t, v, bearer(p.Token(t, "alice", audience, "")))
			if use != "enc" {
				if err != nil {
					t.Errorf("a token of a key with use %q: %v, want verified", use, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Status == http.StatusOK {
				t.Errorf("a token of a key with use enc: %v, want refused", err)
			}
		})
	}
}

// TestIssuerTrailingSlash (issue 37 item 2): an issuer configured with a
// trailing slash (Auth0's https://TENANT.auth0.com/) is the iss its
// tokens carry and its discovery document names: compared exactly as
// configured, through discovery and through jwks_url; a token whose iss
// lacks the slash is another issuer's.
func TestIssuerTrailingSlash(t *testing.T) {
	p := idptest.Start(t)
	iss := p.URL + "/"
	p.SetIssuer(iss)
	for _, jwks := range []string{"", "\n  jwks_url: " + p.URL + "/jwks"} {
		yaml := "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods: {query: {}}\nauth:\n  issuer: \"" + iss + "\"\n  audience: " + audience + "\n  doors: [agent_platform]" + jwks + "\n"
		cfg, err := config.Parse("sidecar.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		v := New(cfg.Auth, nil)
		c := p.Claims("alice", audience, "")
		c.Issuer = iss
		caller, err := authorize(t, v, bearer(p.Sign(t, c, "rsa1", jose.RS256)))
		if err != nil || caller.Issuer != iss {
			t.Fatalf("jwks_url %q: a token of %s: %+v, %v; want verified", jwks, iss, caller, err)
		}
		c.Issuer = p.URL
		_, err = authorize(t, v, bearer(p.Sign(t, c, "rsa1", jose.RS256)))
		if err == nil || !strings.Contains(err.Error(), "not issued by "+iss) {
			t.Errorf("jwks_url %q: a token of %s: %v, want refused as another issuer's", jwks, p.URL, err)
		}
	}
}

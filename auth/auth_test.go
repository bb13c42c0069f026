package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/idptest"
)

const audience = "https://agent.example.com"

func newVerifier(p *idptest.IdP, jwksURL string) *Verifier {
	return New(config.Auth{Issuer: p.URL, JWKSURL: jwksURL, Audience: audience}, nil)
}

func bearer(tok string) []string { return []string{"Bearer " + tok} }

// authorize is v's answer to header within a bound the test sets: a
// verification must never wait past FetchTimeout.
func authorize(t *testing.T, v *Verifier, header []string) (*Caller, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*FetchTimeout)
	defer cancel()
	c, err := v.Authorize(ctx, header)
	if ctx.Err() != nil {
		t.Fatal("Authorize hung past three fetch timeouts")
	}
	return c, err
}

// TestAuthorize: good tokens (RSA and EC keys, through discovery and
// through jwks_url) give the caller's subject and scopes; every hostile
// one is refused 401 with invalid_token or invalid_request and a reason
// that names the check, never the token.
func TestAuthorize(t *testing.T) {
	p := idptest.Start(t)
	for _, jwks := range []string{"", p.URL + "/jwks"} {
		v := newVerifier(p, jwks)
		for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.ES256} {
			kid := map[jose.SignatureAlgorithm]string{jose.RS256: "rsa1", jose.ES256: "ec1"}[alg]
			c, err := authorize(t, v, bearer(p.Sign(t, p.Claims("alice", audience, "tools:read tools:call"), kid, alg)))
			if err != nil {
				t.Fatalf("jwks_url %q, %s: %v", jwks, alg, err)
			}
			if c.Subject != "alice" || strings.Join(c.Scopes, " ") != "tools:read tools:call" || !c.HasScopes([]string{"tools:call"}) || c.HasScopes([]string{"admin"}) {
				t.Errorf("caller = %+v", c)
			}
		}
	}

	v := newVerifier(p, "")
	at := func(d time.Duration) *jwt.NumericDate { return jwt.NewNumericDate(time.Now().Add(d)) }
	with := func(f func(c *idptest.Claims)) string {
		c := p.Claims("alice", audience, "tools:read tools:call")
		f(&c)
		return p.Sign(t, c, "rsa1", jose.RS256)
	}
	hs := func(der bool) string {
		return p.PublicHMAC(t, p.Claims("alice", audience, "tools:read tools:call"), der)
	}
	b64 := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	none := idptest.Unsigned(t, p.Claims("alice", audience, "tools:read tools:call"))
	good := with(func(*idptest.Claims) {})
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + b64(func() idptest.Claims {
		c := p.Claims("alice", audience, "tools:read tools:call")
		c.Subject = "mallory"
		return c
	}()) + "." + parts[2]

	tests := []struct {
		name   string
		header []string
		code   string
		want   string
	}{
		{"no header", nil, CodeNone, "requires a bearer token"},
		{"basic", []string{"Basic YWxpY2U6cHc="}, CodeInvalidRequest, `scheme "Basic" is not Bearer`},
		{"two headers", []string{"Bearer " + good, "Bearer " + good}, CodeInvalidRequest, "more than one"},
		{"not a jwt", bearer("opaque-token"), CodeInvalidToken, "not a JWT"},
		{"garbage jwt", bearer("a.b.c"), CodeInvalidToken, "not a well-formed signed JWT"},
		{"expired", bearer(with(func(c *idptest.Claims) { c.Expiry = at(-2 * Leeway) })), CodeInvalidToken, "the token expired at"},
		{"no exp", bearer(with(func(c *idptest.Claims) { c.Expiry = nil })), CodeInvalidToken, "has no exp"},
		{"no sub", bearer(with(func(c *idptest.Claims) { c.Subject = "" })), CodeInvalidToken, "has no sub"},
		{"not yet valid", bearer(with(func(c *idptest.Claims) { c.NotBefore = at(2 * Leeway) })), CodeInvalidToken, "not valid before"},
		{"wrong audience", bearer(with(func(c *idptest.Claims) { c.Audience = jwt.Audience{"https://other.example.com"} })), CodeInvalidToken, "not for this resource (its aud must include " + audience},
		{"wrong issuer", bearer(with(func(c *idptest.Claims) { c.Issuer = "https://evil.example.com" })), CodeInvalidToken, "was not issued by " + p.URL},
		{"alg none", bearer(none), CodeInvalidToken, "signing algorithm is not allowed"},
		{"hs256 with the public key", bearer(hs(false)), CodeInvalidToken, "signing algorithm is not allowed"},
		{"hs256 with the key's der", bearer(hs(true)), CodeInvalidToken, "signing algorithm is not allowed"},
		{"tampered payload", bearer(tampered), CodeInvalidToken, "signature does not verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := authorize(t, v, tt.header)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Authorize = %+v, %v; want refused", c, err)
			}
			if e.Status != http.StatusUnauthorized || e.Code != tt.code || !strings.Contains(e.Description, tt.want) {
				t.Errorf("refusal = %d %q %q, want 401 %q containing %q", e.Status, e.Code, e.Description, tt.code, tt.want)
			}
			for _, h := range tt.header {
				if tok := strings.TrimPrefix(h, "Bearer "); len(tok) > 16 && strings.Contains(e.Error(), tok[:16]) {
					t.Errorf("the refusal quotes the token: %v", e)
				}
			}
		})
	}

	// Within the leeway, a token just expired or just not yet valid is
	// taken: clocks differ.
	for _, tok := range []string{with(func(c *idptest.Claims) { c.Expiry = at(-Leeway / 3) }), with(func(c *idptest.Claims) { c.NotBefore = at(Leeway / 3) })} {
		if _, err := authorize(t, v, bearer(tok)); err != nil {
			t.Errorf("a token within the leeway: %v", err)
		}
	}
}

// TestUnknownKid: a kid the key set does not hold fetches it once more
// (the provider may have rotated its keys): a rotated key is then taken;
// an invented one is refused, and more invented kids within RefetchEvery
// fetch nothing more.
func TestUnknownKid(t *testing.T) {
	p := idptest.Start(t)
	v := newVerifier(p, p.URL+"/jwks")
	clock := time.Now()
	v.keys.now = func() time.Time { return clock }
	if _, err := authorize(t, v, bearer(p.Sign(t, p.Claims("alice", audience, "tools:read tools:call"), "rsa1", jose.RS256))); err != nil {
		t.Fatal(err)
	}
	if n := p.JWKSHits.Load(); n != 1 {
		t.Fatalf("key set fetched %d times for the first token, want 1", n)
	}

	clock = clock.Add(RefetchEvery)
	p.Publish("rsa1", "rsa2") // rotation
	if _, err := authorize(t, v, bearer(p.Sign(t, p.Claims("alice", audience, "tools:read tools:call"), "rsa2", jose.RS256))); err != nil {
		t.Fatalf("a rotated key: %v", err)
	}
	if n := p.JWKSHits.Load(); n != 2 {
		t.Fatalf("key set fetched %d times after a rotation, want 2", n)
	}

	for i := range 50 {
		_, err := authorize(t, v, bearer(p.Sign(t, p.Claims("alice", audience, "tools:read tools:call"), "invented"+string(rune('a'+i%26)), jose.RS256)))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidToken || !strings.Contains(e.Description, "a key the issuer does not publish") {
			t.Fatalf("an invented kid: %v", err)
		}
	}
	if n := p.JWKSHits.Load(); n != 2 {
		t.Errorf("50 invented kids within RefetchEvery fetched the key set %d more times, want none", n-2)
	}
	clock = clock.Add(RefetchEvery)
	authorize(t, v, bearer(p.Sign(t, p.Claims("alice", audience, "tools:read tools:call"), "invented", jose.RS256)))
	if n := p.JWKSHits.Load(); n != 3 {
		t.Errorf("an invented kid after RefetchEvery: %d fetches in all, want 3", n)
	}
}

// TestProviderDown: a provider that answers 500, or never answers, makes
// a verification fail 503 (Unavailable) within the fetch's bound, and for
// RetryAfter after a failure further tokens fail at once without a fetch;
// back up, tokens verify again.
func TestProviderDown(t *testing.T) {
	p := idptest.Start(t)
	v := newVerifier(p, "")
	clock := time.Now()
	v.keys.now = func() time.Time { return clock }
	v.keys.timeout = 500 * time.Millisecond
	tok := p.Sign(t, p.Claims("alice", audience, "tools:read tools:call"), "rsa1", jose.RS256)

	unavailable := func(what string) {
		t.Helper()
		_, err := authorize(t, v, bearer(tok))
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || !e.Unavailable || !strings.Contains(e.Description, "could not be fetched") {
			t.Fatalf("%s: %v, want 503 unavailable", what, err)
		}
	}
	p.SetDown(true)
	unavailable("provider down")
	hits := p.DiscoveryHits.Load()
	for range 20 {
		unavailable("within RetryAfter")
	}
	if n := p.DiscoveryHits.Load(); n != hits {
		t.Errorf("20 tokens within RetryAfter of a failure fetched %d more times, want none", n-hits)
	}

	clock = clock.Add(RetryAfter)
	p.SetDown(false)
	p.SetSlow(true)
	unavailable("provider hanging") // bounded by the fetch's timeout, not the provider

	clock = clock.Add(RetryAfter)
	p.SetSlow(false)
	if _, err := authorize(t, v, bearer(tok)); err != nil {
		t.Fatalf("provider back: %v", err)
	}
}

// TestDiscoveryIssuerMismatch: a discovery document naming another issuer
// is refused (go-oidc's check), as is one whose jwks_uri is plain http
// off loopback: the keys are then unavailable, never taken.
func TestDiscoveryProblems(t *testing.T) {
	for _, tt := range []struct {
		name   string
		issuer string
	}{
		{"another issuer", "https://evil.example.com"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := idptest.Start(t)
			p.SetIssuer(tt.issuer)
			v := newVerifier(p, "")
			_, err := authorize(t, v, bearer(p.Sign(t, p.Claims("alice", audience, "tools:read tools:call"), "rsa1", jose.RS256)))
			var e *Error
			if !errors.As(err, &e) || !e.Unavailable {
				t.Fatalf("Authorize = %v, want unavailable", err)
			}
		})
	}
}

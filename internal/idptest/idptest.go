// Package idptest is an identity provider on loopback for the tests of
// the doors that check tokens (auth): OpenID discovery and a key set (an
// RSA and an EC key), its fetches counted, able to go down or hang, and
// the access tokens it signs.
package idptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// IdP is the provider. Its URL is the issuer.
type IdP struct {
	URL string
	RSA *rsa.PrivateKey
	EC  *ecdsa.PrivateKey
	// JWKSHits and DiscoveryHits count the fetches.
	JWKSHits, DiscoveryHits atomic.Int64

	srv     *httptest.Server
	release chan struct{}

	mu sync.Mutex
	// down answers 500; slow hangs until the test ends.
	down, slow bool
	// published are the kids the key set publishes ("rs…" the RSA key,
	// "ec…" the EC key).
	published []string
	// issuer is what discovery says the issuer is ("": URL).
	issuer string
	// use is every published key's use member ("sig" unless SetUse).
	use string
}

// Start starts a provider on 127.0.0.1, stopped when the test ends.
func Start(t testing.TB) *IdP {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := &IdP{RSA: rk, EC: ek, published: []string{"rsa1", "ec1"}, use: "sig", release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		p.DiscoveryHits.Add(1)
		if p.wait(w) {
			return
		}
		p.mu.Lock()
		iss := p.issuer
		p.mu.Unlock()
		if iss == "" {
			iss = p.URL
		}
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": p.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		p.JWKSHits.Add(1)
		if p.wait(w) {
			return
		}
		p.mu.Lock()
		var set jose.JSONWebKeySet
		for _, kid := range p.published {
			switch kid[:2] {
			case "rs":
				set.Keys = append(set.Keys, jose.JSONWebKey{Key: &p.RSA.PublicKey, KeyID: kid, Algorithm: "RS256", Use: p.use})
			case "ec":
				set.Keys = append(set.Keys, jose.JSONWebKey{Key: &p.EC.PublicKey, KeyID: kid, Algorithm: "ES256", Use: p.use})
			}
		}
		p.mu.Unlock()
		json.NewEncoder(w).Encode(set)
	})
	p.srv = httptest.NewServer(mux)
	p.URL = p.srv.URL
	t.Cleanup(func() {
		close(p.release)
		p.srv.Close()
	})
	return p
}

// wait answers 500 when the provider is down, hangs until the test ends
// when it is slow; it reports whether it answered.
func (p *IdP) wait(w http.ResponseWriter) bool {
	p.mu.Lock()
	down, slow := p.down, p.slow
	p.mu.Unlock()
	if slow {
		<-p.release
		return true
	}
	if down {
		http.Error(w, "down", http.StatusInternalServerError)
		return true
	}
	return false
}

// SetDown makes the provider answer 500 (or not).
func (p *IdP) SetDown(down bool) { p.mu.Lock(); p.down = down; p.mu.Unlock() }

// SetSlow makes the provider hang (or not).
func (p *IdP) SetSlow(slow bool) { p.mu.Lock(); p.slow = slow; p.mu.Unlock() }

// Publish sets the kids the key set publishes.
func (p *IdP) Publish(kids ...string) { p.mu.Lock(); p.published = kids; p.mu.Unlock() }

// SetUse sets the use member of every key the key set publishes: "sig",
// "enc" (an encryption key, never to verify a signature), "" (none).
func (p *IdP) SetUse(use string) { p.mu.Lock(); p.use = use; p.mu.Unlock() }

// SetIssuer makes discovery name iss as the issuer.
func (p *IdP) SetIssuer(iss string) { p.mu.Lock(); p.issuer = iss; p.mu.Unlock() }

// Claims are an access token's.
type Claims struct {
	jwt.Claims
	Scope string `json:"scope,omitempty"`
}

// Claims are claims of the provider for subject sub and audience aud,
// valid for an hour from a minute ago, with scope.
func (p *IdP) Claims(sub, aud, scope string) Claims {
	now := time.Now()
	return Claims{Claims: jwt.Claims{Issuer: p.URL, Subject: sub, Audience: jwt.Audience{aud},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute))},
		Scope: scope}
}

// Sign is c signed by the provider's key kid with alg (ES256: the EC key,
// else the RSA key).
func (p *IdP) Sign(t testing.TB, c any, kid string, alg jose.SignatureAlgorithm) string {
	t.Helper()
	var key any = p.RSA
	if alg == jose.ES256 {
		key = p.EC
	}
	return sign(t, c, kid, alg, key)
}

// PublicHMAC is c signed HS256, kid rsa1, keyed with the provider's
// public RSA key, its PEM (der false) or its DER, as a verifier that
// trusted the token's alg would key HMAC: the algorithm confusion attack.
func (p *IdP) PublicHMAC(t testing.TB, c any, der bool) string {
	t.Helper()
	key, err := x509.MarshalPKIXPublicKey(&p.RSA.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if !der {
		key = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: key})
	}
	return sign(t, c, "rsa1", jose.HS256, key)
}

// Unsigned is c as a JWT of alg none: no signature.
func Unsigned(t testing.TB, c any) string {
	t.Helper()
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(payload) + "."
}

// sign is c signed with key by alg, its header naming kid.
func sign(t testing.TB, c any, kid string, alg jose.SignatureAlgorithm, key any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Token is a valid RS256 access token for sub, aud and scope.
func (p *IdP) Token(t testing.TB, sub, aud, scope string) string {
	return p.Sign(t, p.Claims(sub, aud, scope), "rsa1", jose.RS256)
}

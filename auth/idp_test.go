package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// idp is an identity provider on loopback for the tests: OIDC discovery
// and a key set (an RSA and an EC key), its fetches counted, able to go
// down (500) or hang until the test ends.
type idp struct {
	srv             *httptest.Server
	rsa             *rsa.PrivateKey
	ec              *ecdsa.PrivateKey
	jwksHits        atomic.Int64
	discoveryHits   atomic.Int64
	mu              sync.Mutex
	down, slow      bool
	published       []string // kids the key set publishes
	release         chan struct{}
	discoveryIssuer string // "" : its own URL
}

func newIdP(t *testing.T) *idp {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{rsa: rk, ec: ek, published: []string{"rsa1", "ec1"}, release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		p.discoveryHits.Add(1)
		if p.wait(w) {
			return
		}
		iss := p.srv.URL
		if p.discoveryIssuer != "" {
			iss = p.discoveryIssuer
		}
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": p.srv.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		p.jwksHits.Add(1)
		if p.wait(w) {
			return
		}
		p.mu.Lock()
		var set jose.JSONWebKeySet
		for _, kid := range p.published {
			switch kid[:2] {
			case "rs":
				set.Keys = append(set.Keys, jose.JSONWebKey{Key: &p.rsa.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
			case "ec":
				set.Keys = append(set.Keys, jose.JSONWebKey{Key: &p.ec.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"})
			}
		}
		p.mu.Unlock()
		json.NewEncoder(w).Encode(set)
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(p.release)
		p.srv.Close()
	})
	return p
}

// wait answers 500 when the provider is down, hangs until the test ends
// when it is slow; it reports whether it answered.
func (p *idp) wait(w http.ResponseWriter) bool {
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

func (p *idp) set(f func(p *idp)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// claims are a token's, with the usual ones filled in for now.
type claims struct {
	jwt.Claims
	Scope string `json:"scope,omitempty"`
}

func (p *idp) claims(aud string) claims {
	now := time.Now()
	return claims{Claims: jwt.Claims{Issuer: p.srv.URL, Subject: "alice", Audience: jwt.Audience{aud},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute))},
		Scope: "tools:read tools:call"}
}

// sign is c signed by the provider's key kid with alg.
func (p *idp) sign(t *testing.T, c any, kid string, alg jose.SignatureAlgorithm) string {
	t.Helper()
	var key any = p.rsa
	if alg == jose.ES256 {
		key = p.ec
	}
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

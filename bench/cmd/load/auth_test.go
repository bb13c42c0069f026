package main

import (
	"context"
	"testing"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/config"
)

// TestIdPTokens: the auth rows' provider signs distinct tokens that the
// sidecar's verifier takes for the rows' audience, discovering its keys.
func TestIdPTokens(t *testing.T) {
	p, err := startIdP()
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	toks, err := p.tokens("bench", 8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	v := auth.New(config.Auth{Issuer: p.url, Audience: authAudience}, nil)
	for _, tok := range toks {
		if seen[tok] {
			t.Fatalf("token %q twice", tok)
		}
		seen[tok] = true
		c, err := v.Authorize(context.Background(), []string{"Bearer " + tok})
		if err != nil || c.Subject != "bench" {
			t.Fatalf("Authorize = %+v, %v; want subject bench", c, err)
		}
	}
	other := auth.New(config.Auth{Issuer: p.url, Audience: "https://other.invalid"}, nil)
	if _, err := other.Authorize(context.Background(), []string{"Bearer " + toks[0]}); err == nil {
		t.Error("a token for the rows' audience taken for another")
	}
}

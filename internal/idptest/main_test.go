package idptest

import (
	"encoding/json"
	"net/http"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStart: discovery names the issuer and key set, which holds both
// keys; down, it answers 500.
func TestStart(t *testing.T) {
	p := Start(t)
	resp, err := http.Get(p.URL + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	var set struct{ Keys []map[string]any }
	json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	if len(set.Keys) != 2 || p.JWKSHits.Load() != 1 {
		t.Errorf("key set %v, %d hits", set, p.JWKSHits.Load())
	}
	p.SetDown(true)
	resp, err = http.Get(p.URL + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("down: %d", resp.StatusCode)
	}
}

package devapi

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestPassthroughForwarded: the contract listener is told the URL the
// caller asked, as a proxy in front tells it: X-Forwarded-Host and
// -Proto the dev listener's, X-Forwarded-Prefix the passthrough's path
// before the container's ("…/api", whatever follows); what a client sent
// in them is replaced.
func TestPassthroughForwarded(t *testing.T) {
	dev, _ := recordedDev(t)
	host := "127.0.0.1:" + devPort(dev)
	for _, p := range []string{"/a2a/.well-known/agent-card.json", "/a2a", "/", ""} {
		code, _, body := send(t, http.MethodGet, dev, through(p), "", map[string]string{
			"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https", "X-Forwarded-Prefix": "/evil",
		}, "")
		var got struct{ Header http.Header }
		if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
			t.Fatalf("GET %s: %d %s %v", through(p), code, body, err)
		}
		for k, want := range map[string]string{"X-Forwarded-Host": host, "X-Forwarded-Proto": "http", "X-Forwarded-Prefix": through("")} {
			if v := got.Header.Values(k); len(v) != 1 || v[0] != want {
				t.Errorf("GET %s: the contract got %s %q, want %q", through(p), k, v, want)
			}
		}
	}
}

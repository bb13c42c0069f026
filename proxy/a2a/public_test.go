package a2a

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestCardURLTrustedProxies: a peer trusted_proxies does not name cannot
// set the card's url with X-Forwarded-Host, -Proto or -Prefix; one it
// names can.
func TestCardURLTrustedProxies(t *testing.T) {
	cardURL := func(d *Door) string {
		srv := httptest.NewServer(d.Handler(func(string, bool) http.Handler { return http.NotFoundHandler() }, http.NotFoundHandler(), writeRefusal(d)))
		defer srv.Close()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+RouteCard, nil)
		req.Host = "agent.internal:9000"
		req.Header.Set("X-Forwarded-Host", "evil.example")
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("X-Forwarded-Prefix", "/phish")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c card
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		return c.URL
	}
	untrusted := newDoor(t, testConfig(t), Options{Method: "query"})
	if got, want := cardURL(untrusted), "http://agent.internal:9000/"; got != want {
		t.Errorf("card url from an untrusted peer with X-Forwarded-* = %q, want %q", got, want)
	}
	trusted := newDoor(t, testConfig(t), Options{Method: "query", Public: trustedPeers})
	if got, want := cardURL(trusted), "https://evil.example/phish/"; got != want {
		t.Errorf("card url from a trusted proxy with X-Forwarded-* = %q, want %q", got, want)
	}
	other := newDoor(t, testConfig(t), Options{Method: "query", Public: core.Public{Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}})
	if got, want := cardURL(other), "http://agent.internal:9000/"; got != want {
		t.Errorf("card url from a peer outside trusted_proxies with X-Forwarded-* = %q, want %q", got, want)
	}
}

// trustedPeers trusts the test's peers: httptest.NewRequest's and a
// loopback client's.
var trustedPeers = core.Public{Proxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("127.0.0.0/8")}}

// TestMountEscapedSlash: a mount matches the escaped path, as the door's
// REST routes do, so /a2a%2F… is not under the mount /a2a: whichever
// binding the path would name, the listener's other handler answers it
// (here a 404), never the door with a path it reads another way.
func TestMountEscapedSlash(t *testing.T) {
	url, _, _ := serveAt(t, "query", testMap, startAgent(t), "/a2a")
	base := strings.TrimSuffix(url, "/a2a")
	const send = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
	const rest = `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`
	for _, tt := range []struct{ method, path, body string }{
		{http.MethodPost, "/a2a%2F", send},
		{http.MethodPost, "/a2a%2Fmessage:send", rest},
		{http.MethodPost, "/a2a%2Fv1%2Fmessage:send", rest},
		{http.MethodGet, "/a2a%2F.well-known%2Fagent-card.json", ""},
	} {
		req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
		req.URL.Opaque = "//" + req.URL.Host + tt.path // as sent, not re-escaped
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || string(b) != "404 page not found\n" {
			t.Errorf("%s %s = %d %.80q, want the listener's 404, not the door's answer", tt.method, tt.path, resp.StatusCode, b)
		}
	}
}

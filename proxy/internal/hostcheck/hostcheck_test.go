package hostcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// on is a request over a connection whose local address is ip:port.
func on(method, host string, ip net.IP, port int, header ...string) *http.Request {
	r := httptest.NewRequest(method, "/", http.NoBody)
	r.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: ip, Port: port}))
}

// TestCheck: the rules, row by row.
func TestCheck(t *testing.T) {
	lo, lo6, pub := net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(192, 0, 2, 7)
	g := Guard{Trusted: []string{"agents.example.com"}}
	tests := []struct {
		name string
		r    *http.Request
		ok   bool
	}{
		{"127.0.0.1 with the port", on("POST", "127.0.0.1:8080", lo, 8080), true},
		{"localhost, any case", on("POST", "LocalHost:8080", lo, 8080), true},
		{"[::1] with the port", on("POST", "[::1]:8080", lo6, 8080), true},
		{"another loopback IP", on("GET", "127.1.2.3:8080", lo, 8080), true},
		{"no port: 80", on("GET", "localhost", lo, 80), true},
		// kubectl port-forward and ssh -L: the port is the tunnel's.
		{"localhost with no port on another port", on("POST", "localhost", lo, 8080), true},
		{"127.0.0.1 with no port", on("POST", "127.0.0.1", lo, 8080), true},
		{"[::1] with no port", on("POST", "[::1]", lo6, 8080), true},
		{"[::1] with another port", on("POST", "[::1]:9000", lo6, 8080), true},
		{"localhost with a tunnel's port", on("POST", "localhost:9000", lo, 8080), true},
		{"a loopback IP with another port", on("GET", "127.0.0.1:1", lo, 8080), true},
		{"a name under localhost", on("GET", "agent.localhost:8080", lo, 8080), false},
		{"localhost with a trailing dot", on("GET", "localhost.:8080", lo, 8080), false},
		{"a bracketed IPv4", on("GET", "[127.0.0.1]:8080", lo, 8080), false},
		{"a zoned IPv6", on("GET", "[::1%25lo]:8080", lo6, 8080), false},
		{"[::1] with an empty port", on("GET", "[::1]:", lo6, 8080), false},
		{"a rebinding name", on("GET", "rebind.test:8080", lo, 8080), false},
		{"a name ending in localhost's labels", on("GET", "evil.localhost.example:8080", lo, 8080), false},
		{"an unbracketed IPv6", on("GET", "::1:8080", lo6, 8080), false},
		{"an empty Host", on("GET", "", lo, 8080), false},
		{"a port not a number", on("GET", "localhost:80x", lo, 80), false},
		{"a trusted name", on("POST", "agents.example.com", lo, 8080), true},
		{"a trusted name, any port and case", on("POST", "Agents.Example.com:443", lo, 8080), true},
		{"a name ending like a trusted one", on("GET", "evil-agents.example.com", lo, 8080), false},
		{"any Host off loopback", on("POST", "rebind.test", pub, 8080), true},
		{"own Origin", on("POST", "127.0.0.1:8080", lo, 8080, "Origin", "http://127.0.0.1:8080"), true},
		// A WebSocket upgrade is a GET a page reads the answers of.
		{"a GET with another site's Origin", on("GET", "127.0.0.1:8080", lo, 8080, "Origin", "https://evil.example"), true},
		{"an upgrade with another site's Origin", on("GET", "127.0.0.1:8080", lo, 8080, "Origin", "https://evil.example", "Upgrade", "websocket"), false},
		{"an upgrade listed among others", on("GET", "127.0.0.1:8080", lo, 8080, "Origin", "https://evil.example", "Upgrade", "h2c, WebSocket"), false},
		{"an upgrade from its own page", on("GET", "127.0.0.1:8080", lo, 8080, "Origin", "http://127.0.0.1:8080", "Upgrade", "websocket"), true},
		{"own Origin through a tunnel", on("POST", "localhost:9000", lo, 8080, "Origin", "http://localhost:9000"), true},
		{"own Origin under [::1] with no port", on("POST", "[::1]", lo6, 8080, "Origin", "http://[::1]"), true},
		{"another local site's Origin", on("POST", "127.0.0.1:8080", lo, 8080, "Origin", "http://127.0.0.1:3000"), false},
		{"a loopback Origin with another name", on("POST", "127.0.0.1:8080", lo, 8080, "Origin", "http://localhost:8080"), false},
		{"own Origin, https", on("POST", "agents.example.com", pub, 8080, "Origin", "https://agents.example.com"), true},
		{"a trusted name's Origin", on("POST", "127.0.0.1:8080", lo, 8080, "Origin", "https://agents.example.com"), true},
		{"a foreign Origin", on("POST", "127.0.0.1:8080", lo, 8080, "Origin", "https://evil.example"), false},
		{"a foreign Origin off loopback: a runtime's front end may pass a page's on", on("DELETE", "agents.example.com", pub, 8080, "Origin", "https://evil.example"), true},
		{"a null Origin", on("POST", "127.0.0.1:8080", lo, 8080, "Origin", "null"), false},
		{"an Origin with a path", on("POST", "127.0.0.1:8080", lo, 8080, "Origin", "http://127.0.0.1:8080/x"), false},
		{"a foreign Origin on a GET", on("GET", "127.0.0.1:8080", lo, 8080, "Origin", "https://evil.example"), true},
	}
	for _, tt := range tests {
		f, ok := g.Check(tt.r)
		if ok != tt.ok || !ok && (f.Status != http.StatusForbidden || f.Reason != "PERMISSION_DENIED" || f.Message == "") {
			t.Errorf("%s: Check = %v %+v, want %v (403 PERMISSION_DENIED when refused)", tt.name, ok, f, tt.ok)
		}
	}
	// Two Origin headers: refused whatever they say.
	r := on("POST", "127.0.0.1:8080", lo, 8080)
	r.Header["Origin"] = []string{"http://127.0.0.1:8080", "http://127.0.0.1:8080"}
	if _, ok := g.Check(r); ok {
		t.Error("two Origin headers passed")
	}
	// A Unix socket (no TCP address) is not loopback: no Host to check.
	if _, ok := g.Check(httptest.NewRequest("GET", "http://rebind.test/", nil)); !ok {
		t.Error("a request with no TCP local address was refused")
	}
}

// TestCheckAllocates: a call that passes (a loopback Host, no Origin)
// costs no allocation; it is checked on every call.
func TestCheckAllocates(t *testing.T) {
	g := Guard{Trusted: []string{"agents.example.com"}}
	for _, r := range []*http.Request{
		on("POST", "127.0.0.1:8080", net.IPv4(127, 0, 0, 1), 8080),
		on("POST", "[::1]:8080", net.IPv6loopback, 8080),
		on("POST", "[::1]", net.IPv6loopback, 8080),
		on("POST", "localhost:9000", net.IPv4(127, 0, 0, 1), 8080),
		on("POST", "agents.example.com", net.IPv4(127, 0, 0, 1), 8080),
		on("POST", "agents.example.com", net.IPv4(192, 0, 2, 7), 8080),
	} {
		if n := testing.AllocsPerRun(100, func() { g.Check(r) }); n != 0 {
			t.Errorf("Check of Host %s allocates %v times, want 0", r.Host, n)
		}
	}
}

// TestOriginEverywhere: a door that asks (MCP, OpenAI) holds a request's
// Origin to the rule off loopback too, where the Host is not checked:
// an Origin equal to the Host proves nothing there (after DNS rebinding
// the page's name is the Host), so only a page under a loopback name
// (its own: a tunnel's) or of a trusted name passes.
func TestOriginEverywhere(t *testing.T) {
	pub := net.IPv4(192, 0, 2, 7)
	g := Guard{OriginEverywhere: true, Trusted: []string{"agents.example.com"}}
	tests := []struct {
		name string
		r    *http.Request
		ok   bool
	}{
		{"a foreign Origin", on("DELETE", "agents.example.com", pub, 8080, "Origin", "https://evil.example"), false},
		{"a rebinding page: its Origin is the Host", on("POST", "rebind.test:8080", pub, 8080, "Origin", "http://rebind.test:8080"), false},
		{"a LAN address's own Origin", on("POST", "192.0.2.7:8080", pub, 8080, "Origin", "http://192.0.2.7:8080"), false},
		{"a trusted name's Origin", on("POST", "agents.example.com", pub, 8080, "Origin", "https://agents.example.com"), true},
		{"a trusted name's Origin, another Host", on("POST", "192.0.2.7:8080", pub, 8080, "Origin", "https://agents.example.com"), true},
		{"a tunnel's page (ssh -L to this address)", on("POST", "localhost:9000", pub, 8080, "Origin", "http://localhost:9000"), true},
		{"a local page of another port", on("POST", "localhost:9000", pub, 8080, "Origin", "http://localhost:6274"), false},
		{"no Origin", on("POST", "rebind.test:8080", pub, 8080), true},
		{"a rebinding page's GET", on("GET", "rebind.test:8080", pub, 8080, "Origin", "http://rebind.test:8080"), true},
	}
	for _, tt := range tests {
		if _, ok := g.Check(tt.r); ok != tt.ok {
			t.Errorf("%s: Check = %v, want %v", tt.name, ok, tt.ok)
		}
	}
	// A door that holds Origin only on loopback lets any through off it:
	// a runtime's front end may pass on its page's.
	if _, ok := (Guard{}).Check(on("POST", "rebind.test:8080", pub, 8080, "Origin", "http://rebind.test:8080")); !ok {
		t.Error("an Origin off loopback was refused by a door that holds it only on loopback")
	}
}

// TestSplit: a Host header's name and port, IPv6 in brackets with and
// without a port.
func TestSplit(t *testing.T) {
	tests := []struct {
		host, name string
		port       int
		ok         bool
	}{
		{"localhost", "localhost", 80, true},
		{"localhost:9000", "localhost", 9000, true},
		{"127.0.0.1", "127.0.0.1", 80, true},
		{"[::1]", "::1", 80, true},
		{"[::1]:8080", "::1", 8080, true},
		{"[fe80::1%25eth0]:1", "fe80::1%25eth0", 1, true},
		{"[::1]:", "", 0, false},
		{"[::1", "", 0, false},
		{"::1]", "", 0, false},
		{"::1", "", 0, false},
		{"::1:8080", "", 0, false},
		{"localhost:", "", 0, false},
		{"localhost:0", "", 0, false},
		{"localhost:65536", "", 0, false},
		{"localhost:+80", "", 0, false},
		{"[]:80", "", 0, false},
		{":80", "", 0, false},
		{"", "", 0, false},
	}
	for _, tt := range tests {
		name, port, ok := Split(tt.host)
		if ok != tt.ok || ok && (name != tt.name || port != tt.port) {
			t.Errorf("Split(%q) = %q %d %v, want %q %d %v", tt.host, name, port, ok, tt.name, tt.port, tt.ok)
		}
	}
}

// TestJSONType: what a call's Content-Type must be on a door that takes
// only JSON.
func TestJSONType(t *testing.T) {
	tests := []struct {
		values []string
		ok     bool
	}{
		{[]string{"application/json"}, true},
		{[]string{"Application/JSON; charset=utf-8"}, true},
		{[]string{" application/json ;charset=UTF-8"}, true},
		{[]string{"application/a2a+json"}, true},
		{[]string{"application/json,application/json"}, true}, // the platform's duplicate
		{[]string{"application/json", "application/json"}, true},
		{nil, false},
		{[]string{""}, false},
		{[]string{"text/plain"}, false},
		{[]string{"text/plain;charset=UTF-8"}, false},
		{[]string{"application/x-www-form-urlencoded"}, false},
		{[]string{"multipart/form-data; boundary=x"}, false},
		{[]string{"application/json", "text/plain"}, false},
		{[]string{"application/json,text/plain"}, false},
		{[]string{"text/json"}, false},
		{[]string{"application/jsonx"}, false},
		{[]string{"application/+json"}, false},
		{[]string{"application/a/b+json"}, false},
		{[]string{"application/"}, false},
		{[]string{"application/json5"}, false},
	}
	for _, tt := range tests {
		if got := JSONType(tt.values); got != tt.ok {
			t.Errorf("JSONType(%q) = %v, want %v", tt.values, got, tt.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { JSONType([]string{"application/json; charset=utf-8"}) }); n != 0 {
		t.Errorf("JSONType allocates %v times, want 0", n)
	}
}

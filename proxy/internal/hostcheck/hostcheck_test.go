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
		{"no port on another port", on("GET", "localhost", lo, 8080), false},
		{"another port", on("GET", "127.0.0.1:1", lo, 8080), false},
		{"a rebinding name", on("GET", "rebind.test:8080", lo, 8080), false},
		{"a name under localhost", on("GET", "evil.localhost.example:8080", lo, 8080), false},
		{"an unbracketed IPv6", on("GET", "::1:8080", lo6, 8080), false},
		{"an empty Host", on("GET", "", lo, 8080), false},
		{"a port not a number", on("GET", "localhost:80x", lo, 80), false},
		{"a trusted name", on("POST", "agents.example.com", lo, 8080), true},
		{"a trusted name, any port and case", on("POST", "Agents.Example.com:443", lo, 8080), true},
		{"a name ending like a trusted one", on("GET", "evil-agents.example.com", lo, 8080), false},
		{"any Host off loopback", on("POST", "rebind.test", pub, 8080), true},
		{"own Origin", on("POST", "127.0.0.1:8080", lo, 8080, "Origin", "http://127.0.0.1:8080"), true},
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
		on("POST", "agents.example.com", net.IPv4(127, 0, 0, 1), 8080),
		on("POST", "agents.example.com", net.IPv4(192, 0, 2, 7), 8080),
	} {
		if n := testing.AllocsPerRun(100, func() { g.Check(r) }); n != 0 {
			t.Errorf("Check of Host %s allocates %v times, want 0", r.Host, n)
		}
	}
}

// TestOriginEverywhere: a door that asks (MCP, OpenAI) holds a request's
// Origin to the rule off loopback too.
func TestOriginEverywhere(t *testing.T) {
	pub := net.IPv4(192, 0, 2, 7)
	g := Guard{OriginEverywhere: true}
	if _, ok := g.Check(on("DELETE", "agents.example.com", pub, 8080, "Origin", "https://evil.example")); ok {
		t.Error("a foreign Origin off loopback passed a door that holds Origin everywhere")
	}
	if _, ok := g.Check(on("POST", "agents.example.com", pub, 8080, "Origin", "https://agents.example.com")); !ok {
		t.Error("its own Origin off loopback was refused")
	}
	if _, ok := g.Check(on("POST", "agents.example.com", pub, 8080)); !ok {
		t.Error("no Origin off loopback was refused")
	}
}

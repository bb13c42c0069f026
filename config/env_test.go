package config_test

import (
	"strings"
	"testing"
)

// TestURLFromEnvironment: ${NAME} references work in every URL the file
// configures, as in headers.set; an unset variable is a problem naming it
// at the URL's line.
func TestURLFromEnvironment(t *testing.T) {
	t.Setenv("SIDECAR_TEST_AGENT_URL", "http://127.0.0.1:8000")
	t.Setenv("SIDECAR_TEST_IDP", "idp.example.com")
	t.Setenv("SIDECAR_TEST_PUBLIC", "https://agents.example.com/price/")
	const methods = "methods: {query: {}, stream_query: {mode: stream}}\nprotocols:\n  a2a: {method: stream_query, url: \"${SIDECAR_TEST_PUBLIC}\"}\n"
	yaml := "upstream: {url: \"${SIDECAR_TEST_AGENT_URL}\"}\n" + methods +
		"auth: {issuer: \"https://${SIDECAR_TEST_IDP}\", jwks_url: \"https://${SIDECAR_TEST_IDP}/jwks\", audience: \"${SIDECAR_TEST_PUBLIC}\"}\n"
	c, err := Parse("sidecar.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("Parse(%q): %v", yaml, err)
	}
	if c.Upstream.Address != "127.0.0.1:8000" || c.Auth.Issuer != "https://idp.example.com" || c.Auth.JWKSURL != "https://idp.example.com/jwks" ||
		c.Auth.Audience != "https://agents.example.com/price/" {
		t.Errorf("Parse(%q) = upstream %q, auth %+v", yaml, c.Upstream.Address, c.Auth)
	}
	tests := []struct{ name, yaml, want string }{
		{"upstream.url", "upstream: {url: \"${SIDECAR_SURELY_UNSET_URL}\"}\n" + methods,
			`sidecar.yaml:1: upstream.url: environment variable SIDECAR_SURELY_UNSET_URL is not set`},
		{"auth.issuer", "upstream: {url: \"${SIDECAR_TEST_AGENT_URL}\"}\n" + methods + "auth: {issuer: \"${SIDECAR_SURELY_UNSET_URL}\", audience: urn:a}\n",
			`sidecar.yaml:5: auth.issuer: environment variable SIDECAR_SURELY_UNSET_URL is not set`},
		{"auth.jwks_url", "upstream: {url: \"${SIDECAR_TEST_AGENT_URL}\"}\n" + methods +
			"auth: {issuer: \"https://${SIDECAR_TEST_IDP}\", jwks_url: \"${SIDECAR_SURELY_UNSET_URL}/jwks\", audience: urn:a}\n",
			`sidecar.yaml:5: auth.jwks_url: environment variable SIDECAR_SURELY_UNSET_URL is not set`},
		{"protocols.a2a.url", "upstream: {url: \"${SIDECAR_TEST_AGENT_URL}\"}\nmethods: {stream_query: {mode: stream}}\nprotocols:\n  a2a: {method: stream_query, url: \"${SIDECAR_SURELY_UNSET_URL}\"}\n",
			`sidecar.yaml:4: protocols.a2a.url: environment variable SIDECAR_SURELY_UNSET_URL is not set`},
		{"stray", "upstream: {url: \"${SIDECAR_TEST_AGENT_URL\"}\n" + methods, `sidecar.yaml:1: upstream.url: a "${" that is no reference`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("sidecar.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %v, want a problem containing %q", tt.yaml, err, tt.want)
			}
		})
	}
}

// TestTrustedProxies: trusted_proxies takes IP addresses and CIDR
// prefixes, printed back as prefixes; anything else is a problem at its
// line.
func TestTrustedProxies(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(mountBase+"trusted_proxies: [10.0.0.0/8, 192.168.1.7, \"::1\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range c.TrustedProxies {
		got = append(got, p.String())
	}
	if strings.Join(got, " ") != "10.0.0.0/8 192.168.1.7/32 ::1/128" {
		t.Errorf("TrustedProxies = %v", got)
	}
	if again, err := Parse("printed.yaml", c.Expanded()); err != nil || len(again.TrustedProxies) != 3 {
		t.Errorf("printed and parsed again: %v, %v\n%s", again.TrustedProxies, err, c.Expanded())
	}
	for _, bad := range []string{"[proxy.example.com]", "[10.0.0.0/33]", "10.0.0.1"} {
		if _, err := Parse("sidecar.yaml", []byte(mountBase+"trusted_proxies: "+bad+"\n")); err == nil || !strings.Contains(err.Error(), "sidecar.yaml:3: trusted_proxies") {
			t.Errorf("trusted_proxies: %s = %v, want a problem at line 3", bad, err)
		}
	}
}

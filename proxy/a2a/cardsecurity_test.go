package a2a

import "testing"

// TestCardDiscoveryURL (issue 37 item 2): the card's oidc scheme names
// the issuer's discovery document as OpenID Connect Discovery §4 builds
// it, the issuer's trailing slash (Auth0's) taken off before the path.
func TestCardDiscoveryURL(t *testing.T) {
	for _, iss := range []string{"https://tenant.auth0.com/", "https://tenant.auth0.com"} {
		schemes, _, _ := security(iss, "https://agent.example.com")
		if got, want := schemes["oidc"].OpenIDConnectURL, "https://tenant.auth0.com/.well-known/openid-configuration"; got != want {
			t.Errorf("security(%q) names %q, want %q", iss, got, want)
		}
	}
}

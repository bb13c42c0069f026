// Package auth checks who calls a protected door: the caller's JWT bearer
// token, verified against the keys of the identity provider the auth
// section names (discovered through OIDC, or its jwks_url), for its
// issuer, audience and time, with the asymmetric algorithms its keys
// allow. Discovery is go-oidc's, the signatures go-jose's; what is kept
// here is the cache of keys and the bounds on fetching them, so that
// neither a caller naming unknown keys nor a provider that is down or slow
// can make the doors wait or hammer it.
package auth

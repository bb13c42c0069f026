package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/sidecar-dev/sidecar/config"
)

// Leeway is how far past its exp, or before its nbf, a token is still
// taken: clocks of the provider and the replica differ a little.
const Leeway = 30 * time.Second

// algorithms are the signature algorithms a token may use: the
// asymmetric ones. Never none; never HMAC, whose "secret" would be the
// provider's public key (the algorithm confusion attack).
var algorithms = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.ES256, oidc.ES384, oidc.ES512, oidc.EdDSA,
}

// Caller is who a verified token says calls: what the doors log, bind
// state to and pass to the agent, never the token itself.
type Caller struct {
	// Issuer is the token's iss.
	Issuer string
	// Subject is the token's sub.
	Subject string
	// Scopes are its scope (space-separated) or scp claim.
	Scopes []string
	// ClientID is its client_id or azp claim, "" when it has none.
	ClientID string
	// Expiry is its exp.
	Expiry time.Time
}

// ID is who the caller is, for every issuer alike: its issuer and subject,
// the key the doors bind a caller's state (MCP sessions, A2A tasks) and
// per-caller limits to. A subject alone is unique only within its issuer.
func (c *Caller) ID() string { return c.Issuer + "\x00" + c.Subject }

// HasScopes reports whether the caller was granted every scope of want.
func (c *Caller) HasScopes(want []string) bool {
	for _, s := range want {
		if !slices.Contains(c.Scopes, s) {
			return false
		}
	}
	return true
}

// The codes of an Error, as RFC 6750 §3.1 names them.
const (
	// CodeNone is a request with no token: RFC 6750 says the challenge
	// then carries no error code.
	CodeNone = ""
	// CodeInvalidRequest is a malformed Authorization header.
	CodeInvalidRequest = "invalid_request"
	// CodeInvalidToken is a token that is not valid here: expired, not
	// yet valid, for another audience or issuer, badly signed.
	CodeInvalidToken = "invalid_token"
	// CodeInsufficientScope is a valid token without the scopes a call
	// needs.
	CodeInsufficientScope = "insufficient_scope"
)

// Error is a request the verifier refuses: 401 with a WWW-Authenticate
// challenge (CodeNone, CodeInvalidRequest, CodeInvalidToken), 403
// (CodeInsufficientScope), or 503 when the provider's keys could not be
// had (Code ""; Unavailable set).
type Error struct {
	Status int
	Code   string
	// Description says why, for the caller (error_description): never
	// the token.
	Description string
	// Unavailable is set when the keys could not be fetched: the
	// caller's token may be fine.
	Unavailable bool
}

func (e *Error) Error() string {
	if e.Code == "" {
		return e.Description
	}
	return e.Code + ": " + e.Description
}

func refused(code, format string, args ...any) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: code, Description: fmt.Sprintf(format, args...)}
}

// Verifier verifies the protected doors' bearer tokens. Build it with New;
// it is safe for concurrent use.
type Verifier struct {
	issuer, audience string
	keys             *keySet
	now              func() time.Time
	verified         verifiedCache
}

// maxVerified bounds the verified tokens a Verifier remembers: a repeat
// call with one of them costs a hash and a map lookup instead of a
// signature check (about 50 µs for RS256).
const maxVerified = 4096

// verifiedCache is the tokens verified lately, by their SHA-256, each
// with its caller until its exp (and the leeway). A token a key the
// issuer has since withdrawn signed is still taken until then, as it was
// when verified. When full, a new token first drops the expired, at most
// once a sweepEvery (a sweep reads every entry: once per token, it cost
// 60 µs a call with more live tokens than the cache holds), then any
// (map order is random).
type verifiedCache struct {
	mu    sync.Mutex
	size  int // maxVerified; 0: no cache
	m     map[[sha256.Size]byte]*Caller
	swept time.Time // the last sweep of the expired
}

// sweepEvery is how often a full cache may look for expired tokens.
const sweepEvery = time.Second

func (c *verifiedCache) get(key [sha256.Size]byte, now time.Time) *Caller {
	c.mu.Lock()
	defer c.mu.Unlock()
	caller := c.m[key]
	if caller != nil && now.After(caller.Expiry.Add(Leeway)) {
		delete(c.m, key)
		return nil
	}
	return caller
}

func (c *verifiedCache) put(key [sha256.Size]byte, caller *Caller, now time.Time) {
	if c.size == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[[sha256.Size]byte]*Caller)
	}
	if len(c.m) >= c.size && now.Sub(c.swept) >= sweepEvery {
		c.swept = now
		for k, v := range c.m {
			if now.After(v.Expiry.Add(Leeway)) {
				delete(c.m, k)
			}
		}
	}
	if len(c.m) >= c.size {
		for k := range c.m {
			if len(c.m) < c.size {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[key] = caller
}

// New is the verifier of a's tokens, fetching keys with client (nil:
// a client of its own). It fetches nothing until the first token.
func New(a config.Auth, client *http.Client) *Verifier {
	if client == nil {
		client = &http.Client{Timeout: FetchTimeout}
	}
	ks := newKeySet(a.Issuer, a.JWKSURL, client)
	return &Verifier{issuer: a.Issuer, audience: a.Audience, keys: ks, now: time.Now, verified: verifiedCache{size: maxVerified}}
}

// Authorize is the Caller of a request whose Authorization header is
// header, or why it is refused. A token in the URL's query is never looked
// at (RFC 6750 §2.3 leaves it out: logs and referrers keep URLs).
func (v *Verifier) Authorize(ctx context.Context, header []string) (*Caller, error) {
	if len(header) == 0 {
		return nil, refused(CodeNone, "this door requires a bearer token (Authorization: Bearer <JWT>)")
	}
	if len(header) > 1 {
		return nil, refused(CodeInvalidRequest, "more than one Authorization header")
	}
	scheme, token, _ := strings.Cut(header[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return nil, refused(CodeInvalidRequest, "the Authorization scheme %q is not Bearer", clip(scheme))
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.Count(token, ".") != 2 {
		return nil, refused(CodeInvalidToken, "the bearer token is not a JWT (header.payload.signature)")
	}
	return v.verify(ctx, token)
}

// verify checks token's signature, issuer, audience and time.
func (v *Verifier) verify(ctx context.Context, token string) (*Caller, error) {
	key := sha256.Sum256([]byte(token))
	if c := v.verified.get(key, v.now()); c != nil {
		return c, nil
	}
	c, err := v.check(ctx, token)
	if err == nil {
		v.verified.put(key, c, v.now())
	}
	return c, err
}

// check verifies token: its signature, issuer, subject, audience and
// time. The claims are checked here, not by go-oidc's ID token verifier,
// whose errors are text only: each refusal below is told apart by its
// type (issue 37).
func (v *Verifier) check(ctx context.Context, token string) (*Caller, error) {
	payload, err := v.keys.verify(ctx, token)
	if err != nil {
		if _, ok := errors.AsType[*unavailableError](err); ok { // the keys, or the refetch of an unknown kid, could not be had
			return nil, &Error{Status: http.StatusServiceUnavailable, Unavailable: true,
				Description: "the identity provider's keys could not be fetched; try again shortly"}
		}
		return nil, refused(CodeInvalidToken, "%s", signatureRefusal(err))
	}
	var claims struct {
		Iss      string          `json:"iss"`
		Sub      string          `json:"sub"`
		Aud      audiences       `json:"aud"`
		Exp      *json.Number    `json:"exp"`
		Nbf      *json.Number    `json:"nbf"`
		Scope    string          `json:"scope"`
		Scp      json.RawMessage `json:"scp"`
		ClientID string          `json:"client_id"`
		Azp      string          `json:"azp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, refused(CodeInvalidToken, "the token's claims are not a JSON object of the usual types")
	}
	// The issuer exactly as configured: a trailing slash is part of it
	// (Auth0's https://TENANT.auth0.com/).
	if claims.Iss != v.issuer {
		return nil, refused(CodeInvalidToken, "the token was not issued by %s", v.issuer)
	}
	// RFC 9068 §2.2 requires sub: without it every such caller would be
	// one owner of tasks, sessions and a per-caller quota.
	if claims.Sub == "" {
		return nil, refused(CodeInvalidToken, "the token has no sub (an access token names its subject, RFC 9068)")
	}
	if !slices.Contains(claims.Aud, v.audience) {
		return nil, refused(CodeInvalidToken, "the token is not for this resource (its aud must include %s)", v.audience)
	}
	now := v.now()
	exp, ok := seconds(claims.Exp)
	switch {
	case !ok:
		return nil, refused(CodeInvalidToken, "the token has no exp (an access token must expire)")
	case now.After(exp.Add(Leeway)):
		return nil, refused(CodeInvalidToken, "the token expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok := seconds(claims.Nbf); ok && now.Add(Leeway).Before(nbf) {
		return nil, refused(CodeInvalidToken, "the token is not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	c := &Caller{Issuer: claims.Iss, Subject: claims.Sub, Expiry: exp, ClientID: claims.ClientID}
	if c.ClientID == "" {
		c.ClientID = claims.Azp
	}
	c.Scopes = strings.Fields(claims.Scope)
	if len(c.Scopes) == 0 && len(claims.Scp) > 0 {
		var list []string
		var one string
		if json.Unmarshal(claims.Scp, &list) == nil {
			c.Scopes = list
		} else if json.Unmarshal(claims.Scp, &one) == nil {
			c.Scopes = strings.Fields(one)
		}
	}
	return c, nil
}

// audiences is the aud claim: one string or an array of them (RFC 7519
// §4.1.3).
type audiences []string

func (a *audiences) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = audiences{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*a = list
	return nil
}

// seconds is a NumericDate claim as a time.
func seconds(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// signatureRefusal is why keySet.verify refused a token, in the
// caller's terms, without quoting the token.
func signatureRefusal(err error) string {
	if _, ok := errors.AsType[*jose.ErrUnexpectedSignatureAlgorithm](err); ok {
		return "the token's signing algorithm is not allowed (want one of " + strings.Join(algorithms, ", ") + ")"
	}
	switch {
	case errors.Is(err, errMalformed):
		return "the bearer token is not a well-formed signed JWT"
	case errors.Is(err, errUnknownKey):
		return "the token is signed with a key the issuer does not publish"
	}
	return "the token's signature does not verify with the issuer's keys"
}

// clip shortens what a message quotes of a request.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

type callerKey struct{}

// WithCaller is ctx carrying the verified caller c.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf is the verified caller ctx carries, nil for none (a door that
// checks no token, or a public route).
func CallerOf(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// Challenge is the WWW-Authenticate value of a refusal e (RFC 6750 §3):
// the scheme, the error code unless none was sent, its description, and
// extra parameters (MCP's resource_metadata, scope) as written.
func Challenge(e *Error, extra ...string) string {
	params := []string{`realm="sidecar"`}
	params = append(params, extra...)
	if e.Code != CodeNone {
		params = append(params, `error="`+e.Code+`"`, `error_description="`+quote(e.Description)+`"`)
	}
	return "Bearer " + strings.Join(params, ", ")
}

// quote makes s a quoted-string's content: backslashes and quotes
// escaped, control characters dropped.
func quote(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

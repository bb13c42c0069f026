package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/sidecar-dev/sidecar/config"
)

// The bounds on fetching the provider's keys.
const (
	// FetchTimeout bounds one fetch: discovery and the key set together.
	// A caller waits for it at most; the next fetch is not sooner than
	// RetryAfter when it failed.
	FetchTimeout = 5 * time.Second
	// RefetchEvery is how often at most an unknown kid fetches the key
	// set again: a provider rotating its keys is seen at once, a caller
	// inventing kids costs the provider one fetch in this time.
	RefetchEvery = 30 * time.Second
	// RetryAfter is how long after a failed fetch the next may start:
	// meanwhile callers are refused 503 at once.
	RetryAfter = 2 * time.Second
	// maxKeySetBytes bounds what a discovery document or key set read.
	maxKeySetBytes = 1 << 20
)

// The ways a token's signature is refused, for check to tell apart
// with errors.Is (an algorithm not allowed: go-jose's
// *jose.ErrUnexpectedSignatureAlgorithm, with errors.As).
var (
	// errMalformed is a token that is no compact JWS of one signature.
	errMalformed = errors.New("malformed jwt")
	// errSignature is a signature no key of its kid verifies.
	errSignature = errors.New("the signature does not verify")
	// errUnknownKey is a token signed with a kid the key set does not
	// hold, after the one refetch allowed.
	errUnknownKey = errors.New("no key of the issuer's key set verifies the token")
)

// unavailableError is a fetch of the keys that failed: the provider is
// down, slow or answers garbage.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string {
	return "fetching the identity provider's keys: " + e.err.Error()
}
func (e *unavailableError) Unwrap() error { return e.err }

// keySet is the provider's signing keys: fetched on the first token,
// again on a kid it does not hold (at most once in RefetchEvery), one
// fetch at a time, each bounded by FetchTimeout. The keys held verify
// tokens of the kids they name whatever a refetch does meanwhile.
type keySet struct {
	issuer, jwksURL string // jwksURL: auth.jwks_url; "": discovered anew at each fetch
	client          *http.Client
	now             func() time.Time
	timeout         time.Duration // FetchTimeout; shorter in tests

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	fetched  time.Time     // when the last fetch ended
	failed   error         // the last fetch's failure, nil when it worked
	inflight chan struct{} // closed when the fetch under way ends
}

func newKeySet(issuer, jwksURL string, client *http.Client) *keySet {
	return &keySet{issuer: issuer, jwksURL: jwksURL, client: client, now: time.Now, timeout: FetchTimeout}
}

// verify is the payload of jwt, verified with the key its kid names
// (every key when it names none). Its errors are errMalformed,
// *jose.ErrUnexpectedSignatureAlgorithm, errSignature, errUnknownKey, or
// an *unavailableError when the keys could not be had.
func (k *keySet) verify(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, signatureAlgorithms())
	if err != nil {
		var alg *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &alg) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: want one signature", errMalformed)
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, err := k.current(ctx, false)
	if err != nil {
		return nil, err
	}
	if payload, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	if kid == "" || holds(keys, kid) {
		return nil, errSignature
	}
	// A kid it does not hold: the provider may have rotated its keys.
	if keys, err = k.current(ctx, true); err != nil {
		return nil, err
	}
	if payload, ok := verifyWith(jws, keys, kid); ok {
		return payload, nil
	}
	return nil, errUnknownKey
}

func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) ([]byte, bool) {
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, true
		}
	}
	return nil, false
}

func holds(keys []jose.JSONWebKey, kid string) bool {
	for _, key := range keys {
		if key.KeyID == kid {
			return true
		}
	}
	return false
}

// current is the key set: as held, unless it holds none yet or refetch
// asks for a fresh one (a kid it does not hold); then, when the last fetch
// is RefetchEvery old (RetryAfter when it failed), it fetches, or waits
// for the fetch under way (within ctx). While a failed fetch is younger
// than RetryAfter it fails at once. Without refetch, keys once held are
// returned at once whatever a refetch does: a provider down, or hanging,
// after a caller named an unknown kid must not refuse the tokens of the
// kids held (issue 37).
func (k *keySet) current(ctx context.Context, refetch bool) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	now := k.now()
	switch {
	case !refetch && k.keys != nil:
		keys := k.keys
		k.mu.Unlock()
		return keys, nil
	case k.inflight != nil:
	case k.failed != nil && now.Sub(k.fetched) < RetryAfter:
		err := k.failed
		k.mu.Unlock()
		return nil, &unavailableError{err}
	case k.keys == nil || k.failed != nil || refetch && now.Sub(k.fetched) >= RefetchEvery:
		k.inflight = make(chan struct{})
		go k.fetch(k.inflight)
	default:
		keys := k.keys
		k.mu.Unlock()
		return keys, nil
	}
	wait := k.inflight
	k.mu.Unlock()
	select {
	case <-ctx.Done():
		return nil, &unavailableError{fmt.Errorf("waiting for the key set: %w", ctx.Err())}
	case <-wait:
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.failed != nil {
		return nil, &unavailableError{k.failed}
	}
	return k.keys, nil
}

// fetch fetches the key set (discovering its URL first if need be), not
// for any one caller: bounded by FetchTimeout, whoever waits. It closes
// done when it ends.
func (k *keySet) fetch(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	defer cancel()
	keys, err := k.load(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fetched, k.failed = k.now(), err
	if err == nil {
		k.keys = keys
	}
	close(done)
	k.inflight = nil
}

func (k *keySet) load(ctx context.Context) ([]jose.JSONWebKey, error) {
	url := k.jwksURL
	if url == "" {
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, k.limited()), k.issuer)
		if err != nil {
			return nil, fmt.Errorf("discovering %s/.well-known/openid-configuration: %w", strings.TrimSuffix(k.issuer, "/"), err)
		}
		var meta struct {
			JWKSURL string `json:"jwks_uri"`
		}
		if err := p.Claims(&meta); err != nil || meta.JWKSURL == "" {
			return nil, fmt.Errorf("the discovery document of %s names no jwks_uri", k.issuer)
		}
		if err := config.CheckIdPURL(meta.JWKSURL); err != nil {
			return nil, fmt.Errorf("the discovery document's jwks_uri: %w", err)
		}
		url = meta.JWKSURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching the key set %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.limited().Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the key set %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the key set %s: %s", url, resp.Status)
	}
	var set jose.JSONWebKeySet
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the key set %s: %w", url, err)
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("reading the key set %s: %w", url, err)
	}
	var keys []jose.JSONWebKey
	for _, key := range set.Keys {
		// Public signing keys only: a symmetric key in a public set
		// would let anyone who read it sign.
		if key.IsPublic() && key.Use != "enc" && key.Valid() {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("the key set %s holds no public signing key", url)
	}
	return keys, nil
}

// limited is the client with every body it reads cut at maxKeySetBytes.
func (k *keySet) limited() *http.Client {
	c := *k.client
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = limitBodies{next}
	return &c
}

type limitBodies struct{ next http.RoundTripper }

func (l limitBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err == nil {
		resp.Body = limitedBody{io.LimitReader(resp.Body, maxKeySetBytes), resp.Body}
	}
	return resp, err
}

type limitedBody struct {
	io.Reader
	io.Closer
}

func signatureAlgorithms() []jose.SignatureAlgorithm {
	l := make([]jose.SignatureAlgorithm, len(algorithms))
	for i, a := range algorithms {
		l[i] = jose.SignatureAlgorithm(a)
	}
	return l
}

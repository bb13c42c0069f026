package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The auth rows (issue 31): what checking the caller's token costs a
// call. Side by side in rotating rounds, the same contract call
// (POST /api/reasoning_engine, the unary rows' call) through four
// sidecars of this tree: one with no auth section, and three protecting
// the agent_platform door with an RS256 key set from a provider of the
// run's own on loopback (discovery and JWKS, fetched once):
//
//   - token, cached: every call carries the same token, so after the
//     first a call costs a hash and a lookup in the verified tokens;
//   - token, verified: every call carries a token the sidecar has not
//     seen (a pool of authTokens, each sent once while the pool lasts),
//     so each call is one signature check against the cached key;
//   - token + per-caller limit: cached tokens and limits.per_caller in
//     process, set high enough never to refuse (a million a second, 10,000 at once).

// authConc is the rows' concurrency, as many callers at once as the
// unary rows' high row.
const authConc = 32

// authTokens is how many distinct tokens the "verified" column sends in
// turn: four times the sidecar's verified-token cache (4,096, dropping a
// random entry when full), so a token coming round again has been
// dropped from it with a probability of about 98% (1 - e^-4).
const authTokens = 16384

// authAudience is the protected sidecars' auth.audience.
const authAudience = "https://bench.sidecar.invalid"

// authColumn is one sidecar of the auth rows.
type authColumn struct {
	name, config string
	// request is the next call's bytes on addr.
	request func(addr string) func() []byte
}

// idp is the rows' identity provider: OpenID discovery and an RSA key
// set on 127.0.0.1, and the tokens it signs.
type idp struct {
	url    string
	key    *rsa.PrivateKey
	signer jose.Signer
	srv    *http.Server
}

func startIdP() (*idp, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "bench1"))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &idp{url: "http://" + ln.Addr().String(), key: key, signer: signer}
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "bench1", Algorithm: "RS256", Use: "sig"}}})
	disc, _ := json.Marshal(map[string]any{"issuer": p.url, "jwks_uri": p.url + "/jwks", "id_token_signing_alg_values_supported": []string{"RS256"}})
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) { w.Write(disc) })
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) { w.Write(jwks) })
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

func (p *idp) close() { p.srv.Close() }

// token is a token for authAudience of subject sub, valid for an hour.
func (p *idp) token(sub string, n int) (string, error) {
	now := time.Now()
	return jwt.Signed(p.signer).Claims(map[string]any{
		"iss": p.url, "sub": sub, "aud": authAudience, "jti": fmt.Sprint(n),
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}).Serialize()
}

// tokens signs n distinct tokens of subject sub on every core.
func (p *idp) tokens(sub string, n int) ([]string, error) {
	out := make([]string, n)
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				t, err := p.token(sub, i)
				if err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				out[i] = t
			}
		})
	}
	wg.Wait()
	if err := first.Load(); err != nil {
		return nil, *err
	}
	return out, nil
}

// bearerRequest is the contract's unary call with Authorization.
func bearerRequest(addr, token string) []byte {
	body := `{"class_method":"query","input":{"message":"hello"}}`
	return fmt.Appendf(nil, "POST /api/reasoning_engine HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
		addr, token, len(body), body)
}

// authRows starts the provider and the four sidecars, measures each in
// rotating rounds, stops them, and keeps the table in s.res.auth.
func (s *suite) authRows() error {
	p := s.plan
	provider, err := startIdP()
	if err != nil {
		return err
	}
	defer provider.close()
	began := time.Now()
	pool, err := provider.tokens("bench-fresh", authTokens)
	if err != nil {
		return fmt.Errorf("signing the tokens: %w", err)
	}
	logf("auth rows: signed %d RS256 tokens in %s", authTokens, time.Since(began).Round(time.Millisecond))
	same, err := provider.token("bench-same", -1)
	if err != nil {
		return err
	}
	var sent atomic.Int64
	protect := fmt.Sprintf("auth: {issuer: %q, audience: %q, doors: [agent_platform]}\n", provider.url, authAudience)
	columns := []authColumn{
		{name: "open", config: "",
			request: func(addr string) func() []byte {
				r := request(addr, "/api/reasoning_engine", []byte(`{"class_method":"query","input":{"message":"hello"}}`))
				return func() []byte { return r }
			}},
		{name: "token, cached", config: protect,
			request: func(addr string) func() []byte { r := bearerRequest(addr, same); return func() []byte { return r } }},
		{name: "token, verified", config: protect,
			request: func(addr string) func() []byte {
				reqs := make([][]byte, len(pool))
				for i, t := range pool {
					reqs[i] = bearerRequest(addr, t)
				}
				return func() []byte { return reqs[int(sent.Add(1)-1)%len(reqs)] }
			}},
		{name: "token + per-caller limit", config: protect + "limits: {concurrency: 10000, per_caller: {requests: 1000000, per: 1s, concurrent: 10000}}\n",
			request: func(addr string) func() []byte { r := bearerRequest(addr, same); return func() []byte { return r } }},
	}

	type target struct {
		addr string
		next func() []byte
		cpu  func() time.Duration
	}
	targets := make([]target, len(columns))
	for i, c := range columns {
		cfg := sidecarConfig(s.res.agentAddr)
		if strings.Contains(c.config, "limits:") {
			cfg = strings.Replace(cfg, "limits: {concurrency: 10000}\n", "", 1)
		}
		pr, addr, err := s.startSidecarWith(fmt.Sprintf("auth-%d", i), cfg+c.config)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		defer pr.stop(syscall.SIGTERM, 3*time.Second)
		targets[i] = target{addr: addr, next: c.request(addr), cpu: func() time.Duration { return cpuTime([]int{pr.pid()}) }}
		// The first call fetches the key set; a refusal fails the run.
		if err := checkCall(addr, bearerRequest(addr, same), func(b []byte) bool { return strings.Contains(string(b), `"output"`) }); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}

	rps, p50, cpu := series{}, series{}, series{}
	for r := range p.rounds {
		for i := range columns {
			k := (i + r) % len(columns)
			t := targets[k]
			res, err := unaryLoadEach(t.addr, t.next, authConc, p.unaryWarm, p.unaryDur, t.cpu)
			if err != nil {
				return fmt.Errorf("%s: %w", columns[k].name, err)
			}
			if res.errors > 0 {
				return fmt.Errorf("%s: %d failed calls", columns[k].name, res.errors)
			}
			rps.add(columns[k].name, res.rps)
			p50.add(columns[k].name, res.p50)
			cpu.add(columns[k].name, res.cpuPerCall)
		}
		logf("auth round %d: calls/s %s", r+1, func() string {
			var b strings.Builder
			for _, c := range columns {
				fmt.Fprintf(&b, " %s %.0f;", c.name, last(rps[c.name]))
			}
			return strings.TrimSuffix(b.String(), ";")
		}())
	}
	verifiedCalls := float64(sent.Load())

	ratio := func(sr series, name string) float64 { return ratioTo(sr[name], sr["open"]) }
	var b strings.Builder
	fmt.Fprintf(&b, "\nAuth rows: the contract's unary call through a sidecar with no auth section (open) and through sidecars protecting it "+
		"(auth.doors: [agent_platform]; an RS256 key set from a provider on loopback, fetched once): the same token on every call (cached), "+
		"a token not seen before on every call (verified: one signature check; %d tokens signed before the rows, %.0f calls sent, so %s), "+
		"and the cached token with limits.per_caller counted in process. "+
		"%d closed-loop callers for %s after %s of warm-up, median of %d rotating rounds (lowest–highest round); "+
		"ratios are medians of the per-round ratios to open. CPU is the sidecar's per call.\n\n",
		authTokens, verifiedCalls, reuse(verifiedCalls, authTokens), authConc, p.unaryDur, p.unaryWarm, p.rounds)
	b.WriteString("| sidecar | calls/s | / open | p50 µs | / open | CPU µs per call | / open | added CPU µs |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range columns {
		fmt.Fprintf(&b, "| %s | %s | %.2f× | %s | %.2f× | %s | %.2f× | %+.0f |\n", c.name,
			cell(rps[c.name]), ratio(rps, c.name), cell(p50[c.name]), ratio(p50, c.name),
			cell(cpu[c.name]), ratio(cpu, c.name), median(pairwise(cpu[c.name], cpu["open"], func(a, b float64) float64 { return a - b })))
	}
	s.res.auth = b.String()
	return nil
}

// reuse says how many of the verified column's calls repeated a token.
func reuse(calls float64, pool int) string {
	if calls <= float64(pool) {
		return "every call's token was new"
	}
	return fmt.Sprintf("%.0f%% of them repeated a token last sent %d calls before, by when the 4,096-token cache has most likely dropped it", 100*(calls-float64(pool))/calls, pool)
}

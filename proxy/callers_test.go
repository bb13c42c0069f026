package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/quota"
)

const audience = "https://agent.example.com"

// headersAgent answers every call and keeps the headers of the last.
type headersAgent struct {
	mu   sync.Mutex
	last http.Header
	n    int
}

func (a *headersAgent) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		a.mu.Lock()
		a.last, a.n = r.Header.Clone(), a.n+1
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (a *headersAgent) calls() (int, http.Header) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n, a.last
}

// authHarness is a sidecar whose platform door requires the tokens of
// p, with yamlExtra in its map.
func authHarness(t *testing.T, p *idptest.IdP, agent, yamlExtra string) *harness {
	yaml := "upstream: {url: AGENT}\nmethods: {query: {}}\nheaders: {forward: [X-Tenant]}\n" +
		"auth: {issuer: \"" + p.URL + "\", audience: \"" + audience + "\", doors: [agent_platform]}\n" + yamlExtra
	return newHarness(t, agent, yaml, withServer(func(s *Server) {
		s.Protocols = []string{"agent_platform"}
		s.Auth = auth.New(s.Config.Auth, nil)
		if s.Config.Limits.PerCaller.On() {
			s.Quota = quota.New(s.Config.Limits.PerCaller, nil)
		}
	}))
}

func (h *harness) postAs(route, body, authorization string) reply {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url+route, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Tenant", "acme")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

const queryCall = `{"class_method":"query","input":{"q":"hi"}}`

// TestAdmitToken: a protected door refuses a request without a token, or
// with one not valid here, 401 in its own error shape with the RFC 6750
// challenge, logged as unauthorized, the agent never called; a valid
// token is served, the caller's subject in the log line and never the
// token to the agent; health is public; a provider that is down is a 503
// saying so.
func TestAdmitToken(t *testing.T) {
	p := idptest.Start(t)
	var agent headersAgent
	h := authHarness(t, p, agent.start(t).URL, "")

	r := h.postAs("/api/reasoning_engine", queryCall, "")
	if r.status != 401 || r.header.Get("WWW-Authenticate") != `Bearer realm="sidecar"` || !strings.Contains(r.body, "requires a bearer token") {
		t.Errorf("no token: %d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}
	expired := p.Claims("alice", audience, "")
	expired.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Hour))
	for name, tok := range map[string]string{
		"expired":        p.Sign(t, expired, "rsa1", jose.RS256),
		"wrong audience": p.Token(t, "alice", "https://other.example.com", ""),
	} {
		r := h.postAs("/api/reasoning_engine", queryCall, "Bearer "+tok)
		ch := r.header.Get("WWW-Authenticate")
		if r.status != 401 || !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, "error_description=") || strings.Contains(r.body, tok[:20]) {
			t.Errorf("%s: %d %q %s", name, r.status, ch, r.body)
		}
	}
	// A token in the query string is not read (RFC 6750 §2.3 leaves it
	// out: URLs are logged and sent on as referrers): no token.
	good := p.Token(t, "alice", audience, "")
	if r := h.postAs("/api/reasoning_engine?access_token="+good, queryCall, ""); r.status != 401 || r.header.Get("WWW-Authenticate") != `Bearer realm="sidecar"` {
		t.Errorf("a token in the query: %d %q, want 401 as with no token", r.status, r.header.Get("WWW-Authenticate"))
	}
	if n, _ := agent.calls(); n != 0 {
		t.Fatalf("the agent was called %d times for refused requests", n)
	}
	// A call's line is written once its answer is: wait for it.
	refusals := func() int {
		return h.logs.FilterField(zap.String("outcome", "unauthorized")).FilterField(zap.String("reason", "UNAUTHENTICATED")).Len()
	}
	waitFor(t, func() bool { return refusals() >= 4 })
	if n := refusals(); n != 4 {
		t.Errorf("%d log lines of refusals, want 4", n)
	}

	tok := p.Token(t, "alice", audience, "query")
	if r := h.postAs("/api/reasoning_engine", queryCall, "Bearer "+tok); r.status != 200 {
		t.Fatalf("a valid token: %d %s", r.status, r.body)
	}
	n, hdr := agent.calls()
	if n != 1 || hdr.Get("Authorization") != "" || hdr.Get("X-Tenant") != "acme" {
		t.Errorf("the agent got %d calls, Authorization %q, X-Tenant %q: want 1, none, acme", n, hdr.Get("Authorization"), hdr.Get("X-Tenant"))
	}
	waitFor(t, func() bool { return h.logs.FilterField(zap.String("caller", "alice")).Len() >= 1 })
	lines := h.logs.FilterField(zap.String("caller", "alice")).All()
	if len(lines) != 1 {
		t.Errorf("%d log lines with caller alice, want 1", len(lines))
	}
	for _, e := range h.logs.All() {
		for _, f := range e.Context {
			if strings.Contains(f.String, tok[len(tok)-20:]) {
				t.Errorf("a log line carries the token: %v", e.ContextMap())
			}
		}
	}

	resp, err := http.Get(h.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz without a token: %d, want 200", resp.StatusCode)
	}

	q := idptest.Start(t) // a provider down from the first token
	q.SetDown(true)
	h2 := authHarness(t, q, agent.start(t).URL, "")
	r = h2.postAs("/api/reasoning_engine", queryCall, "Bearer "+q.Token(t, "alice", audience, ""))
	if r.status != 503 || r.header.Get("Retry-After") != "2" || !strings.Contains(r.body, "could not be fetched") {
		t.Errorf("provider down: %d %v %s, want 503 AUTH_UNAVAILABLE", r.status, r.header, r.body)
	}
}

// TestPerCallerLimits: a caller over its rate is 429 with Retry-After and
// the RateLimit fields while another caller is served; one holding its
// concurrent calls is 429 until one ends.
func TestPerCallerLimits(t *testing.T) {
	p := idptest.Start(t)
	var agent headersAgent
	h := authHarness(t, p, agent.start(t).URL, "limits: {per_caller: {requests: 3, per: 1m}}\n")
	alice, bob := "Bearer "+p.Token(t, "alice", audience, ""), "Bearer "+p.Token(t, "bob", audience, "")
	for i := range 3 {
		r := h.postAs("/api/reasoning_engine", queryCall, alice)
		if r.status != 200 || r.header.Get("RateLimit-Policy") != `"per-caller";q=3;w=60` || !strings.HasPrefix(r.header.Get("RateLimit"), `"per-caller";r=`+string(rune('2'-i))) {
			t.Fatalf("alice's call %d: %d %v", i+1, r.status, r.header)
		}
	}
	r := h.postAs("/api/reasoning_engine", queryCall, alice)
	if r.status != 429 || r.header.Get("Retry-After") != "20" || !strings.HasPrefix(r.header.Get("RateLimit"), `"per-caller";r=0`) || !strings.Contains(r.body, "too many calls") {
		t.Errorf("alice's 4th call: %d %v %s, want 429 with Retry-After 20", r.status, r.header, r.body)
	}
	if r := h.postAs("/api/reasoning_engine", queryCall, bob); r.status != 200 {
		t.Errorf("bob's call: %d, want 200", r.status)
	}
	limited := func() int {
		return h.logs.FilterField(zap.String("outcome", "rate_limited")).FilterField(zap.String("reason", "RATE_LIMITED")).Len()
	}
	waitFor(t, func() bool { return limited() >= 1 })
	if n := limited(); n != 1 {
		t.Errorf("%d log lines rate_limited, want 1", n)
	}
	if n, _ := agent.calls(); n != 4 {
		t.Errorf("the agent got %d calls, want 4", n)
	}
}

// TestPerCallerConcurrent: a caller holding limits.per_caller.concurrent
// calls is 429 (Retry-After 1) while they run, and served once one ends;
// another caller is not counted with it. Without auth, callers are told
// apart by their address, whatever Authorization they send.
func TestPerCallerConcurrent(t *testing.T) {
	hangsAfter(t, 30*time.Second)
	release := make(chan struct{})
	calls, agent := heldAgent(t, release, `{"ok":true}`)
	h := newHarness(t, agent.URL, "upstream: {url: AGENT}\nmethods: {query: {}}\nlimits: {per_caller: {concurrent: 1}}\n",
		withServer(func(s *Server) { s.Quota = quota.New(s.Config.Limits.PerCaller, nil) }))
	first := make(chan reply, 1)
	go func() { first <- h.postAs("/api/reasoning_engine", queryCall, "Bearer key-a") }()
	for calls.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	r := h.postAs("/api/reasoning_engine", queryCall, "Bearer key-a")
	if r.status != 429 || r.header.Get("Retry-After") != "1" || !strings.Contains(r.body, "too many calls at once") {
		t.Errorf("a second call of key-a while its first runs: %d %v %s", r.status, r.header, r.body)
	}
	if r := h.postAs("/api/reasoning_engine", queryCall, "Bearer key-b"); r.status != 429 {
		t.Errorf("a call of key-b from the same address: %d, want 429", r.status)
	}
	other := make(chan int, 1)
	go func() {
		other <- sendFrom(t, "127.0.0.2", http.MethodPost, h.url+"/api/reasoning_engine", queryCall, "Bearer key-b")
	}()
	for calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	if r := <-first; r.status != 200 {
		t.Errorf("key-a's first call: %d", r.status)
	}
	if status := <-other; status != 200 {
		t.Errorf("another address's call beside it: %d", status)
	}
	if r := h.postAs("/api/reasoning_engine", queryCall, "Bearer key-a"); r.status != 200 {
		t.Errorf("key-a once its call ended: %d", r.status)
	}
}

// TestIdentityHeaders: auth.headers gives the agent a verified caller's
// subject and scopes in the headers it names, whatever the caller sent
// in them; on a door that checks no token, a caller's own value of such a
// header never reaches the agent.
func TestIdentityHeaders(t *testing.T) {
	p := idptest.Start(t)
	var agent headersAgent
	url := agent.start(t).URL
	yaml := "upstream: {url: AGENT}\nmethods: {query: {}}\n" +
		"auth: {issuer: \"" + p.URL + "\", audience: \"" + audience + "\", doors: [agent_platform], headers: {sub: X-User-Id, scope: X-User-Scopes}}\n"
	for _, protected := range []bool{true, false} {
		h := newHarness(t, url, yaml, withServer(func(s *Server) {
			s.Protocols = []string{"agent_platform"}
			if protected {
				s.Auth = auth.New(s.Config.Auth, nil)
			}
		}))
		req, _ := http.NewRequest(http.MethodPost, h.url+"/api/reasoning_engine", strings.NewReader(queryCall))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-User-Id", "mallory")
		req.Header.Set("X-User-Scopes", "admin")
		if protected {
			req.Header.Set("Authorization", "Bearer "+p.Token(t, "alice", audience, "query read"))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		_, got := agent.calls()
		want := [2]string{"alice", "query read"}
		if !protected {
			want = [2]string{}
		}
		if resp.StatusCode != 200 || got.Get("X-User-Id") != want[0] || got.Get("X-User-Scopes") != want[1] {
			t.Errorf("protected %v: %d, the agent got X-User-Id %q X-User-Scopes %q, want %q", protected, resp.StatusCode, got.Get("X-User-Id"), got.Get("X-User-Scopes"), want)
		}
	}
}

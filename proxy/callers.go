package proxy

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/auth"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/quota"
)

// Public is a Door with requests any caller may make on a door the auth
// section protects, never counted by limits.per_caller: what a client
// reads before it has a token (A2A's card, MCP's protected resource
// metadata), and the platform's probes (its health routes, "/" and the
// keep-alive probe; AgentCore's /ping, Foundry's /readiness). Every door's
// health routes are public besides.
type Public interface {
	Public(r *http.Request) bool
}

// ResourceMetadata is a Door that names, for a refusal's challenge, the
// URL of its protected resource metadata (RFC 9728): MCP's clients find
// the authorization server from it.
type ResourceMetadata interface {
	ResourceMetadata(r *http.Request) string
}

// ScopesSupported is a Door whose 401 challenge names the scopes its
// methods need (RFC 6750 §3's scope), as MCP's authorization specification
// asks: a client asks its authorization server for a token with them.
type ScopesSupported interface {
	ScopesSupported() []string
}

// Keyed is a Door with a key of its own (the OpenAI door's api_key): on
// a protected door a request with the key needs no token. HasKey reports
// whether the door has one (it refuses a request without it); a request
// with it counts against the key, however the caller spells it.
type Keyed interface {
	HasKey() bool
	KeyAuthorized(r *http.Request) bool
}

// Bindings is a Door served in more than one binding whose refusals
// differ in shape (A2A's JSON-RPC and HTTP+JSON): RefusalWriter is w as
// the door marks it for r's binding, so that what admit refuses before
// the door routes r (a token, a per-caller limit) is written in the shape
// of the binding r calls.
type Bindings interface {
	RefusalWriter(w http.ResponseWriter, r *http.Request) http.ResponseWriter
}

// noRelease ends the hold of a call no per-caller limit counts.
func noRelease() {}

// admit checks who calls, before the door routes the request: on a door
// the auth section protects (Server.Auth), its bearer token, the
// verified caller then in the request's context (auth.CallerOf); with
// limits.per_caller (Server.Quota), the caller's rate and the calls it
// holds. It reports false when it refused the request, written through
// refuse in the door's shape; release ends the request's hold.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, door Door, protocol string, refuse core.Refuse) (*http.Request, func(), bool) {
	protected := s.Auth != nil && s.Config.Auth.Protects(protocol)
	for _, name := range s.Config.Auth.Headers {
		r.Header.Del(name) // only the sidecar says who calls (identify)
	}
	if !protected && s.Quota == nil {
		return r, noRelease, true
	}
	if public(door, r) {
		return r, noRelease, true
	}
	if b, ok := door.(Bindings); ok {
		w = b.RefusalWriter(w, r)
	}
	var caller *auth.Caller
	if k, ok := door.(Keyed); protected && !(ok && k.KeyAuthorized(r)) {
		c, err := s.Auth.Authorize(r.Context(), r.Header.Values("Authorization"))
		if err != nil {
			s.refuseAuth(w, r, door, refuse, err)
			return r, nil, false
		}
		caller = c
		r = r.WithContext(auth.WithCaller(r.Context(), c))
		identify(r.Header, s.Config.Auth.Headers, c)
	}
	if s.Quota == nil {
		return r, noRelease, true
	}
	key, counted := callerKey(r, door, protocol, caller)
	if !counted { // the door refuses it: nothing kept for it
		return r, noRelease, true
	}
	d, err := s.Quota.Take(r.Context(), key)
	if errors.Is(err, context.Canceled) { // the caller hung up: no one to answer
		return r, nil, false
	}
	if err != nil {
		s.Logger.Warn("per-caller limit counted in the process for a while (quota.SharedRetry)", zap.Error(err))
	}
	s.Quota.SetHeaders(w.Header(), d)
	if !d.Allowed {
		f := core.ReasonFailure("RATE_LIMITED", "too many calls: this caller may start "+strconv.Itoa(s.Config.Limits.PerCaller.Requests)+
			" every "+s.Config.Limits.PerCaller.Per.String()+" (limits.per_caller); try again after Retry-After")
		f.RetryAfter = max(1, int((d.RetryAfter+999_999_999)/1e9))
		refuseLater(w, r, refuse, f)
		return r, nil, false
	}
	release, ok := s.Quota.Hold(key)
	if !ok {
		f := core.ReasonFailure("RATE_LIMITED", "too many calls at once: this caller may hold "+strconv.Itoa(s.Config.Limits.PerCaller.Concurrent)+
			" (limits.per_caller.concurrent); try again when one ends")
		f.RetryAfter = 1
		refuseLater(w, r, refuse, f)
		return r, nil, false
	}
	return r, release, true
}

// callerOf is r's verified caller; nil without an auth section, at no
// cost to the calls of a sidecar that checks no token.
func (s *Server) callerOf(r *http.Request) *auth.Caller {
	if s.Auth == nil {
		return nil
	}
	return auth.CallerOf(r.Context())
}

// public reports whether r may be served without a token: a health
// route's GET or HEAD, or what the door says is public.
func public(door Door, r *http.Request) bool {
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == "/healthz" || r.URL.Path == "/health") {
		return true
	}
	p, ok := door.(Public)
	return ok && p.Public(r)
}

// refuseAuth refuses r as err (an *auth.Error) says, in the door's
// shape, with the challenge of RFC 6750 (and MCP's resource_metadata when
// the door has it).
func (s *Server) refuseAuth(w http.ResponseWriter, r *http.Request, door Door, refuse core.Refuse, err error) {
	var e *auth.Error
	if !errors.As(err, &e) { // Authorize returns no other: refused all the same
		e = &auth.Error{Status: http.StatusUnauthorized, Code: auth.CodeInvalidToken, Description: "the token could not be verified"}
	}
	if e.Unavailable {
		f := core.ReasonFailure("AUTH_UNAVAILABLE", e.Description)
		f.RetryAfter = int(auth.RetryAfter.Seconds())
		refuseLater(w, r, refuse, f)
		return
	}
	var extra []string
	if d, ok := door.(ScopesSupported); ok {
		if sc := d.ScopesSupported(); len(sc) > 0 {
			extra = append(extra, scopeParam(sc))
		}
	}
	challenge(w, r, door, e, extra...)
	reason := "UNAUTHENTICATED"
	if e.Status == http.StatusForbidden {
		reason = "PERMISSION_DENIED"
	}
	refuse(w, r, "", core.ReasonFailure(reason, e.Description))
}

// challenge sets the WWW-Authenticate of refusal e, with extra parameters
// and the door's resource_metadata when it has one.
func challenge(w http.ResponseWriter, r *http.Request, door Door, e *auth.Error, extra ...string) {
	if m, ok := door.(ResourceMetadata); ok {
		extra = append(extra, `resource_metadata="`+m.ResourceMetadata(r)+`"`)
	}
	w.Header().Set("WWW-Authenticate", auth.Challenge(e, extra...))
}

// scopeParam is the challenge's scope parameter (RFC 6750 §3) of scopes.
func scopeParam(scopes []string) string { return `scope="` + strings.Join(scopes, " ") + `"` }

// refuseLater refuses r with f, whose RetryAfter it sends as Retry-After
// whatever the door's shape writes.
func refuseLater(w http.ResponseWriter, r *http.Request, refuse core.Refuse, f core.Failure) {
	w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	refuse(w, r, "", f)
}

// callerKey is who a request counts against, from what was verified of
// it, never what its caller chose: its token's issuer and subject; on a
// door with a key of its own, the key (one bucket, however it is
// spelled); else its client's address (an IPv6 address by its /64: one
// host's range), so that an unverified caller has one bucket, whatever
// it sends. counted is false for a request its door will refuse (a keyed
// door's, without the key): a refused request creates no bucket.
func callerKey(r *http.Request, door Door, protocol string, c *auth.Caller) (key string, counted bool) {
	if c != nil {
		return quota.CallerKey("sub", c.ID()), true
	}
	if k, ok := door.(Keyed); ok && k.HasKey() {
		return quota.CallerKey("key", protocol), k.KeyAuthorized(r)
	}
	return quota.CallerKey("addr", quota.Address(r)), true
}

// insufficientScope is the failure of a call of method, which needs
// scopes, by a caller whose token does not grant them all (or who called
// with a key, which grants none): 403 with the challenge RFC 6750 and
// MCP's authorization specification ask (error="insufficient_scope", the
// scopes, the resource metadata), in the door's shape.
func (s *Server) insufficientScope(w http.ResponseWriter, r *http.Request, door Door, method string, scopes []string) error {
	e := &auth.Error{Status: http.StatusForbidden, Code: auth.CodeInsufficientScope,
		Description: "calling " + core.Clip(method) + " needs the scopes " + strings.Join(scopes, " ") + ", which the token does not grant"}
	challenge(w, r, door, e, scopeParam(scopes))
	return core.ReasonFailure("PERMISSION_DENIED", e.Description)
}

// identify sets the headers auth.headers names on h, the request the
// agent's call forwards them from, to what the verified caller c is;
// a claim c does not carry sets none.
func identify(h http.Header, names map[string]string, c *auth.Caller) {
	for claim, name := range names {
		var v string
		switch claim {
		case "sub":
			v = c.Subject
		case "scope":
			v = strings.Join(c.Scopes, " ")
		case "client_id":
			v = c.ClientID
		}
		if v != "" && !strings.ContainsAny(v, "\r\n") {
			h.Set(name, v)
		}
	}
}

package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Client sends class_method calls to the agent. It is safe for concurrent
// use; build it once with New.
type Client struct {
	up        config.Upstream
	headers   Headers
	base      *url.URL
	transport *transport
	retrying  *retryablehttp.Client
	logger    *zap.Logger
	limits    config.Limits // bound replies and records
	// methodValues are the X-Sidecar-Class-Method values of the method
	// map's names, made once and shared (see valueJSON).
	methodValues map[string][]string
}

// forwardHeaders is the allow-list of inbound headers the agent receives:
// trace context and request ids, never credentials or cookies.
var forwardHeaders = []string{"Traceparent", "Tracestate", "X-Cloud-Trace-Context", "X-Request-Id"}

// identityHeaders are the headers auth.headers names: the sidecar sets
// them on a verified caller's requests (and removes them from every
// other), and the agent gets them.
func identityHeaders(cfg *config.Config) []string {
	var names []string
	for _, name := range cfg.Auth.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Headers are the headers the agent receives on top of the sidecar's
// own, on a call's request and on a conversation's upgrade alike: the
// allow-listed and headers.forward ones of the caller's, the verified
// caller's identity, a door's own, and headers.set.
type Headers struct {
	forward  []string          // inbound headers passed on
	identity []string          // the verified caller's (identityHeaders)
	set      map[string]string // headers added to every request
}

// NewHeaders builds the Headers cfg's headers and auth sections say.
func NewHeaders(cfg *config.Config) Headers {
	return Headers{
		forward:  append(slices.Clone(forwardHeaders), cfg.Headers.Forward...),
		identity: identityHeaders(cfg),
		set:      cfg.Headers.Set,
	}
}

// Apply sets on out the headers of the caller's request in that the
// agent receives, then pass (a door's own, as they are), then headers.set,
// which wins. A header the caller's Connection header names is its hop's
// and is not passed on.
func (h Headers) Apply(out, in, pass http.Header) {
	for _, name := range h.forward {
		if namedInConnection(in, name) {
			continue
		}
		if v := in.Values(name); len(v) > 0 {
			out[name] = v
		}
	}
	// The sidecar's own, after the caller's hop-by-hop headers are gone:
	// a caller's Connection header names its hop's headers, never these.
	for _, name := range h.identity {
		if v := in.Values(name); len(v) > 0 {
			out[name] = v
		}
	}
	for name, v := range pass {
		out[name] = v
	}
	for name, v := range h.set {
		out.Set(name, v)
	}
}

// New builds the client for cfg's upstream.
func New(cfg *config.Config, logger *zap.Logger) (*Client, error) {
	base, err := url.Parse(cfg.Upstream.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("parsing upstream url: %w", err)
	}
	network, address := cfg.Upstream.Network, cfg.Upstream.Address
	dialer := &net.Dialer{Timeout: cfg.Timeouts.Connect, KeepAlive: 30 * time.Second}
	t := &transport{
		// Every request goes to the one agent, whatever the URL's host says.
		dial: func(ctx context.Context) (net.Conn, error) {
			return dialer.DialContext(ctx, network, address)
		},
		host:        base.Host,
		maxIdle:     256,
		idleTimeout: cfg.Upstream.IdleTimeout,
	}
	c := &Client{
		up: cfg.Upstream, base: base, transport: t, logger: logger, limits: cfg.Limits,
		headers:      NewHeaders(cfg),
		methodValues: map[string][]string{},
	}
	for _, m := range cfg.Methods {
		if m.Name != "*" {
			c.methodValues[m.Name] = []string{m.Name}
		}
	}
	// go-retryablehttp logs at debug level only (zapLeveled), and builds
	// its messages (the URL as a string, the fields) before the logger
	// can drop them: with debug off it gets no logger, and costs nothing.
	var retryLog any
	if logger.Core().Enabled(zap.DebugLevel) {
		retryLog = zapLeveled{logger}
	}
	c.retrying = &retryablehttp.Client{
		HTTPClient: &http.Client{
			Transport: t,
			// Redirects are the agent's answer, not something to follow.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		Logger:       retryLog,
		RetryWaitMin: 20 * time.Millisecond,
		RetryWaitMax: 500 * time.Millisecond,
		// Retries are bounded by the connect clock, not by a count.
		RetryMax:     1 << 20,
		CheckRetry:   checkRetry,
		Backoff:      backoff,
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
		// Each attempt sends the body from its start (GetBody, which
		// Send sets); retryablehttp only rewinds the bodies it made.
		PrepareRetry: rewindBody,
		RequestLogHook: func(_ retryablehttp.Logger, req *http.Request, attempt int) {
			if ci, ok := req.Context().Value(callKey{}).(*callInfo); ok {
				ci.attempts.Store(int32(attempt))
				if ci.waited {
					ci.waited = false
					ci.clk.retry()
				}
			}
		},
	}
	return c, nil
}

// Close drops the idle connections to the agent.
func (c *Client) Close() { c.transport.closeIdle() }

// Call sends one call to the agent as the method map says and waits for
// its response headers. A non-2xx reply is a *core.StatusError carrying the
// agent's message. On success the Response owns the call's clocks and
// body; the caller must Close it.
func (c *Client) Call(ctx context.Context, call core.Call) (*Response, error) {
	m := call.Method
	path, rawPath, query, err := buildPath(m, call.Name, call.Input, call.Route)
	if err != nil {
		return nil, err
	}
	body, err := buildBody(m, call.Name, call.Input)
	if err != nil {
		return nil, err
	}
	return c.Send(ctx, Request{Method: call.Name, Verb: m.Verb, Path: path, RawPath: rawPath, RawQuery: query, Body: body,
		Accept: acceptFor(m), Timeouts: m.Timeouts, Idempotent: m.Idempotent, Header: call.Header, Set: m.Headers, Pass: call.Pass,
		Phases: call.Phases()})
}

// The Accept header a method's requests carry unless headers.set gives
// one: a stream method takes any framing the deframers read, a unary one
// JSON. Servers that choose by it need it: an MCP Streamable HTTP server
// answers 406 without text/event-stream and application/json, and a route
// that serves both JSON and SSE answers JSON to a request without it.
const (
	acceptStream = "text/event-stream, application/x-ndjson, application/json"
	acceptUnary  = "application/json"
)

func acceptFor(m *config.Method) string {
	if m.Mode.Streaming() {
		return acceptStream
	}
	return acceptUnary
}

// Request is one HTTP call to the agent, for callers that build their own
// (the ADK preset makes several per class_method).
type Request struct {
	// Method is the class_method being served, sent to the agent as
	// X-Sidecar-Class-Method.
	Method string
	Verb   string
	// Path is the decoded path under the upstream's base, RawPath its
	// escaped form (see SegmentPath).
	Path, RawPath string
	// RawQuery is the escaped query string, without "?"; "" for none.
	RawQuery string
	// Body is sent as application/json; nil sends none.
	Body []byte
	// Accept is the request's Accept header, "" for none: the client's
	// default, which headers.forward and headers.set override.
	Accept   string
	Timeouts config.Timeouts
	// Idempotent allows retrying a 429 or 503 with Retry-After.
	Idempotent bool
	// Header is the caller's request header: only the allow-listed trace
	// and request-id headers reach the agent.
	Header http.Header
	// Set are the method's own headers, set after the client's.
	Set map[string]string
	// Pass are headers the agent receives as they are, besides the
	// allow-list: a front door's own (core.Call.Pass). headers.set wins.
	Pass http.Header
	// Phases, if set, is where Send notes when it had a connection to
	// the agent and when the agent's reply head arrived (core.Call.Phases),
	// whether the call succeeds or not.
	Phases *core.Phases
}

// SegmentPath joins parts into a path, each part escaped as exactly one
// segment, as path templates are.
func SegmentPath(parts ...string) (path, raw string) {
	var p, r strings.Builder
	for _, part := range parts {
		p.WriteByte('/')
		p.WriteString(part)
		r.WriteByte('/')
		r.WriteString(escapeSegment(part))
	}
	return p.String(), r.String()
}

// Send sends one request to the agent and waits for its response headers,
// with the request's clocks and the client's retry policy. A non-2xx reply
// is a *core.StatusError carrying the agent's message. On success the Response
// owns the call's clocks and body; the caller must Close it.
func (c *Client) Send(ctx context.Context, r Request) (*Response, error) {
	if !validQuery(r.RawQuery) {
		return nil, fmt.Errorf("building agent request: query %q has a control character", r.RawQuery)
	}
	st := new(sent)
	clk := &st.clk
	clk.init(ctx, r.Timeouts)
	ci := &st.ci
	ci.idempotent = r.Idempotent
	if r.Timeouts.Total > 0 {
		ci.deadline = time.Now().Add(r.Timeouts.Total)
	}
	ci.clk = clk
	reqCtx := context.WithValue(clk.ctx, callKey{}, ci)

	// The URL is built as a struct, not written out and parsed again.
	req, err := http.NewRequestWithContext(reqCtx, r.Verb, "", nil)
	if err != nil {
		clk.stop()
		return nil, fmt.Errorf("building agent request: %w", err)
	}
	*req.URL = *c.base
	req.URL.Path = c.base.Path + r.Path
	req.URL.RawPath = c.base.EscapedPath() + r.RawPath
	req.URL.RawQuery = r.RawQuery
	req.Host = c.base.Host
	if r.Body != nil {
		st.reqBody.reset(r.Body)
		req.Body, req.ContentLength = &st.reqBody, int64(len(r.Body))
		ci.body = r.Body // for a retry (rewindBody)
		if netHTTP {     // net/http's Transport retries an unwritten request itself
			req.GetBody = st.reqBody.rewind
		}
		req.Header["Content-Type"] = valueJSON
	}
	if v, ok := c.methodValues[r.Method]; ok {
		req.Header["X-Sidecar-Class-Method"] = v
	} else if r.Method != "" {
		req.Header.Set("X-Sidecar-Class-Method", r.Method)
	}
	req.Header[core.HopHeader] = valueHop
	switch r.Accept {
	case "":
	case acceptUnary:
		req.Header["Accept"] = valueJSON
	case acceptStream:
		req.Header["Accept"] = valueAcceptStream
	default:
		req.Header.Set("Accept", r.Accept)
	}
	c.headers.Apply(req.Header, r.Header, r.Pass)
	for name, v := range r.Set {
		req.Header.Set(name, v)
	}

	resp, err := c.retrying.Do(&retryablehttp.Request{Request: req})
	retries := max(int(ci.attempts.Load()), 0)
	if err == nil {
		clk.headersArrived()
	}
	if r.Phases != nil {
		clk.note(r.Phases)
	}
	if err != nil {
		if resp != nil {
			resp.Body.Close() // a reply that came as the call's context ended
		}
		clk.stop()
		return nil, clk.explain(err, c.up.URL)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer clk.stop()
		defer resp.Body.Close()
		detail, rerr := readDetail(resp)
		if rerr != nil {
			return nil, clk.explain(rerr, c.up.URL)
		}
		return nil, &core.StatusError{Status: resp.StatusCode, Detail: detail}
	}
	st.body = idleReader{r: resp.Body, clk: clk}
	out := &st.resp
	*out = Response{
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Retries: retries,
		body:    &st.body,
		raw:     resp.Body,
		clk:     clk,
	}
	out.closeEnd, out.length = closeDelimited(resp), resp.ContentLength
	return out, nil
}

// sent is what Send keeps for one call, in one allocation: its retry
// facts, its clocks, and its reply and the reader of its body.
type sent struct {
	ci      callInfo
	clk     clocks
	reqBody requestBody
	resp    Response
	body    idleReader
}

// The values of the headers Send sets to constants, shared by every
// request: a header's values are replaced (Set), never written into.
var (
	valueJSON         = []string{"application/json"}
	valueHop          = []string{"1"}
	valueAcceptStream = []string{acceptStream}
)

// validQuery reports whether an escaped query string has no control
// character, which would break the request line it goes out in.
func validQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		if q[i] < ' ' || q[i] == 0x7f {
			return false
		}
	}
	return true
}

// namedInConnection reports whether the caller's Connection header names
// name, in any case: such a header is for the caller's hop only, and a
// proxy must not pass it on (RFC 9110 §7.6.1), allow-listed or not.
func namedInConnection(h http.Header, name string) bool {
	for _, v := range h.Values("Connection") {
		for token := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(token), name) {
				return true
			}
		}
	}
	return false
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

//go:build nethttp

package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The nethttp build (go build -tags nethttp) sends every request to the
// agent through net/http's http.Transport instead of the hand-written
// client of transport.go, pool.go and wire.go: the measured alternative
// of issue 19 item 7 (BENCHMARKS.md, "The transport decision"). Nothing
// else changes: the same http.Client and go-retryablehttp on top, the
// same retry rule (checkRetry), the same clocks. The default build has
// netHTTP false and compiles none of this.
//
// How the hand-written transport's settings map:
//   - dial: the same dialer to the one agent (TCP or a Unix socket),
//     whatever the URL's host says; connect timeout and TCP keep-alive as
//     before;
//   - maxIdle: MaxIdleConns and MaxIdleConnsPerHost; idleTimeout:
//     IdleConnTimeout (net/http does not learn the agent's keep-alive);
//   - maxReplyHead (1 MiB): MaxResponseHeaderBytes; max1xx (5) is
//     net/http's own limit;
//   - the 4 KiB read and write buffers are net/http's defaults;
//   - no compression (the hand-written client asks for none), no proxy
//     from the environment, HTTP/1.1 only;
//   - the User-Agent "sidecar" unless the request has one, the Host the
//     agent's address;
//   - the clocks learn of a connection through httptrace (GotConn) and of
//     a failed dial from the dialer, as the hand-written pool told them
//     directly;
//   - the errors the sidecar's taxonomy reads are mapped to the
//     hand-written transport's: a bad reply head is a *core.ReplyError, a
//     connection closed before the reply io.ErrUnexpectedEOF.
const netHTTP = true

// netTransports holds the http.Transport of each transport, made at its
// first request (tests build transports as struct literals and may set
// dial before using them).
var netTransports sync.Map // *transport → *http.Transport

func (t *transport) net() *http.Transport {
	if nt, ok := netTransports.Load(t); ok {
		return nt.(*http.Transport)
	}
	nt := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			nc, err := t.dial(ctx)
			// The dial's context keeps the values of the request that
			// asked for it (not its cancellation).
			if ci, ok := ctx.Value(callKey{}).(*callInfo); ok {
				ci.clk.dialed(err)
			}
			return nc, err
		},
		MaxIdleConns:           t.maxIdle,
		MaxIdleConnsPerHost:    t.maxIdle,
		IdleConnTimeout:        t.idleTimeout,
		MaxResponseHeaderBytes: maxReplyHead,
		ReadBufferSize:         readerSize,
		WriteBufferSize:        writerSize,
		DisableCompression:     true,
		// A non-nil empty map: no HTTP/2 upgrade, ever.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	actual, _ := netTransports.LoadOrStore(t, nt)
	return actual.(*http.Transport)
}

// netRoundTrip is RoundTrip in the nethttp build.
func (t *transport) netRoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if ci, ok := ctx.Value(callKey{}).(*callInfo); ok {
		clk := ci.clk
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { clk.gotConn() }})
	}
	r := req.WithContext(ctx)
	if r.Host == "" {
		r.Host = t.host
	}
	if _, own := r.Header["User-Agent"]; !own {
		r.Header = r.Header.Clone()
		r.Header["User-Agent"] = []string{"sidecar"}
	}
	resp, err := t.net().RoundTrip(r)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, netError(err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		resp.Body.Close()
		return nil, &core.ReplyError{Msg: "agent answered 101 Switching Protocols to a request that asked for no upgrade"}
	}
	return resp, nil
}

// netError maps net/http's errors to the hand-written transport's, which
// the sidecar's error taxonomy reads.
func netError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "server response headers exceeded"):
		return errHeadTooLarge
	case strings.Contains(msg, "too many 1xx informational responses"):
		return &core.ReplyError{Msg: "agent sent more than 5 interim (1xx) replies"}
	case strings.Contains(msg, "invalid header field"):
		return fmt.Errorf("%w: %w", errBadHeader, err) // refused before anything was sent
	case strings.Contains(msg, "malformed HTTP"):
		return &core.ReplyError{Msg: "agent reply is not valid HTTP: " + msg}
	case errors.Is(err, io.EOF):
		return io.ErrUnexpectedEOF // the agent closed before its reply
	}
	return err
}

// netCloseIdle is closeIdle in the nethttp build.
func (t *transport) netCloseIdle() {
	if nt, ok := netTransports.Load(t); ok {
		nt.(*http.Transport).CloseIdleConnections()
	}
}

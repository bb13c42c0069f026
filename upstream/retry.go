package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"go.uber.org/zap"
)

// What is retried and when: only what never reached the agent, and an
// idempotent method's 429 or 503 within its deadline. retryablehttp runs
// the attempts; these are its hooks, and the request body each attempt
// sends from its start.

// callKey carries a request's retry facts to checkRetry and the log hook.
type callKey struct{}

type callInfo struct {
	clk           *clocks // told when a dial ends and a connection is had
	attempts      atomic.Int32
	idempotent    bool
	deadline      time.Time // zero: none
	statusRetries int       // 429/503 retries so far (one goroutine: retryablehttp's)
	waited        bool      // the call waited out a Retry-After; the next attempt starts afresh
	body          []byte    // the request body, sent again by a retry
}

// maxStatusRetries bounds retries of an agent's 429 or 503, however long
// the call's deadline.
const maxStatusRetries = 3

// checkRetry retries only what never reached the agent: a failed dial, or a
// pooled connection the agent closed before reading the request. An agent's
// 5xx, a reset after the request was sent, and anything once the response
// has begun are never retried: the agent may already be acting on it. The
// one exception is a method marked idempotent that got 429 or 503 with a
// Retry-After the call's deadline can wait for.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, context.Cause(ctx)
	}
	if resp != nil {
		ci, _ := ctx.Value(callKey{}).(*callInfo)
		if ci == nil || !ci.idempotent || ci.statusRetries >= maxStatusRetries || !retryAfterFits(resp, ci.deadline) {
			return false, nil
		}
		ci.statusRetries++
		return true, nil
	}
	return err != nil && neverSent(err), nil
}

// backoff is the wait before a retry: the agent's Retry-After for a 429 or
// 503, else an exponential backoff. It runs once the refused reply is read;
// from then until the next attempt the first-byte clock stops (only total
// goes on), since waiting as the agent asked is not the agent being slow to
// answer. The next attempt starts its connect and first-byte clocks again.
func backoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && resp.Request != nil {
		if ci, ok := resp.Request.Context().Value(callKey{}).(*callInfo); ok {
			ci.clk.waitRetry()
			ci.waited = true
		}
	}
	return retryablehttp.DefaultBackoff(min, max, attempt, resp)
}

// retryAfterFits reports whether resp is a 429 or 503 whose Retry-After
// (seconds or an HTTP date) ends before the deadline.
func retryAfterFits(resp *http.Response, deadline time.Time) bool {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return false
	}
	v := resp.Header.Get("Retry-After")
	var wait time.Duration
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		wait = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		wait = time.Until(at)
	} else {
		return false
	}
	return deadline.IsZero() || time.Now().Add(wait).Before(deadline)
}

func neverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return strings.Contains(err.Error(), "server closed idle connection")
}

// requestBody is a request's body. A retry gets a reader of its own from
// the start (rewind): the attempt before may still hold this one
// (net/http's Transport can close a body after RoundTrip).
type requestBody struct {
	bytes.Reader
	b []byte
}

func (b *requestBody) reset(body []byte) {
	b.b = body
	b.Reset(body)
}

func (b *requestBody) Close() error { return nil }

func (b *requestBody) rewind() (io.ReadCloser, error) {
	rb := new(requestBody)
	rb.reset(b.b)
	return rb, nil
}

// rewindBody readies a retried request's body for its next attempt: the
// call's whole body again (callInfo.body).
func rewindBody(req *http.Request) error {
	if ci, ok := req.Context().Value(callKey{}).(*callInfo); ok && ci.body != nil {
		rb := new(requestBody)
		rb.reset(ci.body)
		req.Body = rb
	}
	return nil
}

// zapLeveled adapts zap to retryablehttp's LeveledLogger. Its messages go
// out at debug level: the sidecar logs one line per call itself.
type zapLeveled struct{ l *zap.Logger }

func (z zapLeveled) log(msg string, kv []any) {
	ce := z.l.Check(zap.DebugLevel, msg)
	if ce == nil {
		return
	}
	fields := make([]zap.Field, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		fields = append(fields, zap.Any(k, kv[i+1]))
	}
	ce.Write(fields...)
}

func (z zapLeveled) Error(msg string, kv ...any) { z.log(msg, kv) }
func (z zapLeveled) Info(msg string, kv ...any)  { z.log(msg, kv) }
func (z zapLeveled) Debug(msg string, kv ...any) { z.log(msg, kv) }
func (z zapLeveled) Warn(msg string, kv ...any)  { z.log(msg, kv) }

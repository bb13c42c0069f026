package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// errCancelled is the cause a tools/call ends with when its client sends
// notifications/cancelled for it: the caller gave up on it, as if it had
// left, so it is logged so and answered with no response (the
// specification: a cancelled request gets none).
var errCancelled = fmt.Errorf("%w: the client cancelled the request (notifications/cancelled)", core.ErrClientGone)

// inflight are the tools/calls of the 2025 sessions being served, by
// session and request id, so that notifications/cancelled can end one. A
// request id is scoped to its session, and a notification is served only
// in its owner's session (legacy), so only the client that sent a request
// can cancel it. At most limit are held (limits.concurrency plus
// limits.queue, twice: a call is held from before it waits for its slot);
// past that a call is served but cannot be cancelled.
type inflight struct {
	limit int

	mu    sync.Mutex
	calls map[callKey]*exchange
}

// callKey names a request: its session's id and its JSON-RPC id as sent.
type callKey struct{ session, id string }

func newInflight(l config.Limits) *inflight {
	slots := l.Concurrency
	if slots <= 0 {
		slots = 2*runtime.GOMAXPROCS(0) + 1 // proxy.Concurrency's default
	}
	return &inflight{limit: 2 * (slots + max(l.Queue, 0)), calls: make(map[callKey]*exchange)}
}

// context is the call's context (core.Exchange.Context): held in the door's
// inflight while the call lasts, so that notifications/cancelled for its
// request ends it. A request whose id is being served already in the same
// session is not held a second time.
func (ex *exchange) context(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	ex.cancel = cancel
	ex.ctx = ctx
	in := ex.inflight
	in.mu.Lock()
	_, taken := in.calls[ex.key]
	held := !taken && len(in.calls) < in.limit
	if held {
		in.calls[ex.key] = ex
	}
	in.mu.Unlock()
	if held {
		context.AfterFunc(ctx, func() {
			in.mu.Lock()
			if in.calls[ex.key] == ex {
				delete(in.calls, ex.key)
			}
			in.mu.Unlock()
		})
	}
	return ctx
}

// cancel ends the call of session's request id, if one is being served
// here (reported): its agent's request ends, its slot is freed, and it
// writes no response.
func (in *inflight) cancel(session string, id json.RawMessage) bool {
	in.mu.Lock()
	ex := in.calls[callKey{session, string(id)}]
	in.mu.Unlock()
	if ex != nil {
		ex.cancelled.Store(true)
		ex.cancel(errCancelled)
	}
	return ex != nil
}

// len is how many calls are held.
func (in *inflight) len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.calls)
}

// cancellable is what an exchange of a 2025 session holds to be cancelled.
type cancellable struct {
	inflight  *inflight
	key       callKey
	cancel    context.CancelCauseFunc
	cancelled atomic.Bool // notifications/cancelled ended it: no response
}

// writeCancelled ends the HTTP response of a cancelled request that wrote
// nothing yet: 202 with no body, as MCP answers a message that gets no
// JSON-RPC response.
func writeCancelled(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) }

package core

import (
	"context"
	"sync"
	"time"
)

// End is one call's cancellation, its one hook on the request's context:
// the call's context is derived once (Begin), and whatever ends the call
// (the caller leaving, the server's shutdown, a clock of the agent's
// request, the call's own end) cancels it through End with a cause. What
// must happen when the call ends registers here rather than on the
// context: the bound on the reply's writes (HookCall) and the agent's
// connection (HookAgent). Each would otherwise be a context.AfterFunc or a
// derived context of its own, a few allocations each per call.
//
// The agent's side ends with the call or with a clock (EndAgent); the
// call's side (the writes) only with the call (EndCall). The zero End is
// ready for Begin; it lives in the call's own allocation.
type End struct {
	vals   values
	ctx    context.Context
	cancel context.CancelCauseFunc
	left   func() bool // stops the hook on the request's context

	mu         sync.Mutex
	agentEnded bool   // the context is cancelled
	callEnded  bool   // and the call is over (EndCall)
	agent      func() // run when the context is cancelled (HookAgent)
	call       Ender  // run when the call ends (HookCall)
}

// Ender is told when its call ends (End.HookCall).
type Ender interface{ CallEnded() }

// Begin derives the call's context from parent, the request's, and
// hooks parent's end once: the call ends with parent's cause when parent
// ends.
func (e *End) Begin(parent context.Context) context.Context {
	e.vals = values{parent: parent, e: e}
	e.ctx, e.cancel = context.WithCancelCause(&e.vals)
	if parent.Err() != nil {
		e.EndCall(context.Cause(parent))
	} else {
		e.left = context.AfterFunc(parent, e.parentEnded)
	}
	return e.ctx
}

func (e *End) parentEnded() { e.EndCall(context.Cause(e.vals.parent)) }

// EndCall ends the call with cause: its context is cancelled, and every
// hook runs (once).
func (e *End) EndCall(cause error) { e.end(cause, true) }

// EndAgent ends the call's context with cause, the agent's side only
// (HookAgent): the writes to the caller stay bounded as they were.
func (e *End) EndAgent(cause error) { e.end(cause, false) }

func (e *End) end(cause error, call bool) {
	e.cancel(cause)
	e.mu.Lock()
	e.agentEnded = true
	agent := e.agent
	e.agent = nil
	var ender Ender
	if call {
		e.callEnded = true
		ender, e.call = e.call, nil
	}
	e.mu.Unlock()
	if agent != nil {
		agent()
	}
	if ender != nil {
		ender.CallEnded()
	}
}

// Finish ends the call: its hook on the request's context is stopped and
// its context cancelled. Hooks still set run.
func (e *End) Finish() {
	if e.left != nil {
		e.left()
	}
	e.EndCall(nil)
}

// Detach stops the call ending with the request's context: the call
// goes on without its caller (Exchange.Detach). False when the request's
// context has ended already, and with it the call.
func (e *End) Detach() bool {
	if e.left == nil || !e.left() {
		return false
	}
	e.left = nil
	return true
}

// Shares reports whether ctx is cancelled exactly when the call's context
// is (ctx is the call's context, or only adds values to it).
func (e *End) Shares(ctx context.Context) bool {
	return e.ctx != nil && ctx.Done() == e.ctx.Done()
}

// HookAgent sets f to run when the call's context is cancelled, at once
// if it is. It reports false when a hook is set already: the caller then
// hooks ctx itself. UnhookAgent stops it.
func (e *End) HookAgent(f func()) bool {
	e.mu.Lock()
	if e.agent != nil {
		e.mu.Unlock()
		return false
	}
	if e.agentEnded {
		e.mu.Unlock()
		f()
		return true
	}
	e.agent = f
	e.mu.Unlock()
	return true
}

// UnhookAgent stops the hook HookAgent set, as the stop function of
// context.AfterFunc does: true if it stopped it from running, false when
// it ran (or runs) or was stopped already.
func (e *End) UnhookAgent() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	had := e.agent != nil
	e.agent = nil
	return had
}

// HookCall tells h when the call ends (EndCall), at once if it has.
func (e *End) HookCall(h Ender) {
	e.mu.Lock()
	if e.callEnded {
		e.mu.Unlock()
		h.CallEnded()
		return
	}
	e.call = h
	e.mu.Unlock()
}

// UnhookCall stops the hook HookCall set.
func (e *End) UnhookCall() {
	e.mu.Lock()
	e.call = nil
	e.mu.Unlock()
}

// EndOf is the End whose context ctx is or derives from, or nil.
func EndOf(ctx context.Context) *End {
	e, _ := ctx.Value(endKey{}).(*End)
	return e
}

type endKey struct{}

// values is the request's context without its cancellation, which End
// hooks instead: the parent of the call's context, holding its values.
type values struct {
	parent context.Context
	e      *End
}

func (v *values) Deadline() (time.Time, bool) { return v.parent.Deadline() }
func (v *values) Done() <-chan struct{}       { return nil }
func (v *values) Err() error                  { return nil }
func (v *values) Value(key any) any {
	if key == (endKey{}) {
		return v.e
	}
	return v.parent.Value(key)
}

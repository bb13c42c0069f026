package core

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// ender counts the CallEnded it is told.
type ender struct{ n atomic.Int32 }

func (e *ender) CallEnded() { e.n.Add(1) }

// ended waits for ctx to end, failing t (by name, not by the package's
// timeout) if it does not within 5 s: the hook on the parent runs on a
// goroutine of its own, at once.
func ended(t *testing.T, ctx context.Context, why string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("the call's context did not end within 5s of %s", why)
	}
}

// TestEndCallerLeaves: when the request's context ends (the caller
// left), the call's context ends with the request's cause, and each hook
// runs once; a hook set after runs at once.
func TestEndCallerLeaves(t *testing.T) {
	type key struct{}
	parent, leave := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
	var e End
	ctx := e.Begin(parent)
	if ctx.Value(key{}) != "v" || EndOf(ctx) != &e {
		t.Errorf("the call's context: value %v, EndOf %p, want the request's value and %p", ctx.Value(key{}), EndOf(ctx), &e)
	}
	var agent atomic.Int32
	if !e.HookAgent(func() { agent.Add(1) }) {
		t.Fatal("HookAgent on a fresh End = false")
	}
	if e.HookAgent(func() {}) {
		t.Error("a second HookAgent = true, want false (one hook; the caller hooks ctx itself)")
	}
	var call ender
	e.HookCall(&call)

	left := errors.New("the caller left")
	leave(left)
	ended(t, ctx, "the request's")
	if got := context.Cause(ctx); got != left {
		t.Errorf("cause = %v, want the request's %v", got, left)
	}
	waitCount(t, &agent, "the agent hook")
	waitCount(t, &call.n, "the call hook")

	e.Finish()
	e.EndCall(errors.New("again"))
	if agent.Load() != 1 || call.n.Load() != 1 {
		t.Errorf("hooks ran %d and %d times after ending more than once, want once each", agent.Load(), call.n.Load())
	}
	var late ender
	e.HookCall(&late)
	ranLate := false
	e.HookAgent(func() { ranLate = true })
	if late.n.Load() != 1 || !ranLate {
		t.Errorf("hooks set after the end ran: call %d, agent %v; want at once", late.n.Load(), ranLate)
	}
}

func waitCount(t *testing.T, n *atomic.Int32, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%s ran %d times within 5s, want once", what, n.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEndBeginAfterLeft: a request already ended when the call begins
// ends the call at once, with its cause.
func TestEndBeginAfterLeft(t *testing.T) {
	parent, leave := context.WithCancelCause(context.Background())
	left := errors.New("gone before")
	leave(left)
	var e End
	ctx := e.Begin(parent)
	if ctx.Err() == nil || context.Cause(ctx) != left {
		t.Errorf("the call's context: err %v, cause %v; want ended with %v", ctx.Err(), context.Cause(ctx), left)
	}
	var call ender
	e.HookCall(&call)
	if call.n.Load() != 1 {
		t.Errorf("a call hook on a call already ended ran %d times, want once at once", call.n.Load())
	}
}

// TestEndAgentOnly: EndAgent (a clock of the agent's request) ends the
// context and runs the agent hook, not the call's: the writes stay
// bounded as they were until the call ends.
func TestEndAgentOnly(t *testing.T) {
	var e End
	ctx := e.Begin(context.Background())
	var agent atomic.Int32
	e.HookAgent(func() { agent.Add(1) })
	var call ender
	e.HookCall(&call)
	clock := errors.New("first byte")
	e.EndAgent(clock)
	if context.Cause(ctx) != clock || agent.Load() != 1 || call.n.Load() != 0 {
		t.Errorf("after EndAgent: cause %v, agent hook %d, call hook %d; want %v, 1, 0", context.Cause(ctx), agent.Load(), call.n.Load(), clock)
	}
	e.EndCall(errors.New("later"))
	if context.Cause(ctx) != clock || call.n.Load() != 1 {
		t.Errorf("after EndCall: cause %v, call hook %d; want the first cause kept, 1", context.Cause(ctx), call.n.Load())
	}
}

// TestEndUnhook: a hook stopped never runs; UnhookAgent says whether it
// stopped it, as context.AfterFunc's stop does.
func TestEndUnhook(t *testing.T) {
	var e End
	e.Begin(context.Background())
	ran := false
	e.HookAgent(func() { ran = true })
	if !e.UnhookAgent() || e.UnhookAgent() {
		t.Error("UnhookAgent = false on a set hook, or true twice")
	}
	var call ender
	e.HookCall(&call)
	e.UnhookCall()
	e.EndCall(errors.New("end"))
	if ran || call.n.Load() != 0 {
		t.Errorf("stopped hooks ran: agent %v, call %d", ran, call.n.Load())
	}

	var f End
	f.Begin(context.Background())
	f.HookAgent(func() {})
	f.EndAgent(errors.New("clock"))
	if f.UnhookAgent() {
		t.Error("UnhookAgent after the hook ran = true, want false")
	}
}

// TestEndFinish: Finish ends the call: its context cancelled, the hooks
// still set run; the request ending afterwards changes nothing.
func TestEndFinish(t *testing.T) {
	parent, leave := context.WithCancelCause(context.Background())
	var e End
	ctx := e.Begin(parent)
	var call ender
	e.HookCall(&call)
	e.Finish()
	if !errors.Is(ctx.Err(), context.Canceled) || context.Cause(ctx) != context.Canceled || call.n.Load() != 1 {
		t.Errorf("after Finish: err %v, cause %v, call hook %d; want canceled, its own cause, 1", ctx.Err(), context.Cause(ctx), call.n.Load())
	}
	leave(errors.New("after"))
	if context.Cause(ctx) != context.Canceled {
		t.Errorf("the request ending after Finish: cause %v; want canceled", context.Cause(ctx))
	}
}

// TestEndShares: Shares says whether a context is cancelled exactly with
// the call's: the call's own, or one adding only values; not one with a
// cancellation of its own, nor any before Begin.
func TestEndShares(t *testing.T) {
	var e End
	if e.Shares(context.Background()) {
		t.Error("a zero End shares context.Background")
	}
	parent, deadline := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer deadline()
	ctx := e.Begin(parent)
	type key struct{}
	valued := context.WithValue(ctx, key{}, 1)
	own, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"the call's", ctx, true},
		{"with a value", valued, true},
		{"with its own cancel", own, false},
		{"the request's", parent, false},
	} {
		if got := e.Shares(tt.ctx); got != tt.want {
			t.Errorf("Shares(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if d, ok := ctx.Deadline(); !ok || d != func() time.Time { d, _ := parent.Deadline(); return d }() {
		t.Errorf("the call's deadline = %v, %v; want the request's", d, ok)
	}
	if EndOf(context.Background()) != nil {
		t.Error("EndOf(context.Background()) != nil")
	}
	e.Finish()
}

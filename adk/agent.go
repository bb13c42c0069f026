package adk

import (
	"context"
	"encoding/json"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Agent is the App as the serving side sees it: the core.Agent that
// answers the methods whose entry names an "adk.*" handler.
func (a *App) Agent() core.Agent { return agent{a} }

type agent struct{ app *App }

func (g agent) Unary(ctx context.Context, c core.Call) (json.RawMessage, error) {
	return g.app.Unary(withPhases(ctx, c.Phases()), c.Method, c.Name, c.Input, c.Header)
}

func (g agent) Stream(ctx context.Context, c core.Call) (core.Records, error) {
	s, done, err := g.app.Stream(withPhases(ctx, c.Phases()), c.Method, c.Name, c.Input, c.Header)
	if err != nil {
		return nil, err
	}
	r := records{Records: s, done: done}
	if w, ok := s.(core.Waiter); ok {
		return &waitingRecords{r, w}, nil
	}
	return &r, nil
}

// records is a handler's stream with the function that releases it.
type records struct {
	core.Records
	done func()
}

func (r *records) Close() { r.done() }

// waitingRecords are records that say when they wait for the ADK server
// (a run's events do), so the writer flushes only then.
type waitingRecords struct {
	records
	core.Waiter
}

var (
	_ core.Records = (*records)(nil)
	_ core.Waiter  = (*waitingRecords)(nil)
)

// phasesKey carries a call's core.Phases to the requests its handler
// makes (App.send): each notes its connection and reply head over the
// last one's, so the call's are its last request's before its answer
// (the run's, for a stream). A session deleted after the call notes none.
type phasesKey struct{}

func withPhases(ctx context.Context, p *core.Phases) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, phasesKey{}, p)
}

func phasesOf(ctx context.Context) *core.Phases {
	p, _ := ctx.Value(phasesKey{}).(*core.Phases)
	return p
}

package proxy

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// explain gives err the cause a bare context.Canceled hides, so that no
// caller or log reads "context canceled" alone: the caller left, or the
// call's context was ended with a cause (ErrShuttingDown).
func explain(ctx, request context.Context, err error) error {
	if request.Err() != nil {
		if errors.Is(err, core.ErrClientGone) {
			return err
		}
		return fmt.Errorf("%w (%v)", core.ErrClientGone, err)
	}
	if errors.Is(err, context.Canceled) {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return fmt.Errorf("%w (%v)", cause, err)
		}
	}
	return err
}

// failed records on the call that f ended it, with err, the full text, for
// its log line.
func (c *call) failed(f core.Failure, err error) core.Failure {
	c.outcome, c.phase, c.reason, c.err = f.Outcome, f.Phase, f.Reason, err
	return f
}

// callerLeft records a write to the caller that failed: the caller left.
func (c *call) callerLeft(err error) {
	c.failed(core.ReasonFailure("CALLER_LEFT", ""), fmt.Errorf("%w: writing the reply: %v", core.ErrClientGone, err))
}

// logReadiness logs why the agent is not ready, which /healthz does not
// say on the public port, once for each new reason.
func (s *Server) logReadiness(ok bool, detail string) {
	if ok {
		s.notReady.Store(nil)
		return
	}
	if old := s.notReady.Swap(&detail); old == nil || *old != detail {
		s.Logger.Info("agent not ready", zap.String("detail", detail))
	}
}

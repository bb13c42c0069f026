package ask

import (
	"context"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TellTimeout bounds the call that tells an agent its question expired
// when the method sets no total time (timeouts.total).
const TellTimeout = 30 * time.Second

// Tell calls c's method again, its input c's with reply r (WithReply),
// and reads and drops what the agent answers: how a door tells the agent
// that its question will not be answered (Expiry). The call is bounded by
// the method's total time (TellTimeout when it has none) and ends with
// ctx: a door gives it a context that outlives the request that asked.
// It returns the call's error, for the log.
func Tell(ctx context.Context, a core.Agent, c core.Call, r Reply) error {
	limit := TellTimeout
	if c.Method != nil && c.Method.Timeouts.Total > 0 {
		limit = c.Method.Timeouts.Total
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	raw := WithReply(c.Input.Raw, r)
	c.Input = core.Input{Raw: raw}
	if c.Method != nil && core.ReadsFields(c.Method) {
		in, err := core.ParseInput(raw)
		if err != nil {
			return err
		}
		c.Input = in
	}
	if c.Method == nil || !c.Method.Mode.Streaming() {
		_, err := a.Unary(ctx, c)
		return err
	}
	recs, err := a.Stream(ctx, c)
	if err != nil {
		return err
	}
	defer recs.Close()
	for recs.Next() {
	}
	return recs.Err()
}

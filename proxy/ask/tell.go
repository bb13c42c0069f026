package ask

import (
	"context"
	"encoding/json"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Again calls c's method again, its input c's with reply r (WithReply),
// and returns its records: a stream's, or a unary method's output as one
// record, so that either is read as a stream. stream says whether the
// method streams.
func Again(ctx context.Context, a core.Agent, c core.Call, stream bool, r Reply) (core.Records, error) {
	raw := WithReply(c.Input.Raw, r)
	c.Input = core.Input{Raw: raw}
	if c.Method != nil && core.ReadsFields(c.Method) {
		in, err := core.ParseInput(raw)
		if err != nil {
			return nil, err
		}
		c.Input = in
	}
	if !stream {
		out, err := a.Unary(ctx, c)
		if err != nil {
			return nil, err
		}
		return &output{out: out}, nil
	}
	return a.Stream(ctx, c)
}

// output is a unary call's output as one record.
type output struct {
	out  json.RawMessage
	done bool
}

func (o *output) Next() bool {
	if o.done {
		return false
	}
	o.done = true
	return true
}
func (o *output) Record() []byte { return o.out }
func (o *output) Err() error     { return nil }
func (o *output) Close()         {}

// TellTimeout bounds the call that tells an agent its question expired
// when the method sets no total time (timeouts.total).
const TellTimeout = 30 * time.Second

// Tell calls c's method again with reply r (Again) and reads and drops
// what the agent answers: how a door tells the agent that its question
// will not be answered (Expiry). The call is bounded by the method's
// total time (TellTimeout when it has none) and ends with ctx: a door
// gives it a context that outlives the request that asked. It returns
// the call's error, for the log.
func Tell(ctx context.Context, a core.Agent, c core.Call, r Reply) error {
	limit := TellTimeout
	if c.Method != nil && c.Method.Timeouts.Total > 0 {
		limit = c.Method.Timeouts.Total
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	recs, err := Again(ctx, a, c, c.Method != nil && c.Method.Mode.Streaming(), r)
	if err != nil {
		return err
	}
	defer recs.Close()
	for recs.Next() {
	}
	return recs.Err()
}

package state

import (
	"context"
	"net"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the spans' instrumentation scope.
const tracerName = "github.com/sidecar-dev/sidecar/state"

// spans is the client's hook that makes every round trip to Redis a
// CLIENT span, the child of the span its ctx carries (a call's SERVER
// span, proxy.Server.Tracer): a command, or a pipeline of several, is one
// span. A ctx without a recording span (tracing off, the background
// renewal of leases) makes none and costs nothing.
type spans struct{ addr string }

func (spans) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h spans) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, span := h.start(ctx, cmd.Name(), 1)
		if span == nil {
			return next(ctx, cmd)
		}
		err := next(ctx, cmd)
		end(span, err)
		return err
	}
}

func (h spans) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		name := "pipeline"
		if len(cmds) > 0 {
			name = cmds[0].Name() // MULTI, or the first command
		}
		ctx, span := h.start(ctx, name, len(cmds))
		if span == nil {
			return next(ctx, cmds)
		}
		err := next(ctx, cmds)
		if err == nil {
			for _, c := range cmds {
				if e := c.Err(); e != nil && e != redis.Nil {
					err = e
					break
				}
			}
		}
		end(span, err)
		return err
	}
}

// start starts the span of a round trip of n commands, the first named
// name; nil when ctx has no recording span.
func (h spans) start(ctx context.Context, name string, n int) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	host, port, _ := net.SplitHostPort(h.addr)
	return parent.TracerProvider().Tracer(tracerName).Start(ctx, "redis "+name,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("db.system.name", "redis"),
			attribute.String("db.operation.name", name),
			attribute.Int("db.operation.batch.size", n),
			attribute.String("server.address", host),
			attribute.String("server.port", port), // as the address gives it
		))
}

// end ends span with err as its status (a missing key is no error).
func end(span trace.Span, err error) {
	if err != nil && err != redis.Nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

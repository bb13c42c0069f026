package state

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sidecar-dev/sidecar/internal/redistest"
)

// TestSpans: under a call's span, a command and a pipeline are each one
// CLIENT span, the call's children (a new connection's HELLO one more), named for the command; a command
// with no span in its ctx makes none; a failed round trip (the server
// stopped) is a span with status Error, and an *Error naming its op and
// the server, whose answer to callers (Message) names neither.
func TestSpans(t *testing.T) {
	srv := redistest.Start(t)
	r, err := Open(redisState(), env("REDIS_URL", srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c := r.Client()
	if err := c.Set(ctx, r.Key("t", "plain"), "1", 0).Err(); err != nil { // no span in ctx
		t.Fatal(err)
	}
	call, parent := tp.Tracer("test").Start(ctx, "POST /")
	if err := c.Set(call, r.Key("t", "a"), "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipelined(call, func(p redis.Pipeliner) error {
		p.Get(call, r.Key("t", "a"))
		p.Get(call, r.Key("t", "missing"))
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	srv.Stop()
	failed := r.Fail("reading task t1", c.Get(call, r.Key("t", "a")).Err())
	parent.End()

	var e *Error
	if !errors.As(failed, &e) || !strings.Contains(failed.Error(), "reading task t1: redis at "+srv.Addr()) {
		t.Errorf("Fail = %v, want an *Error naming the op and %s", failed, srv.Addr())
	}
	if strings.Contains(Message, srv.Addr()) || !IsError(failed) || IsError(r.Fail("x", redis.Nil)) {
		t.Errorf("IsError and Message wrong")
	}
	var got []string
	for _, s := range rec.Ended() {
		if s.Name() == "POST /" || s.Name() == "redis hello" {
			continue // a new connection's handshake, under the round trip that dialed it
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %s: parent %s kind %s, want the call's child, CLIENT", s.Name(), s.Parent().SpanID(), s.SpanKind())
		}
		got = append(got, s.Name()+":"+s.Status().Code.String())
	}
	want := "redis set:Unset redis get:Unset redis get:Error"
	if strings.Join(got, " ") != want {
		t.Errorf("spans = %v, want %s (one per round trip, none without a span in ctx)", got, want)
	}
}

package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/internal/otlptest"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/tracing"
)

// tracedBench is the harness option of a sidecar with tracing on as
// production has it (tracing.FromEnv: the batching processor, OTLP/HTTP)
// exporting to a receiver in the process, and a done to call after the
// loop: it flushes and reports the spans received per call (2 when none
// was dropped: the server span and the client span).
func tracedBench(b *testing.B) (harnessOption, func()) {
	rec := otlptest.NewHTTP(b)
	p, err := tracing.FromEnv(context.Background(), func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rec.URL}[k]
	}, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	return withTracer(p.Tracer()), func() {
		b.StopTimer()
		if err := p.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(rec.Spans()))/float64(b.N), "spans/call")
	}
}

// BenchmarkUnaryTraced is BenchmarkUnary with tracing on: the difference
// is the cost of a call's two spans, their propagation and export.
func BenchmarkUnaryTraced(b *testing.B) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"Echo: hello"}`)
	}))
	defer agent.Close()
	traced, done := tracedBench(b)
	h := newHarness(b, agent.URL, oneMethodConfig, traced)
	body := `{"class_method":"query","input":{"message":"hello"}}`
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(h.url+core.RouteUnary, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	done()
}

// BenchmarkStreamTraced streams n records through the sidecar, tracing
// off and on: a span's cost is per call, not per record (records are
// counted, not each recorded), which the n=1 and n=1000 rows show.
func BenchmarkStreamTraced(b *testing.B) {
	for _, n := range []int{1, 1000} {
		var events strings.Builder
		for range n {
			events.WriteString("data: {\"text\": \"a token of the reply\", \"partial\": true}\n\n")
		}
		agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, events.String())
		}))
		defer agent.Close()
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("records=%d/tracing=%v", n, on), func(b *testing.B) {
				var opts []harnessOption
				done := func() {}
				if on {
					var traced harnessOption
					traced, done = tracedBench(b)
					opts = append(opts, traced)
				}
				h := newHarness(b, agent.URL, oneMethodConfig, opts...)
				body := `{"class_method":"stream_query","input":{"message":"hello"}}`
				b.ReportAllocs()
				for b.Loop() {
					resp, err := http.Post(h.url+core.RouteStream, "application/json", strings.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				done()
			})
		}
	}
}

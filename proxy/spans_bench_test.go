package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/internal/otlptest"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/tracing"
)

// BenchmarkTracing is one call through the sidecar with tracing off and
// on: a unary call, and streams of 1 and 1,000 records. On, the sidecar
// traces as in production (tracing.FromEnv: the batching span processor,
// OTLP/HTTP protobuf) to a receiver in the process (otlptest.NewCounter:
// it decodes each export and counts its spans). Besides ns/op it reports
// cpu-ns/op, the CPU time of the whole process per call (the caller, the
// sidecar, the agent, the exporter and the receiver, every goroutine),
// less sensitive than wall time to a busy machine; and spans/call after
// the final flush: 2 (the server and the client span) when none was
// dropped. The per-call cost of tracing is the difference of the off and
// on rows of a run; the stream rows show it does not grow with records.
func BenchmarkTracing(b *testing.B) {
	var events strings.Builder
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/q" { // oneMethodConfig's query
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"text":"Echo: hello"}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, events.String())
	}))
	defer agent.Close()
	for _, records := range []int{0, 1, 1000} {
		events.Reset()
		for range records {
			events.WriteString("data: {\"text\": \"a token of the reply\", \"partial\": true}\n\n")
		}
		route, body, name := core.RouteUnary, `{"class_method":"query","input":{"message":"hello"}}`, "unary"
		if records > 0 {
			route, body = core.RouteStream, `{"class_method":"stream_query","input":{"message":"hello"}}`
			name = fmt.Sprintf("stream=%d", records)
		}
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/tracing=%v", name, on), func(b *testing.B) {
				var opts []harnessOption
				var p *tracing.Provider
				var rec *otlptest.Receiver
				if on {
					rec = otlptest.NewCounter(b)
					var err error
					p, err = tracing.FromEnv(context.Background(), func(k string) string {
						return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rec.URL}[k]
					}, zap.NewNop())
					if err != nil {
						b.Fatal(err)
					}
					opts = append(opts, withTracer(p.Tracer()))
				}
				h := newHarness(b, agent.URL, oneMethodConfig, opts...)
				b.ReportAllocs()
				cpu := cpuTime()
				for b.Loop() {
					resp, err := http.Post(h.url+route, "application/json", strings.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
				if on {
					b.StopTimer()
					if err := p.Shutdown(context.Background()); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(rec.Count())/float64(b.N), "spans/call")
				}
			})
		}
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

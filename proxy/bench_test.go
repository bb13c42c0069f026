package proxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/quota"
)

// BenchmarkUnary is one unary call through the sidecar to an in-process
// agent, over loopback: the sidecar's per-call cost plus net/http's. The
// sidecar logs its call line as cmd/sidecar does (JSON, at info level, to
// a writer that drops it) and records its metrics. The caller and the
// agent are counted too: bench/cmd/goproxy's BenchmarkFloorUnary measures
// them alone (direct) and behind the least net/http proxy (go-raw), the
// same way.
func BenchmarkUnary(b *testing.B) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"Echo: hello"}`)
	}))
	defer agent.Close()
	h := newHarness(b, agent.URL, oneMethodConfig, withLogCore(productionCore), withMetrics(metrics.New()))
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
}

// BenchmarkUnaryPerCaller is BenchmarkUnary with limits.per_caller on
// (counted in the process, set never to refuse): what the limit adds to a
// call. Its own share, from a profile:
//
//	go test -run '^$' -bench UnaryPerCaller -cpuprofile cpu.out -o proxy.test ./proxy/
//	go tool pprof -top -focus 'quota|callerKey|SetHeaders' proxy.test cpu.out
func BenchmarkUnaryPerCaller(b *testing.B) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"Echo: hello"}`)
	}))
	defer agent.Close()
	h := newHarness(b, agent.URL, oneMethodConfig+"limits: {per_caller: {requests: 1000000, per: 1s, concurrent: 10000}}\n",
		withLogCore(productionCore), withMetrics(metrics.New()),
		withServer(func(s *Server) { s.Quota = quota.New(s.Config.Limits.PerCaller, nil) }))
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
}

// productionCore is the log core cmd/sidecar's newLogger makes (JSON, the
// Cloud Logging keys, info level) writing to io.Discard, in place of the
// harness's observer.
func productionCore(zapcore.Core) zapcore.Core {
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey, enc.MessageKey, enc.LevelKey = "time", "message", "severity"
	enc.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	enc.EncodeDuration = zapcore.MillisDurationEncoder
	return zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(io.Discard)), zapcore.InfoLevel)
}

// BenchmarkStreamSSE is one streamed call through the sidecar: the agent
// sends 1,000 SSE events in a burst, the caller reads 1,000 ndjson lines.
// It measures the per-record path: deframe, write, flush.
func BenchmarkStreamSSE(b *testing.B) {
	const n = 1000
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
	h := newHarness(b, agent.URL, oneMethodConfig)
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
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkIdleStream is what an open stream costs the process while the
// agent sends nothing: 1,000 streams through the sidecar, each with one
// record read, then held; stack-B/stream and heap-B/stream are the
// growth of the runtime's stacks and heap over them, the caller's and
// the agent's goroutines counted too (the same in every build). A
// frame or defer more on the handler's path can double each stream's
// handler stack (8 to 16 KiB), which this shows and the bench's RSS
// rows confirm.
func BenchmarkIdleStream(b *testing.B) {
	const n = 1000
	release := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"text\": \"a\"}\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer agent.Close()
	defer close(release)
	h := newHarness(b, agent.URL, oneMethodConfig+"limits: {concurrency: 2000}\n", withLogCore(productionCore), withMetrics(metrics.New()))
	body := `{"class_method":"stream_query","input":{"message":"hello"}}`
	usage := func() (stack, heap uint64) {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.StackInuse, m.HeapInuse
	}
	var stack, heap float64
	for b.Loop() {
		transport := &http.Transport{MaxIdleConnsPerHost: n}
		client := &http.Client{Transport: transport}
		s0, h0 := usage()
		var open []io.Closer
		for range n {
			resp, err := client.Post(h.url+core.RouteStream, "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				b.Fatal(err)
			}
			open = append(open, resp.Body)
		}
		s1, h1 := usage()
		stack += float64(s1-s0) / n
		heap += float64(h1-h0) / n
		for _, c := range open {
			c.Close()
		}
		transport.CloseIdleConnections()
	}
	b.ReportMetric(stack/float64(b.N), "stack-B/stream")
	b.ReportMetric(heap/float64(b.N), "heap-B/stream")
}

// BenchmarkRefusal is one request the door refuses itself (a 404) over
// loopback: its answer, log line and metrics, beside BenchmarkUnary's
// call.
func BenchmarkRefusal(b *testing.B) {
	h := newHarness(b, "http://127.0.0.1:1", oneMethodConfig)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Get(h.url + "/nope")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			b.Fatalf("GET /nope = %d, want 404", resp.StatusCode)
		}
	}
}

package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// BenchmarkUnary is one unary call through the sidecar to an in-process
// agent, over loopback: the sidecar's per-call cost plus net/http's.
func BenchmarkUnary(b *testing.B) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"Echo: hello"}`)
	}))
	defer agent.Close()
	h := newHarness(b, agent.URL, oneMethodConfig)
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

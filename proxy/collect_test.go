package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestCollectAfterManyEnd: when many calls in flight end (collectDrop
// streams whose callers left), their memory is collected then, without
// waiting for other work to allocate enough to trigger a collection.
// Collections are otherwise off for the test, so only that one can count.
func TestCollectAfterManyEnd(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // an idle stream, until its caller leaves
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, "upstream: {url: AGENT}\nlimits: {concurrency: 1000}\nmethods:\n  stream_query: {mode: stream, call: POST /s}\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streams := make([]*lineReader, collectDrop)
	for i := range streams {
		streams[i] = h.open(ctx, core.RouteStream, `{"class_method":"stream_query","input":{}}`)
		streams[i].next(t) // open, its first record read
	}

	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.NumGC
	for _, s := range streams {
		s.cancel()
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.ReadMemStats(&ms); ms.NumGC == before; runtime.ReadMemStats(&ms) {
		if time.Now().After(deadline) {
			t.Fatalf("no collection within 10s of %d streams ending (%d in flight)", collectDrop, h.server.InFlight())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

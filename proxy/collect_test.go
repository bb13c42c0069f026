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
//
// A caller leaving must end its call: were it not told (core.End's hook
// on the request's context), the calls would stay in flight, and the test
// fails saying so, then ends its agent's streams as it ends (t.Context),
// so that nothing waits for them.
func TestCollectAfterManyEnd(t *testing.T) {
	hangsAfter(t, time.Minute)
	ended := t.Context()
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		http.NewResponseController(w).Flush()
		select { // an idle stream, until its caller leaves
		case <-r.Context().Done():
		case <-ended.Done():
		}
	}))
	t.Cleanup(agent.Close) // after the sidecar's, which waits for its calls
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
	for h.server.InFlight() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls still in flight 10s after their callers left: a caller leaving does not end its call", h.server.InFlight(), collectDrop)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for runtime.ReadMemStats(&ms); ms.NumGC == before; runtime.ReadMemStats(&ms) {
		if time.Now().After(deadline) {
			t.Fatalf("no collection within 10s of %d streams ending (%d in flight)", collectDrop, h.server.InFlight())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

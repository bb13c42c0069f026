package dialect

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestEveryEmitBounded: every emit mode (config.Emits, so a new one is in
// the table by existing) streams a Vercel AI SDK stream of 1000 text
// deltas of 64 KiB (62.5 MiB: 250 times record_bytes, 62 times
// reply_bytes) with the sidecar holding only the next line: every line
// within record_bytes, the stream's bytes all out, a clean end, and the
// live heap, sampled by the agent as it streams, growing far less than
// the stream (8 MiB at most: what the next line needs, and the client's
// heads of lines, are 1 to 1.5 MiB; see liveHeap).
func TestEveryEmitBounded(t *testing.T) {
	const n, size, limit = 1000, 64 << 10, 256 << 10
	delta := strings.Repeat("x", size-1)
	for _, emit := range config.Emits() {
		t.Run(string(emit), func(t *testing.T) {
			watch := newHeapWatch()
			agent := streamAgent(t, "text/event-stream", http.Header{"X-Vercel-Ai-Ui-Message-Stream": {"v1"}}, watch, func(i int) []byte {
				switch {
				case i < n:
					return []byte(`data: {"type":"text-delta","id":"t","delta":"` + delta + string(rune('a'+i%26)) + "\"}\n\n")
				case i == n:
					return []byte("data: {\"type\":\"finish\"}\n\ndata: [DONE]\n\n")
				}
				return nil
			})
			url, _ := mappedSidecar(t, agent.URL, "upstream: {url: \"AGENT\"}\nlimits: {record_bytes: 256KiB, reply_bytes: 1MiB}\n"+
				"methods: {query: {mode: stream, call: POST /, emit: "+string(emit)+"}}\n")
			a := post(t, url, core.RouteStream, "query")
			if a.status != http.StatusOK || len(a.lines) == 0 || a.longest > limit {
				t.Fatalf("emit %s: status %d, %d lines, longest %d bytes, want 200 and at most record_bytes (%d)", emit, a.status, len(a.lines), a.longest, limit)
			}
			if last := a.lines[len(a.lines)-1]; reasonOf(last) != "" {
				t.Fatalf("emit %s ended with %s, want a clean end", emit, last)
			}
			var total int
			for i, l := range a.lines {
				if a.lengths[i] <= shortLine && !json.Valid([]byte(l)) {
					t.Errorf("emit %s: line %d = %s, not JSON", emit, i, l)
				}
				total += a.lengths[i]
			}
			if total < n*size {
				t.Errorf("emit %s: %d bytes out, want at least the %d of the text", emit, total, n*size)
			}
			t.Logf("emit %s: live heap grew %.1f MiB", emit, watch.grew())
			if g := watch.grew(); g > 8 {
				t.Errorf("emit %s: live heap grew %.1f MiB while streaming %d MiB, want it bounded by what the next line needs", emit, g, n*size>>20)
			}
		})
	}
}

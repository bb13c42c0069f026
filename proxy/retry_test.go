package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdempotentRetryOutlivesFirstByte: the wait an agent's Retry-After
// asks for is not its time to first byte. The caller gets the retried
// answer, or the agent's own 429 when no retry fits the total time; the
// retried attempt has its own first_byte limit.
func TestIdempotentRetryOutlivesFirstByte(t *testing.T) {
	tests := []struct {
		name       string
		timeouts   string
		failures   int32         // calls answered 429 with Retry-After: 1
		stall      time.Duration // how long later calls wait before answering
		wantStatus int
		wantCalls  int32
	}{
		{"retried answer", "{first_byte: 5s, total: 20s}", 1, 0, 200, 2},
		{"the agent's 429 when no retry fits", "{first_byte: 400ms, total: 1500ms}", 100, 0, 429, 2},
		{"the retry's own first byte", "{first_byte: 1s, total: 20s}", 1, 30 * time.Second, 504, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // so its context ends when the sidecar leaves
				w.Header().Set("Content-Type", "application/json")
				if calls.Add(1) <= tt.failures {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
					io.WriteString(w, `{"detail":"slow down"}`)
					return
				}
				select {
				case <-time.After(tt.stall):
				case <-r.Context().Done():
					return
				}
				io.WriteString(w, `{"ok":true}`)
			}))
			defer agent.Close()
			h := newHarness(t, agent.URL, "upstream: {url: AGENT}\nmethods:\n  safe: {idempotent: true, timeouts: "+tt.timeouts+"}\n")
			start := time.Now()
			r := h.unary("safe", `{}`)
			if r.status != tt.wantStatus {
				t.Errorf("status = %d %s after %v, want %d", r.status, r.body, time.Since(start).Round(time.Millisecond), tt.wantStatus)
			}
			if tt.wantStatus == http.StatusTooManyRequests && detail(t, r) != "slow down" {
				t.Errorf("detail = %q, want the agent's", detail(t, r))
			}
			if n := calls.Load(); n != tt.wantCalls {
				t.Errorf("agent called %d times, want %d", n, tt.wantCalls)
			}
		})
	}
}

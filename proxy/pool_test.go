package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCallLinesShareNothing: the call lines' fields are gathered in
// pooled slices, and one call's line never carries another's fields: a
// call that succeeds right after one that failed logs no error, reason
// or retries of it.
func TestCallLinesShareNothing(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), "fail") {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"detail":"the agent failed"}`)
			return
		}
		io.WriteString(w, `{"ok":true}`)
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, oneMethodConfig)
	logged := func(n int) func() bool {
		return func() bool { return h.logs.FilterMessage("call").Len() == n }
	}
	const pairs = 20
	for i := range pairs {
		if r := h.unary("query", `{"fail":true}`); r.status != http.StatusInternalServerError {
			t.Fatalf("failing call = %d %s, want 500", r.status, r.body)
		}
		waitFor(t, logged(2*i+1))
		if r := h.unary("query", `{"n":1}`); r.status != http.StatusOK {
			t.Fatalf("call = %d %s, want 200", r.status, r.body)
		}
		waitFor(t, logged(2*i+2))
	}
	lines := h.logs.FilterMessage("call").All()
	for i, e := range lines {
		fields := e.ContextMap()
		failed := i%2 == 0
		if _, ok := fields["error"]; ok != failed {
			t.Errorf("line %d (failed %v) has an error field: %v, want %v: %v", i, failed, ok, failed, fields)
		}
		if _, ok := fields["reason"]; ok != failed {
			t.Errorf("line %d (failed %v) has a reason field: %v, want %v: %v", i, failed, ok, failed, fields)
		}
		if n, want := len(e.Context), len(lines[i%2].Context); n != want {
			t.Errorf("line %d has %d fields, want %d as line %d: %v", i, n, want, i%2, fields)
		}
	}
}

package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
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
		resp, err := http.Post(h.url+config.RouteUnary, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

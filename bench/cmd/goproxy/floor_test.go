package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// BenchmarkFloorUnary measures the floors of proxy.BenchmarkUnary the
// same way: the same in-process agent and the same caller (http.Post,
// net/http's client), with no proxy between them (direct), with go-raw
// (net/http's server and the hand-written client of raw.go) and with go
// (net/http's server and Transport). Their allocations per call are what
// the caller and the agent cost (direct), and what a proxy on net/http's
// server costs at the least (go-raw minus direct): the floor of the
// sidecar's own share of BenchmarkUnary's allocs/op (BENCHMARKS.md).
func BenchmarkFloorUnary(b *testing.B) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"Echo: hello"}`)
	}))
	defer agent.Close()
	target, err := url.Parse(agent.URL)
	if err != nil {
		b.Fatal(err)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	defer transport.CloseIdleConnections()
	for _, tt := range []struct {
		name  string
		proxy http.Handler
	}{
		{"direct", nil},
		{"go-raw", newRaw(target.Host)},
		{"go", &minimal{target: target, transport: transport}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			addr := agent.URL
			if tt.proxy != nil {
				srv := httptest.NewServer(tt.proxy)
				defer srv.Close()
				addr = srv.URL
			}
			body := `{"class_method":"query","input":{"message":"hello"}}`
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.Post(addr+"/api/reasoning_engine", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
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

// ladderAgent is the in-process agent of the ladder's test and
// benchmark: the stand-in agent's /query, its JSON reply of known length.
func ladderAgent(tb testing.TB) *httptest.Server {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/query" || r.Method != http.MethodPost {
			http.Error(w, "not /query", http.StatusNotFound)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"Echo: hello"}`)
	}))
	tb.Cleanup(agent.Close)
	return agent
}

// TestLadderRungsAnswer checks that every rung of the floor ladder
// serves the platform's unary call: 200, and from envelope up the
// sidecar's {"output": …} answer. Each rung writes its log line from
// log up (server included), with the call's fields.
func TestLadderRungsAnswer(t *testing.T) {
	agent := ladderAgent(t)
	target, _ := url.Parse(agent.URL)
	for i, name := range rungs {
		t.Run(name, func(t *testing.T) {
			var logged strings.Builder
			h, stop, err := newLadder(i, target.Host, &syncWriter{w: &logged})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			for range 3 { // the second and third on a pooled connection
				resp, err := http.Post(srv.URL+"/api/reasoning_engine", "application/json",
					strings.NewReader(`{"class_method":"query","input":{"message":"hello"}}`))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := `{"text":"Echo: hello"}`
				if i >= rungEnvelope {
					want = `{"output":{"text":"Echo: hello"}}` + "\n"
				}
				if resp.StatusCode != http.StatusOK || string(got) != want {
					srv.Close()
					t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, got, want)
				}
			}
			// The line follows the reply: Close waits for the handlers;
			// stop flushes a buffered log.
			srv.Close()
			stop()
			lines := strings.Count(logged.String(), `"message":"call"`)
			switch {
			case i < rungLog && lines != 0:
				t.Errorf("rung %s logged %d call lines, want none", name, lines)
			case i >= rungLog && (lines != 3 || !strings.Contains(logged.String(), `"class_method":"query"`)):
				t.Errorf("rung %s logged %d call lines, want 3 with class_method: %s", name, lines, logged.String())
			}
		})
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// BenchmarkFloorLadder is the allocations per call of each rung of the
// floor ladder (ladder.go), measured as BenchmarkFloorUnary and
// proxy.BenchmarkUnary are: http.Post to the rung, an in-process agent,
// the log line to io.Discard. The caller and the agent are counted too
// (BenchmarkFloorUnary/direct).
func BenchmarkFloorLadder(b *testing.B) {
	agent := ladderAgent(b)
	target, _ := url.Parse(agent.URL)
	for i, name := range rungs {
		b.Run(name, func(b *testing.B) {
			h, stop, err := newLadder(i, target.Host, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			srv := httptest.NewServer(h)
			defer srv.Close()
			body := `{"class_method":"query","input":{"message":"hello"}}`
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.Post(srv.URL+"/api/reasoning_engine", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}

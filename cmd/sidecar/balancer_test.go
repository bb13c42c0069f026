package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// balancer is TestReplicas' load balancer: a round-robin reverse proxy on
// loopback in front of the replicas, with no affinity of any kind, as
// Agent Platform, Cloud Run and Kubernetes spread calls. Each request goes
// to the next replica that is up, so a call never lands where the one
// before it did; it keeps the Host the client asked (an A2A card
// advertises the balancer's URL) and flushes streams as they come.
type balancer struct {
	url       string // http://127.0.0.1:N
	server    *httptest.Server
	transport *http.Transport

	mu       sync.Mutex
	replicas []*httputil.ReverseProxy
	down     []bool
	next     int
	landings []landing
}

// landing is where one request went: the replica's index, and the
// request's JSON-RPC method when its body has one.
type landing struct {
	replica int
	method  string
}

// peekBytes bounds the body the balancer reads whole, to name its
// JSON-RPC method; the test's calls are far smaller.
const peekBytes = 1 << 20

// startBalancer serves the round robin over the replicas' base URLs on
// 127.0.0.1:0 until the test ends.
func startBalancer(t *testing.T, bases []string) *balancer {
	t.Helper()
	b := &balancer{transport: &http.Transport{}, down: make([]bool, len(bases))}
	for _, base := range bases {
		target, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		b.replicas = append(b.replicas, &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(target)
				r.Out.Host = r.In.Host
			},
			Transport:     b.transport,
			FlushInterval: -1,
			// A replica killed mid-stream is expected: its error goes to
			// the test's log, not the package's output.
			ErrorLog: log.New(testLog{t}, "balancer: ", 0),
		})
	}
	b.server = httptest.NewServer(b)
	b.url = b.server.URL
	t.Cleanup(func() {
		b.server.Close()
		b.transport.CloseIdleConnections()
	})
	return b
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := ""
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, peekBytes+1))
		if err != nil || len(body) > peekBytes {
			http.Error(w, "reading the body: too large or cut", http.StatusBadGateway)
			return
		}
		var call struct{ Method string }
		if json.Unmarshal(body, &call) == nil {
			method = call.Method
		}
		// The whole body, never the server's reader again: an HTTP/1
		// server closes it once the answer has begun, and the transport,
		// still sending it, would drop the replica's connection mid-stream.
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	i, ok := b.pick(method)
	if !ok {
		http.Error(w, "no replica is up", http.StatusServiceUnavailable)
		return
	}
	b.replicas[i].ServeHTTP(w, r)
}

// pick takes the next replica that is up and notes the landing.
func (b *balancer) pick(method string) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range b.down {
		i := b.next
		b.next = (b.next + 1) % len(b.down)
		if !b.down[i] {
			b.landings = append(b.landings, landing{i, method})
			return i, true
		}
	}
	return 0, false
}

// upcoming is the replica the next request goes to.
func (b *balancer) upcoming() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := b.next; ; i = (i + 1) % len(b.down) {
		if !b.down[i] {
			return i
		}
	}
}

// takeDown stops sending requests to replica i, as a balancer's health
// check does once a replica is gone.
func (b *balancer) takeDown(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down[i] = true
}

// served counts the requests each replica was sent.
func (b *balancer) served() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := make([]int, len(b.down))
	for _, l := range b.landings {
		n[l.replica]++
	}
	return n
}

// repeats counts the requests that went to the replica the request
// before them went to: none while two replicas are up.
func (b *balancer) repeats() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for i := 1; i < len(b.landings); i++ {
		if b.landings[i].replica == b.landings[i-1].replica {
			n++
		}
	}
	return n
}

// landed is the replicas the requests of a JSON-RPC method went to, in
// order.
func (b *balancer) landed(method string) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var at []int
	for _, l := range b.landings {
		if l.method == method {
			at = append(at, l.replica)
		}
	}
	return at
}

// steerOff makes sure the next request does not go to replica i: when it
// would, one GET /healthz goes there first. The balancer stays a plain
// round robin; the test only chooses when to call.
func (b *balancer) steerOff(t *testing.T, i int) {
	t.Helper()
	if b.upcoming() != i {
		return
	}
	resp, err := replicaClient.Get(b.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// testLog writes a logger's lines to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

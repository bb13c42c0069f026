package upstream

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// scriptAgent is a raw TCP agent on 127.0.0.1 that runs script on every
// connection it accepts (n counts them from 1), with the connection's
// reader: each test writes the exact bytes it wants. done closes when the
// test ends, for a script that stalls; cleanup then closes every
// connection and waits for the scripts to return.
type scriptAgent struct {
	ln       net.Listener
	accepted atomic.Int32
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

type script func(n int, nc net.Conn, br *bufio.Reader, done <-chan struct{})

func newScriptAgent(t *testing.T, script script) *scriptAgent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &scriptAgent{ln: ln, done: make(chan struct{})}
	a.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			n := int(a.accepted.Add(1))
			a.mu.Lock()
			a.conns = append(a.conns, nc)
			a.mu.Unlock()
			a.wg.Go(func() {
				defer nc.Close()
				script(n, nc, bufio.NewReader(nc), a.done)
			})
		}
	})
	t.Cleanup(func() {
		close(a.done)
		ln.Close()
		a.mu.Lock()
		for _, c := range a.conns {
			c.Close()
		}
		a.mu.Unlock()
		a.wg.Wait()
	})
	return a
}

func (a *scriptAgent) addr() string { return a.ln.Addr().String() }

// readRequest reads one request and its body, as an agent does.
func readRequest(br *bufio.Reader) (*http.Request, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return req, err
}

// rawAgent is a scriptAgent that reads HTTP/1.1 requests, so each test
// decides exactly what goes over the wire and when each connection
// closes. serve is called once per request (n counts them from 1 across
// connections) with the request head and body, and writes the raw reply;
// it returns false to close the connection afterwards.
type rawAgent struct {
	*scriptAgent
	requests atomic.Int32
}

func newRawAgent(t *testing.T, serve func(n int, req *http.Request, body []byte, w *bufio.Writer) bool) *rawAgent {
	t.Helper()
	a := &rawAgent{}
	a.scriptAgent = newScriptAgent(t, func(_ int, nc net.Conn, br *bufio.Reader, _ <-chan struct{}) {
		bw := bufio.NewWriter(nc)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return
			}
			n := int(a.requests.Add(1))
			keep := serve(n, req, body, bw)
			if bw.Flush() != nil || !keep {
				return
			}
		}
	})
	return a
}

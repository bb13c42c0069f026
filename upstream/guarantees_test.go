package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
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

// roundTrip sends one request through tr with a deadline, so a test
// that fails does so fast, and reads the whole reply.
func roundTrip(t *testing.T, tr *transport, method, addr, body string) (status int, reply string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+"/run", rb)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestTransportReplyHeadLimit: a reply head larger than maxReplyHead (a
// 64 MiB header line) is a bad reply, read no further than the limit: the
// call allocates a few MiB, not hundreds.
func TestTransportReplyHeadLimit(t *testing.T) {
	a := newScriptAgent(t, func(_ int, nc net.Conn, br *bufio.Reader, _ <-chan struct{}) {
		if _, err := readRequest(br); err != nil {
			return
		}
		io.WriteString(nc, "HTTP/1.1 200 OK\r\nX-Big: ")
		chunk := []byte(strings.Repeat("a", 64<<10))
		for range 1024 { // 64 MiB, without holding it
			if _, err := nc.Write(chunk); err != nil {
				return
			}
		}
	})
	tr := newTestTransport(a.addr(), time.Minute)
	defer tr.closeIdle()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := roundTrip(t, tr, http.MethodPost, a.addr(), "{}")
	runtime.ReadMemStats(&after)
	var re *ReplyError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "head") {
		t.Errorf("a 64 MiB header line: %v, want a ReplyError about the reply head", err)
	}
	// The agent's goroutine allocates nothing; bufio and textproto keep
	// a few copies of the bounded head.
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("a 64 MiB header line allocated %d MiB, want at most 16", got>>20)
	}
	if tr.idleCount() != 0 {
		t.Error("the connection of a bad reply was pooled")
	}
}

// TestTransportInterimReplies: up to max1xx interim replies are skipped;
// one more is a bad reply, whatever the agent sends after it.
func TestTransportInterimReplies(t *testing.T) {
	for _, tt := range []struct {
		n       int
		wantErr bool
	}{{5, false}, {6, true}, {1000, true}} {
		a := newScriptAgent(t, func(_ int, nc net.Conn, br *bufio.Reader, _ <-chan struct{}) {
			if _, err := readRequest(br); err != nil {
				return
			}
			bw := bufio.NewWriter(nc)
			for range tt.n {
				bw.WriteString("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n")
			}
			bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			bw.Flush()
			io.Copy(io.Discard, br)
		})
		tr := newTestTransport(a.addr(), time.Minute)
		status, body, err := roundTrip(t, tr, http.MethodPost, a.addr(), "{}")
		var re *ReplyError
		if tt.wantErr && (!errors.As(err, &re) || !strings.Contains(err.Error(), "1xx")) {
			t.Errorf("%d interim replies: %d %q, %v; want a ReplyError about 1xx", tt.n, status, body, err)
		}
		if !tt.wantErr && (err != nil || status != 200 || body != "ok") {
			t.Errorf("%d interim replies: %d %q, %v; want 200 ok", tt.n, status, body, err)
		}
		tr.closeIdle()
	}
}

// TestTransportSwitchingProtocols: a 101 to a request that asked for no
// upgrade is a bad reply, and its connection is never pooled: what
// follows on it is not HTTP.
func TestTransportSwitchingProtocols(t *testing.T) {
	a := newScriptAgent(t, func(n int, nc net.Conn, br *bufio.Reader, _ <-chan struct{}) {
		for {
			if _, err := readRequest(br); err != nil {
				return
			}
			if n == 1 {
				io.WriteString(nc, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello")
				continue
			}
			io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := newTestTransport(a.addr(), time.Minute)
	defer tr.closeIdle()
	_, _, err := roundTrip(t, tr, http.MethodPost, a.addr(), "{}")
	var re *ReplyError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "101") {
		t.Fatalf("a 101: %v, want a ReplyError naming 101", err)
	}
	if tr.idleCount() != 0 {
		t.Fatal("the connection of a 101 was pooled")
	}
	if status, body, err := roundTrip(t, tr, http.MethodPost, a.addr(), "{}"); err != nil || status != 200 || body != "ok" {
		t.Errorf("the call after a 101: %d %q, %v; want 200 ok on a new connection", status, body, err)
	}
	if n := a.accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (none reused after the 101)", n)
	}
}

// stallAfter413 is an agent that reads a request's head and a little of
// its body, answers 413, and then neither reads nor closes.
func stallAfter413(_ int, nc net.Conn, br *bufio.Reader, done <-chan struct{}) {
	if _, err := http.ReadRequest(br); err != nil {
		return
	}
	io.CopyN(io.Discard, br, 1000)
	io.WriteString(nc, "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n{\"detail\":\"request too large\"}")
	<-done
}

// TestTransportEarlyReplyStalled: an agent that answers 413 after the head
// of a 9 MiB request and then stalls (reads no more, does not close) gets
// its 413 to the caller at once, as net/http's client does, not a
// timeout. Through the client the caller sees the agent's status and
// message well before first_byte.
func TestTransportEarlyReplyStalled(t *testing.T) {
	a := newScriptAgent(t, stallAfter413)
	big := strings.Repeat("x", 9<<20)
	tr := newTestTransport(a.addr(), time.Minute)
	defer tr.closeIdle()
	start := time.Now()
	status, body, err := roundTrip(t, tr, http.MethodPost, a.addr(), big)
	if err != nil || status != http.StatusRequestEntityTooLarge || body != `{"detail":"request too large"}` {
		t.Fatalf("an agent answering 413 early and stalling: %d %q, %v; want its 413 and body", status, body, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the 413 took %v", d)
	}
	if tr.idleCount() != 0 {
		t.Error("the connection of an early reply was pooled")
	}

	cfg := testConfig(t, "http://"+a.addr(), "timeouts: {first_byte: 5s}\n")
	c, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start = time.Now()
	_, err = c.Send(context.Background(), Request{Verb: http.MethodPost, Path: "/run", Body: []byte(big), Timeouts: cfg.Timeouts})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 413 || se.Detail != "request too large" {
		t.Fatalf("Send to an agent answering 413 early and stalling: %v, want its 413", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Send's 413 took %v, want it long before first_byte (5s)", d)
	}
}

// testConfig parses a config for url with extra top-level YAML.
func testConfig(t *testing.T, url, extra string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: "+url+"}\n"+extra+"methods: {q: }\n"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

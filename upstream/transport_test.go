package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func ok(w *bufio.Writer, body string) {
	w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

func newTestTransport(addr string, idle time.Duration) *transport {
	d := net.Dialer{}
	return &transport{
		dial:        func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) },
		host:        addr,
		maxIdle:     4,
		idleTimeout: idle,
	}
}

// post sends one POST through t and returns the reply body. The agents
// here answer at once: the call's deadline only turns a hang into a
// failure (see settle).
func post(t *testing.T, tr http.RoundTripper, addr, body string) (status int, reply string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/run", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	settle(t, ctx, func() { status, reply, err = readReply(tr.RoundTrip(req)) })
	return status, reply, err
}

// readReply reads the whole reply of a round trip: its status and body.
func readReply(resp *http.Response, err error) (int, string, error) {
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (t *transport) idleCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.idle)
}

// TestTransportReusesConnections: calls one after another share one
// connection; the request carries the body, Host and headers as sent.
func TestTransportReusesConnections(t *testing.T) {
	var got []string
	a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
		got = append(got, req.Method+" "+req.RequestURI+" "+req.Host+" "+req.Header.Get("X-Trace")+" "+string(body))
		ok(w, `{"n":`+strconv.Itoa(n)+`}`)
		return true
	})
	tr := newTestTransport(a.addr(), time.Minute)
	defer tr.closeIdle()
	for i := 1; i <= 5; i++ {
		req, _ := http.NewRequest(http.MethodPost, "http://"+a.addr()+"/a%2Fb/run?x=1", strings.NewReader(`{"i":1}`))
		req.Header.Set("X-Trace", "t1")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := `{"n":` + strconv.Itoa(i) + `}`; string(b) != want {
			t.Errorf("call %d: reply %s, want %s", i, b, want)
		}
	}
	if n := a.accepted.Load(); n != 1 {
		t.Errorf("5 calls one after another used %d connections, want 1", n)
	}
	if want := "POST /a%2Fb/run?x=1 " + a.addr() + ` t1 {"i":1}`; got[0] != want {
		t.Errorf("agent saw %q, want %q", got[0], want)
	}
}

// TestTransportAgentClosedIdle: a pooled connection the agent closed
// while it sat idle (its keep-alive ran out) is never used: the next call
// goes out on a new connection and succeeds (DESIGN.md lesson 10).
func TestTransportAgentClosedIdle(t *testing.T) {
	a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
		ok(w, `{}`)
		return false // close right after the reply, without saying so
	})
	tr := newTestTransport(a.addr(), time.Minute)
	defer tr.closeIdle()
	for i := range 3 {
		if _, _, err := post(t, tr, a.addr(), `{}`); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		time.Sleep(20 * time.Millisecond) // the agent's FIN arrives
	}
	if n, r := a.accepted.Load(), a.requests.Load(); n != 3 || r != 3 {
		t.Errorf("agent saw %d connections and %d requests, want 3 and 3", n, r)
	}
}

// TestTransportIdleTimeout: a connection unused for the idle timeout is
// closed by the sidecar, before the agent's keep-alive could close it
// under a new request.
func TestTransportIdleTimeout(t *testing.T) {
	closed := make(chan struct{})
	a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
		ok(w, `{}`)
		return true
	})
	tr := newTestTransport(a.addr(), 50*time.Millisecond)
	defer tr.closeIdle()
	if _, _, err := post(t, tr, a.addr(), `{}`); err != nil {
		t.Fatal(err)
	}
	if tr.idleCount() != 1 {
		t.Fatalf("after one call %d pooled connections, want 1", tr.idleCount())
	}
	// The agent's side of the connection reads EOF once the sidecar closes it.
	go func() {
		a.wg.Wait()
		close(closed)
	}()
	deadline := time.Now().Add(2 * time.Second)
	for tr.idleCount() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if tr.idleCount() != 0 {
		t.Fatal("the idle connection is still pooled 2 s after a 50 ms idle timeout")
	}
	a.ln.Close()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("the agent's connection was not closed")
	}
}

// brokenConn is a connection whose writes fail once broken is set: the
// agent closed it after the sidecar's liveness check, just as a request
// went out on it. It hides its file descriptor, so the check passes.
type brokenConn struct {
	net.Conn
	broken *atomic.Bool
}

func (c brokenConn) Write(p []byte) (int, error) {
	if c.broken.Load() {
		return 0, syscall.EPIPE
	}
	return c.Conn.Write(p)
}

// TestTransportWriteToClosedIdle: a request that could not be written at
// all to a reused connection never reached the agent: its error says so,
// and the client retries it on a new connection. A request written to a
// reused connection that then ends before any reply is not retried: the
// agent may have acted on it (DESIGN.md lesson 11).
func TestTransportWriteToClosedIdle(t *testing.T) {
	a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
		if string(body) == "crash" {
			return false // read the request, then close without a reply
		}
		ok(w, `{}`)
		return true
	})
	var broken atomic.Bool
	d := net.Dialer{}
	tr := newTestTransport(a.addr(), time.Minute)
	tr.dial = func(ctx context.Context) (net.Conn, error) {
		nc, err := d.DialContext(ctx, "tcp", a.addr())
		if err != nil {
			return nil, err
		}
		return brokenConn{nc, &broken}, nil
	}
	defer tr.closeIdle()
	if _, _, err := post(t, tr, a.addr(), `{}`); err != nil {
		t.Fatal(err)
	}
	broken.Store(true)
	_, _, err := post(t, tr, a.addr(), `{}`)
	if !errors.Is(err, errServerClosedIdle) || !neverSent(err) {
		t.Fatalf("writing to a closed pooled connection: %v, want errServerClosedIdle, taken as never sent", err)
	}
	broken.Store(false)

	if _, _, err := post(t, tr, a.addr(), `{}`); err != nil {
		t.Fatal(err)
	}
	before := a.requests.Load()
	_, _, err = post(t, tr, a.addr(), `crash`)
	if err == nil || neverSent(err) {
		t.Fatalf("agent closing after reading the request: %v, want an error not taken as never sent", err)
	}
	if n := a.requests.Load() - before; n != 1 {
		t.Errorf("the agent read the request %d times, want 1", n)
	}
}

// TestTransportBodyEnd: a body read to its end frees the connection for
// the next call; a body closed early closes the connection, which the
// agent sees; a reply with Connection: close is not reused.
func TestTransportBodyEnd(t *testing.T) {
	a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
		switch string(body) {
		case "chunked":
			w.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
		case "close":
			w.WriteString("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
			return false
		case "continue":
			w.WriteString("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone")
		case "empty":
			w.WriteString("HTTP/1.1 204 No Content\r\n\r\n")
		default:
			ok(w, strings.Repeat("x", 10000))
		}
		return true
	})
	tr := newTestTransport(a.addr(), time.Minute)
	defer tr.closeIdle()
	for _, c := range []struct{ body, want string }{
		{"chunked", "abcde"}, {"continue", "done"}, {"empty", ""}, {"big", strings.Repeat("x", 10000)},
	} {
		_, got, err := post(t, tr, a.addr(), c.body)
		if err != nil || got != c.want {
			t.Errorf("%s: %.20q, %v; want %.20q", c.body, got, err, c.want)
		}
	}
	if n := a.accepted.Load(); n != 1 {
		t.Errorf("4 replies read to their end used %d connections, want 1", n)
	}

	req, _ := http.NewRequest(http.MethodPost, "http://"+a.addr()+"/", strings.NewReader("big"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 10))
	resp.Body.Close()
	if tr.idleCount() != 0 {
		t.Error("a body closed before its end left its connection in the pool")
	}
	if _, _, err := post(t, tr, a.addr(), "close"); err != nil {
		t.Fatal(err)
	}
	if tr.idleCount() != 0 {
		t.Error("a reply with Connection: close left its connection in the pool")
	}
	if _, _, err := post(t, tr, a.addr(), "chunked"); err != nil {
		t.Fatal(err)
	}
	if n := a.accepted.Load(); n != 3 {
		t.Errorf("used %d connections, want 3 (one more after the early close and after Connection: close)", n)
	}
}

// TestTransportFailedBodyNotPooled: a reply body whose read failed with
// its connection still open (a chunk size that is not hex, a chunk
// without its CRLF) leaves the connection in an unknown place of the
// reply: it is closed, never pooled, though the agent would go on serving
// on it. The next call goes out on a new connection.
func TestTransportFailedBodyNotPooled(t *testing.T) {
	for _, bad := range []string{"zz\r\n", "3\r\nabcXX\r\n0\r\n\r\n"} {
		t.Run(strconv.Quote(bad), func(t *testing.T) {
			a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
				if string(body) == "bad" {
					w.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + bad)
				} else {
					ok(w, `{"n":`+strconv.Itoa(n)+`}`)
				}
				return true // the agent keeps serving on the connection
			})
			tr := newTestTransport(a.addr(), time.Minute)
			defer tr.closeIdle()
			if _, got, err := post(t, tr, a.addr(), "bad"); err == nil {
				t.Fatalf("a reply with the body %q read as %q, no error", bad, got)
			}
			if n := tr.idleCount(); n != 0 {
				t.Errorf("a failed body read left %d connections in the pool, want 0", n)
			}
			if _, got, err := post(t, tr, a.addr(), "good"); err != nil || got != `{"n":2}` {
				t.Errorf("the call after = %q, %v; want {\"n\":2}", got, err)
			}
			if n := a.accepted.Load(); n != 2 {
				t.Errorf("2 calls, the first one's body failed, used %d connections, want 2", n)
			}
		})
	}
}

// TestTransportRequestBodies: a body of unknown length goes out chunked;
// a header value with a line break is refused before anything is sent.
func TestTransportRequestBodies(t *testing.T) {
	var seen []string
	a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
		seen = append(seen, strings.Join(req.TransferEncoding, ",")+"|"+string(body))
		ok(w, `{}`)
		return true
	})
	tr := newTestTransport(a.addr(), time.Minute)
	defer tr.closeIdle()
	req, _ := http.NewRequest(http.MethodPost, "http://"+a.addr()+"/", io.MultiReader(strings.NewReader("ab"), strings.NewReader("cd")))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if len(seen) != 1 || seen[0] != "chunked|abcd" {
		t.Errorf("agent saw %q, want a chunked body abcd", seen)
	}

	for name, value := range map[string]string{"X-Bad": "a\r\nInjected: 1", "X-Bad\r\nInjected": "1", "X:Bad": "1", "": "1"} {
		req, _ = http.NewRequest(http.MethodPost, "http://"+a.addr()+"/", strings.NewReader("x"))
		req.Header[name] = []string{value}
		if _, err := tr.RoundTrip(req); !errors.Is(err, errBadHeader) {
			t.Errorf("header %q: %q: %v, want errBadHeader", name, value, err)
		}
	}
	if len(seen) != 1 {
		t.Errorf("the agent received %d requests, want only the first", len(seen))
	}
}

// TestTransportCancel: the caller's context ending while the agent is
// silent closes the connection at once, and the error is the context's.
func TestTransportCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	eof := make(chan time.Time, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		br := bufio.NewReader(nc)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.ReadAll(req.Body)
		io.Copy(io.Discard, br) // until the sidecar closes
		eof <- time.Now()
	}()
	tr := newTestTransport(ln.Addr().String(), time.Minute)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the caller left")
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ln.Addr().String()+"/", strings.NewReader("{}"))
	_, err = tr.RoundTrip(req)
	left := time.Now()
	if !errors.Is(err, cause) {
		t.Errorf("RoundTrip after the context ended: %v, want its cause", err)
	}
	select {
	case at := <-eof:
		if d := at.Sub(left); d > 100*time.Millisecond {
			t.Errorf("the agent saw the close %v after the cancel", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the agent never saw the connection close")
	}
}

// TestTransportLargeAndCloseDelimited: a request body far larger than the
// write buffer arrives whole; a reply with neither length nor chunking
// (an HTTP/1.0 server's) is read to the agent's close and its connection
// is not reused.
func TestTransportLargeAndCloseDelimited(t *testing.T) {
	big := strings.Repeat("0123456789", 100_000) // 1 MB
	a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
		if string(body) == "old" {
			w.WriteString("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it")
			return false
		}
		ok(w, strconv.Itoa(len(body)))
		return true
	})
	tr := newTestTransport(a.addr(), time.Minute)
	defer tr.closeIdle()
	if _, got, err := post(t, tr, a.addr(), big); err != nil || got != strconv.Itoa(len(big)) {
		t.Errorf("a 1 MB body: agent read %s bytes (%v), want %d", got, err, len(big))
	}
	if _, got, err := post(t, tr, a.addr(), "old"); err != nil || got != "all of it" {
		t.Errorf("a close-delimited reply: %q, %v", got, err)
	}
	if tr.idleCount() != 0 {
		t.Error("a close-delimited reply left its connection in the pool")
	}
}

// TestTransportConcurrent: many callers at once, with an idle timeout so
// short that pooled connections expire while others are taken and given
// back; run under -race, every call gets its own reply.
func TestTransportConcurrent(t *testing.T) {
	a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
		if n%7 == 0 { // now and then the agent closes after replying, and says so
			w.WriteString("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
			return false
		}
		ok(w, string(body))
		return true
	})
	tr := newTestTransport(a.addr(), time.Millisecond)
	defer tr.closeIdle()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 40 {
				want := strconv.Itoa(g*1000 + i)
				_, got, err := post(t, tr, a.addr(), want)
				if err != nil || got != want {
					t.Errorf("call %s: %q, %v", want, got, err)
				}
				if i%10 == 0 {
					time.Sleep(2 * time.Millisecond) // let idle connections expire
				}
			}
		})
	}
	wg.Wait()
	if n := a.accepted.Load(); n < 2 {
		t.Errorf("%d connections for 640 calls with closes and expiry, want several", n)
	}
}

// TestTransportEarlyReply: an agent that answers before it has read the
// whole request (a 413 for a body over its limit) and closes the
// connection gets its answer to the caller, not a broken pipe.
func TestTransportEarlyReply(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		br := bufio.NewReader(nc)
		if _, err := http.ReadRequest(br); err != nil {
			nc.Close()
			return
		}
		io.CopyN(io.Discard, br, 1000) // a little of the body, then no more
		io.WriteString(nc, "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n{\"detail\":\"request too large\"}")
		nc.Close() // with the rest of the body unread: a reset
	}()
	tr := newTestTransport(ln.Addr().String(), time.Minute)
	defer tr.closeIdle()
	big := strings.Repeat("x", 8<<20) // more than the socket buffers hold
	status, body, err := post(t, tr, ln.Addr().String(), big)
	<-done
	if err != nil || status != http.StatusRequestEntityTooLarge || body != `{"detail":"request too large"}` {
		t.Fatalf("agent answering 413 early: %d %q, %v; want its 413 and body", status, body, err)
	}
	if tr.idleCount() != 0 {
		t.Error("the connection of an early reply was pooled")
	}
}

package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// transport is the HTTP/1.1 client to the one agent. Unlike
// http.Transport, which hands every request to two goroutines per
// connection (a write loop and a read loop) and back, it writes the
// request and reads the reply on the caller's goroutine: no hand-offs, no
// goroutines or write buffer held by an open stream. (Only a body over
// syncBody is written by a goroutine of its own while the reply is read,
// so that an agent answering early is heard.) The caller's context
// ending closes the connection, which interrupts whatever waits on it and
// tells the agent the caller left.
//
// Connections are kept alive in a last-in first-out pool, each dropped
// after idleTimeout unused, or sooner when the agent's own keep-alive is
// known to be shorter (see learn). A pooled connection is checked before
// reuse with a non-blocking peek, so one the agent has closed is never
// written to. If the agent closes it all the same as the request goes
// out, the error says "server closed idle connection" and checkRetry
// retries it, but only when the request provably never reached the agent
// (see neverReached). Anything else is never retried.
type transport struct {
	dial    func(ctx context.Context) (net.Conn, error)
	host    string // the Host header: the agent's address, "agent" for a socket
	maxIdle int
	// idleTimeout closes a connection unused that long in the pool.
	idleTimeout time.Duration
	// agentIdle is the agent's keep-alive as learnt so far (a
	// time.Duration; 0: not known): the shortest idle time after which it
	// was seen to close a connection, or its Keep-Alive: timeout=.
	agentIdle atomic.Int64

	mu   sync.Mutex
	idle []*conn // most recently used last
}

// conn is one keep-alive connection to the agent.
type conn struct {
	nc    net.Conn
	rc    syscall.RawConn // for the liveness peek; nil if nc has no descriptor
	br    *bufio.Reader
	lr    limitedReader  // between br and nc: bounds the reply head
	cw    countingWriter // what the request being written put on nc
	t     *transport
	timer *time.Timer // closes it after idleTimeout in the pool
	since time.Time   // when it went back to the pool
	heard bool        // a byte of the current reply arrived
	// close closes nc: what a call's end does (made once, not per call).
	close func()
	// peek is peekOnce, and live and closed what it saw (alive).
	peek         func(fd uintptr) bool
	live, closed bool
	// body bounds the request body being written to its Content-Length.
	body io.LimitedReader
}

func newConn(t *transport, nc net.Conn) *conn {
	c := &conn{nc: nc, cw: countingWriter{w: nc}, t: t}
	c.lr = limitedReader{r: nc, n: math.MaxInt64}
	c.br = bufio.NewReaderSize(&c.lr, readerSize)
	c.peek = c.peekOnce
	c.close = func() { nc.Close() }
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.rc = rc
		}
	}
	return c
}

// readerSize is the connection's read buffer. Reply heads and chunk
// headers are read through it; a body read that asks for at least this
// much while it is empty (the deframer reads 4 KiB blocks) goes straight
// to the connection. 4 KiB measured no faster and costs 2 KB more per
// open stream (BENCHMARKS.md). It is also the most of a chunked reply's
// trailer that is read (net/http peeks for the trailer's end within the
// buffer): a longer trailer is left unread, the reply, whole by then,
// ends cleanly and its connection is closed (body.Read).
const readerSize = 2 << 10

// errLongTrailer is net/http's error for a chunked body's trailer that
// does not fit the read buffer (it peeks within the buffer for the
// trailer's end), given after the last chunk: the body is whole. It gives
// the same error when a read fails during that look-ahead (a stall ended
// by a clock, a reset, the caller leaving), so body.Read takes it for a
// long trailer only when the buffer is full. TestTransportTrailers fails
// if net/http words it otherwise, TestTransportTrailerCut if a failed read
// passes for a long trailer.
const errLongTrailer = "http: suspiciously long trailer after chunked body"

// errServerClosedIdle is a reused connection the agent closed before
// sending any of its reply: the request is taken as never received.
var errServerClosedIdle = errors.New("upstream: server closed idle connection")

// syncBody is the largest request body written before the reply is read.
// Up to it, the kernel takes the whole request at once (Linux's default
// TCP send buffer starts at 16 KiB, a Unix socket's is larger), so in
// practice its write does not wait for the agent to read. A larger body is written on a
// goroutine of its own while the reply is read, so an agent that answers
// early (a 413 after the head) and stops reading is heard.
const syncBody = 16 << 10

// RoundTrip sends req on a pooled or new connection and reads the reply
// head. The body reads from the connection; the connection goes back to
// the pool when the body has been read to its end.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if netHTTP { // the nethttp build: net/http's Transport (nethttp.go)
		return t.netRoundTrip(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeBody(req)
		return nil, context.Cause(ctx)
	}
	c, reused, err := t.get(ctx)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	stop := hook(ctx, c.close)
	bw := writers.Get().(*bufio.Writer)
	if err := t.writeHead(c, bw, req); err != nil {
		putWriter(bw)
		return failed(ctx, c, stop, err)
	}
	if hasBody(req) && (req.ContentLength <= 0 || req.ContentLength > syncBody) {
		return t.roundTripConcurrent(ctx, c, bw, req, reused, stop)
	}
	err = t.writeBody(c, bw, req)
	putWriter(bw)
	if err != nil {
		if reused && c.cw.n == 0 {
			return failed(ctx, c, stop, fmt.Errorf("%w: %w", errServerClosedIdle, err))
		}
		// The agent may have answered before reading the whole request
		// (a 413, say) and closed: its answer, not the broken pipe, is
		// what the caller should see.
		if resp := t.earlyReply(c, req); resp != nil && ctx.Err() == nil {
			resp.Close = true
			return t.withBody(ctx, c, resp, stop, nil), nil
		}
		return failed(ctx, c, stop, err)
	}
	resp, err := t.readHead(c, req)
	if err != nil {
		if reused && ctx.Err() == nil && c.neverReached(err) {
			t.learn(time.Since(c.since))
			err = fmt.Errorf("%w: %w", errServerClosedIdle, err)
		}
		return failed(ctx, c, stop, err)
	}
	return t.withBody(ctx, c, resp, stop, nil), nil
}

// hook sets f to run when ctx ends, returning what stops it: through the
// call's End when ctx is its context (no allocation), else a
// context.AfterFunc.
func hook(ctx context.Context, f func()) stopper {
	if e := core.EndOf(ctx); e != nil && e.Shares(ctx) && e.HookAgent(f) {
		return endHook{e}
	}
	return afterStop(context.AfterFunc(ctx, f))
}

// stopper stops a hook (hook), reporting as context.AfterFunc's stop
// does whether it stopped it from running.
type stopper interface{ stop() bool }

type afterStop func() bool

func (f afterStop) stop() bool { return f() }

type endHook struct{ e *core.End }

func (h endHook) stop() bool { return h.e.UnhookAgent() }

// failed ends a round trip on c that failed with err: c is closed, and
// the error is the call's end when that is what broke it.
func failed(ctx context.Context, c *conn, stop stopper, err error) (*http.Response, error) {
	stop.stop()
	c.nc.Close()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return nil, err
}

// roundTripConcurrent writes a large request body on a goroutine of its
// own while the reply is read, as net/http does: an agent may answer
// before it has read the whole body (a 413 over its limit) and then stop
// reading it. Such an early reply goes to the caller, and its connection
// is not reused (the agent did not read all of the request). The writer
// ends when the connection closes, which the reply's body does.
func (t *transport) roundTripConcurrent(ctx context.Context, c *conn, bw *bufio.Writer, req *http.Request, reused bool, stop stopper) (*http.Response, error) {
	wrote := make(chan error, 1)
	go func() {
		err := t.writeBody(c, bw, req)
		putWriter(bw)
		wrote <- err
	}()
	resp, err := t.readHead(c, req)
	if err != nil {
		// End the write but keep the socket open, to look at it.
		c.nc.SetWriteDeadline(time.Now())
		werr := <-wrote
		switch {
		case reused && c.cw.n == 0:
			err = fmt.Errorf("%w: %w", errServerClosedIdle, werr)
		case reused && ctx.Err() == nil && c.neverReached(err):
			t.learn(time.Since(c.since))
			err = fmt.Errorf("%w: %w", errServerClosedIdle, err)
		}
		return failed(ctx, c, stop, err)
	}
	// A reply that followed the whole request finds the writer done, or
	// about to report it; net/http waits the same 50 ms before it gives
	// up reusing the connection.
	wait := time.NewTimer(50 * time.Millisecond)
	defer wait.Stop()
	select {
	case werr := <-wrote:
		// A write that failed: the agent answered and stopped reading.
		resp.Close = resp.Close || werr != nil
		return t.withBody(ctx, c, resp, stop, nil), nil
	case <-wait.C:
		resp.Close = true
		return t.withBody(ctx, c, resp, stop, wrote), nil
	}
}

// earlyReplyWait bounds how long a request whose write failed waits for
// the reply the agent may have sent before it closed.
const earlyReplyWait = 100 * time.Millisecond

// earlyReply reads the reply an agent sent before it stopped reading the
// request, if there is one.
func (t *transport) earlyReply(c *conn, req *http.Request) *http.Response {
	c.nc.SetReadDeadline(time.Now().Add(earlyReplyWait))
	resp, err := t.readHead(c, req)
	c.nc.SetReadDeadline(time.Time{})
	if err != nil {
		return nil
	}
	return resp
}

// withBody gives resp a body that returns c to the pool once read to
// its end, or frees c at once when there is none. wrote, when not nil, is
// a request body still being written: the connection is closed, not
// pooled, and the writer waited for.
func (t *transport) withBody(ctx context.Context, c *conn, resp *http.Response, stop stopper, wrote <-chan error) *http.Response {
	if ka := resp.Header.Get("Keep-Alive"); ka != "" {
		if d := keepAliveTimeout(ka); d > 0 {
			t.learn(d)
		}
	}
	if resp.Body == http.NoBody {
		// Nothing to read: the connection is free at once.
		t.release(c, stop, resp.Close)
		if wrote != nil {
			<-wrote
		}
		return resp
	}
	resp.Body = &body{r: resp.Body, c: c, stop: stop, keep: !resp.Close, ctx: ctx, wrote: wrote}
	return resp
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// neverReached reports whether a request written whole to a reused
// connection that ended before any byte of a reply (err) provably never
// reached the agent, which closed the connection for being idle just as
// the request went out. Either
//   - the agent's kernel acknowledged no byte of the request (TCP): the
//     agent had closed its socket before the request arrived, and its
//     kernel refused it; or
//   - the connection was reset and the whole request went out in one
//     write of at most writerSize bytes: the agent closed its socket with
//     the request unread in it (a clean close would send FIN, not RST),
//     and an HTTP server reads at least 4 KiB at a time, so it read none
//     of it.
//
// An agent that read the request and then closed or crashed sends FIN
// with the acknowledgement: that is never retried. (One that read a
// request whole and then aborted the connection on purpose, with
// SO_LINGER 0 and no reply, would be taken for the second case; HTTP
// servers do not do that.)
func (c *conn) neverReached(err error) bool {
	if c.heard || c.cw.n == 0 {
		return false
	}
	if c.cw.writes == 1 && c.cw.n <= writerSize && errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	if _, ok := c.nc.(*net.TCPConn); ok && c.rc != nil {
		if n, ok := unacked(c.rc); ok && int64(n) == c.cw.n {
			return true
		}
	}
	return false
}

// body is a reply body read from its connection. Read to its end, it
// returns the connection to the pool; closed before that, or on an error,
// it closes the connection, which also tells the agent the caller left.
type body struct {
	r     io.ReadCloser
	c     *conn
	stop  stopper
	keep  bool
	ctx   context.Context
	wrote <-chan error // a request body still being written, or nil

	mu   sync.Mutex
	done bool
}

// waitWriter waits for a request body still being written when the
// reply came; the connection is closed by then, which ends the write.
func (b *body) waitWriter() {
	if b.wrote != nil {
		<-b.wrote
	}
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == nil {
		return n, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return n, err
	}
	b.done = true
	if err == io.EOF {
		b.r.Close()
		b.c.t.release(b.c, b.stop, !b.keep)
		b.waitWriter()
		return n, io.EOF
	}
	trailerPastBuffer := err.Error() == errLongTrailer && b.c.br.Buffered() == b.c.br.Size()
	b.stop.stop()
	b.c.nc.Close()
	b.waitWriter()
	if b.ctx.Err() != nil {
		return n, context.Cause(b.ctx)
	}
	if trailerPastBuffer {
		// The body is whole (its last chunk came); only the trailer,
		// which the sidecar does not use, is past the read buffer. The
		// reply ends cleanly and the connection, the trailer unread on
		// it, is closed.
		return n, io.EOF
	}
	if err.Error() == errLongTrailer {
		// net/http's look-ahead for the trailer's end gives that error
		// for any read that failed in it: what failed is the
		// connection's (a reset, or the agent closing mid-trailer).
		err = io.ErrUnexpectedEOF
		if cerr := b.c.lr.err; cerr != nil && cerr != io.EOF {
			err = cerr
		}
	}
	return n, err
}

func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil
	}
	b.done = true
	b.stop.stop()
	err := b.c.nc.Close()
	b.waitWriter()
	return err
}

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
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sidecar-dev/sidecar/config"
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
}

func newConn(t *transport, nc net.Conn) *conn {
	c := &conn{nc: nc, cw: countingWriter{w: nc}, t: t}
	c.lr = limitedReader{r: nc, n: math.MaxInt64}
	c.br = bufio.NewReaderSize(&c.lr, readerSize)
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
// open stream (BENCHMARKS.md).
const readerSize = 2 << 10

// errServerClosedIdle is a reused connection the agent closed before
// sending any of its reply: the request is taken as never received.
var errServerClosedIdle = errors.New("upstream: server closed idle connection")

// writerSize is the request write buffer: a request of up to this many
// bytes goes out in one write, which neverReached relies on. The buffers
// are pooled: only a request being written holds one.
const writerSize = 4 << 10

var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writerSize) }}

// maxReplyHead bounds a reply's status line and headers, 1xx replies
// included. net/http's client allows 10 MB; nginx (4-8 KiB) and Envoy
// (60 KiB) allow far less, and 1 MiB keeps what one call can make the
// sidecar allocate small.
const maxReplyHead = 1 << 20

// max1xx bounds the interim (1xx) replies before the final one, as
// net/http's client does.
const max1xx = 5

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
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.nc.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	bw := writers.Get().(*bufio.Writer)
	if err := t.writeHead(c, bw, req); err != nil {
		putWriter(bw)
		return fail(err)
	}
	if hasBody(req) && (req.ContentLength <= 0 || req.ContentLength > syncBody) {
		return t.roundTripConcurrent(ctx, c, bw, req, reused, stop, fail)
	}
	err = t.writeBody(c, bw, req)
	putWriter(bw)
	if err != nil {
		if reused && c.cw.n == 0 {
			return fail(fmt.Errorf("%w: %w", errServerClosedIdle, err))
		}
		// The agent may have answered before reading the whole request
		// (a 413, say) and closed: its answer, not the broken pipe, is
		// what the caller should see.
		if resp := t.earlyReply(c, req); resp != nil && ctx.Err() == nil {
			resp.Close = true
			return t.withBody(ctx, c, resp, stop, nil), nil
		}
		return fail(err)
	}
	resp, err := t.readHead(c, req)
	if err != nil {
		if reused && ctx.Err() == nil && c.neverReached(err) {
			t.learn(time.Since(c.since))
			err = fmt.Errorf("%w: %w", errServerClosedIdle, err)
		}
		return fail(err)
	}
	return t.withBody(ctx, c, resp, stop, nil), nil
}

// roundTripConcurrent writes a large request body on a goroutine of its
// own while the reply is read, as net/http does: an agent may answer
// before it has read the whole body (a 413 over its limit) and then stop
// reading it. Such an early reply goes to the caller, and its connection
// is not reused (the agent did not read all of the request). The writer
// ends when the connection closes, which the reply's body does.
func (t *transport) roundTripConcurrent(ctx context.Context, c *conn, bw *bufio.Writer, req *http.Request, reused bool, stop func() bool, fail func(error) (*http.Response, error)) (*http.Response, error) {
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
		return fail(err)
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
func (t *transport) withBody(ctx context.Context, c *conn, resp *http.Response, stop func() bool, wrote <-chan error) *http.Response {
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

// get takes the most recently used live connection from the pool, or
// dials a new one.
func (t *transport) get(ctx context.Context) (c *conn, reused bool, err error) {
	var clk *clocks // nil for calls outside Send, such as the prober's
	if ci, ok := ctx.Value(callKey{}).(*callInfo); ok {
		clk = ci.clk
	}
	for {
		t.mu.Lock()
		n := len(t.idle)
		if n == 0 {
			t.mu.Unlock()
			break
		}
		c = t.idle[n-1]
		t.idle[n-1] = nil
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		c.timer.Stop()
		live, closed := c.alive()
		if live {
			if clk != nil {
				clk.gotConn()
			}
			return c, true, nil
		}
		if closed {
			// The agent closed it while it sat in the pool: its
			// keep-alive is at most that long.
			t.learn(time.Since(c.since))
		}
		c.nc.Close()
	}
	nc, err := t.dial(ctx)
	if clk != nil {
		clk.dialed(err)
	}
	if err != nil {
		return nil, false, err
	}
	c = newConn(t, nc)
	if clk != nil {
		clk.gotConn()
	}
	return c, false, nil
}

// alive reports whether the agent has neither closed the pooled
// connection nor sent anything unasked on it, with one non-blocking peek.
// closed says it is not live because the agent closed or reset it (not
// because it sent something unasked).
func (c *conn) alive() (live, closed bool) {
	if c.br.Buffered() > 0 {
		return false, false
	}
	if c.rc == nil {
		return true, false
	}
	var buf [1]byte
	err := c.rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		live = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		closed = n == 0 || (n < 0 && !live)
		return true
	})
	return err == nil && live, closed
}

// release puts c back in the pool, or closes it when it cannot be reused:
// the reply said Connection: close, or the caller's context ended and
// closed it.
func (t *transport) release(c *conn, stop func() bool, closeConn bool) {
	if !stop() || closeConn {
		c.nc.Close()
		return
	}
	t.mu.Lock()
	if len(t.idle) >= t.maxIdle {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	c.since = time.Now()
	if c.timer == nil {
		c.timer = time.AfterFunc(t.idleFor(), c.expire)
	} else {
		c.timer.Reset(t.idleFor())
	}
	t.idle = append(t.idle, c)
	t.mu.Unlock()
}

// minLearn is the shortest pooled close that teaches the agent's
// keep-alive. A connection closed sooner than that is taken as a one-off
// (the agent restarting, or closing after so many requests), which must
// not shrink the pool's idle time for good. An agent whose keep-alive is
// shorter than this should set upstream.idle_timeout below it.
const minLearn = 250 * time.Millisecond

// learn notes that the agent closes connections idle for d (at most): a
// pooled connection it closed after d, or its Keep-Alive: timeout=.
func (t *transport) learn(d time.Duration) {
	if d < minLearn {
		return
	}
	for {
		cur := t.agentIdle.Load()
		if cur != 0 && cur <= int64(d) {
			return
		}
		if t.agentIdle.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// idleFor is how long a connection may sit in the pool: idleTimeout, or
// three quarters of the agent's keep-alive when that is known and
// shorter, so the sidecar closes an idle connection well before the agent
// would close it under a new request (DESIGN.md lesson 10).
func (t *transport) idleFor() time.Duration {
	d := t.idleTimeout
	if a := time.Duration(t.agentIdle.Load()); a > 0 {
		d = min(d, a*3/4)
	}
	return d
}

// keepAliveTimeout reads the timeout= of a Keep-Alive header
// ("timeout=5, max=100"); 0 when there is none.
func keepAliveTimeout(v string) time.Duration {
	for part := range strings.SplitSeq(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		if strings.EqualFold(strings.TrimSpace(k), "timeout") {
			if n, err := strconv.Atoi(strings.TrimSpace(val)); err == nil && n > 0 && n < 1<<20 {
				return time.Duration(n) * time.Second
			}
		}
	}
	return 0
}

// expire closes c if it is still in the pool after idleTimeout.
func (c *conn) expire() {
	t := c.t
	t.mu.Lock()
	for i, ic := range t.idle {
		if ic == c {
			t.idle = append(t.idle[:i], t.idle[i+1:]...)
			t.mu.Unlock()
			c.nc.Close()
			return
		}
	}
	t.mu.Unlock()
}

// closeIdle closes the pooled connections. It is not named
// CloseIdleConnections: go-retryablehttp calls that on every failed call,
// which would empty the pool whenever a caller leaves.
func (t *transport) closeIdle() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		c.timer.Stop()
		c.nc.Close()
	}
}

var errBadHeader = errors.New("upstream: a header name that is not a token, or a value with a control character")

func hasBody(req *http.Request) bool { return req.Body != nil && req.Body != http.NoBody }

func putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	writers.Put(bw)
}

// writeHead puts req's request line and headers in bw, to go out with
// the body; nothing reaches the connection yet. A header that would
// break the head (a line break in a value) is refused.
func (t *transport) writeHead(c *conn, bw *bufio.Writer, req *http.Request) error {
	c.cw.n, c.cw.writes = 0, 0
	bw.Reset(&c.cw)
	uri := req.URL.RequestURI()
	host := req.Host
	if host == "" {
		host = t.host
	}
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(uri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	if _, own := req.Header["User-Agent"]; !own { // headers.set may give one
		bw.WriteString("User-Agent: sidecar\r\n")
	}
	for name, values := range req.Header {
		if name == "Host" || name == "Content-Length" || name == "Transfer-Encoding" || name == "Connection" {
			continue
		}
		for _, v := range values {
			if !config.ValidHeaderName(name) || !config.ValidHeaderValue(v) {
				closeBody(req)
				return fmt.Errorf("%w: %q", errBadHeader, name)
			}
			bw.WriteString(name)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	switch {
	case !hasBody(req):
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			bw.WriteString("Content-Length: 0\r\n")
		}
	case req.ContentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(req.ContentLength, 10))
		bw.WriteString("\r\n")
	default:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.WriteString("\r\n")
	return nil
}

// writeBody sends the head in bw and req's body after it; c.cw counts
// what reached the connection.
func (t *transport) writeBody(c *conn, bw *bufio.Writer, req *http.Request) error {
	if hasBody(req) {
		var err error
		if req.ContentLength <= 0 {
			chunks := httputil.NewChunkedWriter(bw)
			if _, err = io.Copy(chunks, req.Body); err == nil {
				if err = chunks.Close(); err == nil {
					_, err = bw.WriteString("\r\n")
				}
			}
		} else {
			var n int64
			n, err = io.Copy(bw, io.LimitReader(req.Body, req.ContentLength))
			if err == nil && n != req.ContentLength {
				err = fmt.Errorf("upstream: request body is %d bytes, not the %d announced", n, req.ContentLength)
			}
		}
		req.Body.Close()
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}

// countingWriter counts what reached the connection, and in how many
// writes.
type countingWriter struct {
	w      io.Writer
	n      int64
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.writes++
	return n, err
}

// limitedReader fails a read once n bytes have been read: set to
// maxReplyHead while a reply head is read, to no limit for the body.
// It keeps the last error the connection gave: bufio hands a line cut by
// the end of the connection on as a line, so a head cut short reads as a
// malformed one unless that error is looked at.
type limitedReader struct {
	r   io.Reader
	n   int64
	err error
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if err != nil {
		l.err = err
	}
	return n, err
}

var errHeadTooLarge = &ReplyError{Msg: fmt.Sprintf("agent reply head (status line and headers) exceeds %d KiB", maxReplyHead>>10)}

// readHead reads the reply's status line and headers, skipping up to
// max1xx interim replies; maxReplyHead bounds them all together. A
// connection that ends before the first byte is an error even when it
// was reused; RoundTrip decides whether it can be retried.
func (t *transport) readHead(c *conn, req *http.Request) (*http.Response, error) {
	c.lr.n, c.lr.err = maxReplyHead-int64(c.br.Buffered()), nil
	defer func() { c.lr.n = math.MaxInt64 }()
	c.heard = false
	if _, err := c.br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	c.heard = true
	for n1xx := 0; ; n1xx++ {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			switch {
			case c.lr.n <= 0:
				return nil, errHeadTooLarge
			case errors.Is(err, io.EOF) || errors.Is(c.lr.err, io.EOF):
				return nil, io.ErrUnexpectedEOF // the agent closed mid-head
			case c.lr.err != nil:
				return nil, c.lr.err // a reset, or the call's end
			}
			return nil, &ReplyError{Msg: "agent reply is not valid HTTP: " + err.Error()}
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			// The sidecar never asks to switch: what follows is not HTTP.
			return nil, &ReplyError{Msg: "agent answered 101 Switching Protocols to a request that asked for no upgrade"}
		case resp.StatusCode >= 200:
			return resp, nil
		case n1xx == max1xx:
			return nil, &ReplyError{Msg: fmt.Sprintf("agent sent more than %d interim (1xx) replies", max1xx)}
		}
		resp.Body.Close() // a 1xx has no body
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
	stop  func() bool
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
	b.stop()
	b.c.nc.Close()
	b.waitWriter()
	if b.ctx.Err() != nil {
		return n, context.Cause(b.ctx)
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
	b.stop()
	err := b.c.nc.Close()
	b.waitWriter()
	return err
}

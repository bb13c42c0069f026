package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sidecar-dev/sidecar/config"
)

// transport is the HTTP/1.1 client to the one agent. Unlike
// http.Transport, which hands every request to two goroutines per
// connection (a write loop and a read loop) and back, it writes the
// request and reads the reply on the caller's goroutine: no hand-offs, no
// goroutines or write buffer held by an open stream. The caller's context
// ending closes the connection, which interrupts whatever waits on it and
// tells the agent the caller left.
//
// Connections are kept alive in a last-in first-out pool, each dropped
// after idleTimeout unused. A pooled connection is checked before
// reuse with a non-blocking peek, so one the agent has closed is never
// written to. If writing to a reused connection fails all the same
// before a byte of it went out, the agent closed it unread: the error
// says "server closed idle connection" and checkRetry retries it. Once
// any of the request is written, nothing is retried.
type transport struct {
	dial    func(ctx context.Context) (net.Conn, error)
	host    string // the Host header: the agent's address, "agent" for a socket
	maxIdle int
	// idleTimeout closes a connection unused that long in the pool.
	idleTimeout time.Duration

	mu   sync.Mutex
	idle []*conn // most recently used last
}

// conn is one keep-alive connection to the agent.
type conn struct {
	nc    net.Conn
	rc    syscall.RawConn // for the liveness peek; nil if nc has no descriptor
	br    *bufio.Reader
	cw    countingWriter // what the request being written put on nc
	t     *transport
	timer *time.Timer // closes it after idleTimeout in the pool
}

func newConn(t *transport, nc net.Conn) *conn {
	c := &conn{nc: nc, br: bufio.NewReaderSize(nc, readerSize), cw: countingWriter{w: nc}, t: t}
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

var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 2<<10) }}

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
	if wrote, err := t.write(c, req); err != nil {
		if errors.Is(err, errBadHeader) {
			return fail(err)
		}
		if reused && wrote == 0 {
			return fail(fmt.Errorf("%w: %w", errServerClosedIdle, err))
		}
		// The agent may have answered before reading the whole request
		// (a 413, say) and closed: its answer, not the broken pipe, is
		// what the caller should see.
		if resp := t.earlyReply(c, req); resp != nil && ctx.Err() == nil {
			resp.Close = true
			return t.withBody(ctx, c, resp, stop), nil
		}
		return fail(err)
	}
	resp, err := t.readHead(c, req)
	if err != nil {
		return fail(err)
	}
	return t.withBody(ctx, c, resp, stop), nil
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
// its end, or frees c at once when there is none.
func (t *transport) withBody(ctx context.Context, c *conn, resp *http.Response, stop func() bool) *http.Response {
	if resp.Body == http.NoBody {
		// Nothing to read: the connection is free at once.
		t.release(c, stop, resp.Close)
		return resp
	}
	resp.Body = &body{r: resp.Body, c: c, stop: stop, keep: !resp.Close, ctx: ctx}
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
		if c.alive() {
			if clk != nil {
				clk.gotConn()
			}
			return c, true, nil
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
func (c *conn) alive() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	if c.rc == nil {
		return true
	}
	var buf [1]byte
	live := false
	err := c.rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		live = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true
	})
	return err == nil && live
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
	if c.timer == nil {
		c.timer = time.AfterFunc(t.idleTimeout, c.expire)
	} else {
		c.timer.Reset(t.idleTimeout)
	}
	t.idle = append(t.idle, c)
	t.mu.Unlock()
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

// write sends req's head and body, and says how many bytes reached the
// connection.
func (t *transport) write(c *conn, req *http.Request) (int64, error) {
	cw := &c.cw
	cw.n = 0
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(cw)
	defer func() {
		bw.Reset(nil)
		writers.Put(bw)
	}()
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
				return 0, fmt.Errorf("%w: %q", errBadHeader, name)
			}
			bw.WriteString(name)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	chunked := false
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			bw.WriteString("Content-Length: 0\r\n")
		}
	case req.ContentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(req.ContentLength, 10))
		bw.WriteString("\r\n")
	default:
		chunked = true
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.WriteString("\r\n")
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		if chunked {
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
			return cw.n, err
		}
	}
	err := bw.Flush()
	return cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// readHead reads the reply's status line and headers, skipping any 1xx
// interim replies. A connection that ends before the first byte is an
// error even when it was reused: the agent may have read the request
// before it closed, so it is not retried (DESIGN.md lesson 11).
func (t *transport) readHead(c *conn, req *http.Request) (*http.Response, error) {
	if _, err := c.br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		resp.Body.Close() // a 1xx has no body
	}
}

// body is a reply body read from its connection. Read to its end, it
// returns the connection to the pool; closed before that, or on an error,
// it closes the connection, which also tells the agent the caller left.
type body struct {
	r    io.ReadCloser
	c    *conn
	stop func() bool
	keep bool
	ctx  context.Context

	mu   sync.Mutex
	done bool
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
		return n, io.EOF
	}
	b.stop()
	b.c.nc.Close()
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
	return b.c.nc.Close()
}

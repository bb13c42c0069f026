package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"syscall"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/sidecar-dev/sidecar/bench/internal/h1"
)

// The ladder's ways to the agent: the hand-written client's pooled
// connection (direct), and go-retryablehttp over http.Client on that
// pool (viaRetrying, rawRT).

// direct sends input on a pooled connection of the hand-written client
// and reads the reply whole.
func (l *ladder) direct(input []byte) ([]byte, error) {
	p := l.raw
	c, err := p.get()
	if err != nil {
		return nil, err
	}
	h1.WriteRequest(c.bw, http.MethodPost, p.path, p.addr, input)
	if err := c.bw.Flush(); err != nil {
		c.nc.Close()
		return nil, err
	}
	head, err := h1.ReadHead(c.br)
	if err != nil || head.Status != http.StatusOK || head.Length < 0 {
		c.nc.Close()
		return nil, fmt.Errorf("agent: status %d, length %d: %v", head.Status, head.Length, err)
	}
	out := make([]byte, head.Length)
	if _, err := io.ReadFull(c.br, out); err != nil {
		c.nc.Close()
		return nil, err
	}
	p.put(c)
	return out, nil
}

// viaRetrying sends input as the sidecar builds its request (a struct
// URL, a rewindable body, constant header values) through go-retryablehttp
// and http.Client, and reads the reply whole.
func (l *ladder) viaRetrying(ctx context.Context, input []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "", nil)
	if err != nil {
		return nil, err
	}
	*req.URL = url.URL{Scheme: "http", Host: l.raw.addr, Path: l.raw.path}
	req.Host = l.raw.addr
	rb := &reqBody{b: input}
	rb.Reset(input)
	req.Body, req.ContentLength = rb, int64(len(input))
	req.Header["Content-Type"] = valueJSON
	req.Header["Accept"] = valueJSON
	resp, err := l.retrying.Do(&retryablehttp.Request{Request: req})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength < 0 {
		return nil, fmt.Errorf("agent: status %d, length %d", resp.StatusCode, resp.ContentLength)
	}
	out := make([]byte, resp.ContentLength)
	if _, err := io.ReadFull(resp.Body, out); err != nil {
		return nil, err
	}
	return out, nil
}

var valueJSON = []string{"application/json"}

// reqBody is a request body go-retryablehttp's PrepareRetry rewinds.
type reqBody struct {
	bytes.Reader
	b []byte
}

func (*reqBody) Close() error { return nil }

// rawRT is raw's pool as an http.RoundTripper: the request written by
// hand, the reply's head parsed by hand into an *http.Response, its body
// returning the connection to the pool at its end. With peek, a pooled
// connection is peeked at before reuse as upstream's pool does.
type rawRT struct {
	raw          *raw
	peek         bool
	readResponse bool // the head read by http.ReadResponse
}

func (t *rawRT) RoundTrip(req *http.Request) (*http.Response, error) {
	c, err := t.get()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c.bw, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: %d\r\n\r\n",
		req.Method, req.URL.Path, req.Host, req.ContentLength)
	if req.Body != nil {
		io.Copy(c.bw, req.Body)
	}
	if err := c.bw.Flush(); err != nil {
		c.nc.Close()
		return nil, err
	}
	if t.readResponse {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			c.nc.Close()
			return nil, err
		}
		if resp.ContentLength < 0 {
			c.nc.Close()
			return nil, errors.New("agent: reply without a length")
		}
		b := &rtBody{c: c, p: t.raw, body: resp.Body}
		b.r = io.LimitedReader{R: resp.Body, N: resp.ContentLength}
		resp.Body = b
		return resp, nil
	}
	head, err := h1.ReadHead(c.br)
	if err != nil {
		c.nc.Close()
		return nil, err
	}
	if head.Length < 0 || head.Chunked {
		c.nc.Close()
		return nil, errors.New("agent: reply without a length")
	}
	b := &rtBody{c: c, p: t.raw}
	b.r = io.LimitedReader{R: c.br, N: head.Length}
	return &http.Response{
		Status: strconv.Itoa(head.Status), StatusCode: head.Status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {head.ContentType}}, ContentLength: head.Length, Body: b, Request: req,
	}, nil
}

// get is raw's get, with the liveness peek when asked.
func (t *rawRT) get() (*rawConn, error) {
	for {
		select {
		case c := <-t.raw.idle:
			if !t.peek || c.alive() {
				return c, nil
			}
			c.nc.Close()
			continue
		default:
		}
		return t.raw.get()
	}
}

// alive is upstream's (*conn).alive: one non-blocking MSG_PEEK recvfrom
// through the connection's RawConn, its function made once per
// connection.
func (c *rawConn) alive() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	if c.rc == nil {
		sc, ok := c.nc.(syscall.Conn)
		if !ok {
			return true
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return true
		}
		c.rc, c.peekFn = rc, c.peekOnce
	}
	err := c.rc.Read(c.peekFn)
	return err == nil && c.live
}

func (c *rawConn) peekOnce(fd uintptr) bool {
	var buf [1]byte
	n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	c.live = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
	return true
}

// rtBody is a reply body of known length; read to its end, its
// connection goes back to the pool.
type rtBody struct {
	r    io.LimitedReader
	c    *rawConn
	p    *raw
	body io.ReadCloser // net/http's, with readResponse; closed at the end
	done bool
}

func (b *rtBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.end()
	}
	return n, err
}

// end returns the connection, its reply read whole, to the pool.
func (b *rtBody) end() {
	if b.body != nil {
		b.body.Close()
	}
	b.p.put(b.c)
}

func (b *rtBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if b.r.N == 0 {
		b.end()
		return nil
	}
	return b.c.nc.Close()
}

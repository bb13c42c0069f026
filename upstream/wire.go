package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// HTTP/1.1 on the wire: writing a request's head and body, reading the
// reply's head with its size bounded.

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
			c.body = io.LimitedReader{R: req.Body, N: req.ContentLength}
			n, err = io.Copy(bw, &c.body)
			c.body.R = nil
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

var errHeadTooLarge = &core.ReplyError{Msg: fmt.Sprintf("agent reply head (status line and headers) exceeds %d KiB", maxReplyHead>>10)}

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
			return nil, &core.ReplyError{Msg: "agent reply is not valid HTTP: " + err.Error()}
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			// The sidecar never asks to switch: what follows is not HTTP.
			return nil, &core.ReplyError{Msg: "agent answered 101 Switching Protocols to a request that asked for no upgrade"}
		case resp.StatusCode >= 200:
			return resp, nil
		case n1xx == max1xx:
			return nil, &core.ReplyError{Msg: fmt.Sprintf("agent sent more than %d interim (1xx) replies", max1xx)}
		}
		resp.Body.Close() // a 1xx has no body
	}
}

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/sidecar-dev/sidecar/bench/internal/h1"
)

// conn is a minimal HTTP/1.1 client connection: pre-built requests out,
// status, Content-Length or chunked bodies in. It costs the load generator
// far less CPU per request than net/http's client (no per-connection
// goroutines, no header maps), which matters when the generator shares two
// cores with the agent and the proxy under test.
type conn struct {
	addr string
	nc   net.Conn
	br   *bufio.Reader
	// reusable is false once the server asked to close or a body was not
	// read to its end.
	reusable bool
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{addr: addr, nc: nc, br: bufio.NewReaderSize(nc, 16<<10), reusable: true}, nil
}

func (c *conn) Close() error { return c.nc.Close() }

// request is a ready-to-send HTTP/1.1 POST.
func request(addr, path string, body []byte) []byte {
	var b bytes.Buffer
	h1.WriteRequest(&b, "POST", path, addr, body)
	return b.Bytes()
}

// response is the head of a reply and a reader of its body.
type response struct {
	status int
	body   io.Reader
	// chunked bodies need their trailer read after io.EOF.
	chunked bool
}

var errStatus = errors.New("unexpected status")

// send writes req and reads the reply's head.
func (c *conn) send(req []byte) (response, error) {
	if _, err := c.nc.Write(req); err != nil {
		return response{}, err
	}
	head, err := h1.ReadHead(c.br)
	if err != nil {
		return response{}, err
	}
	if head.Close {
		c.reusable = false
	}
	resp := response{status: head.Status, body: head.Body(c.br), chunked: head.Chunked}
	if resp.body == nil {
		c.reusable = false
		resp.body = c.br
	}
	return resp, nil
}

// finish reads what is left of a body and its trailer, so the connection
// can carry the next request.
func (c *conn) finish(resp response) error {
	if _, err := io.Copy(io.Discard, resp.body); err != nil {
		c.reusable = false
		return err
	}
	if resp.chunked {
		if err := h1.ReadTrailer(c.br); err != nil {
			c.reusable = false
			return err
		}
	}
	return nil
}

// do sends a unary request and reads its whole reply.
func (c *conn) do(req []byte) error {
	resp, err := c.send(req)
	if err != nil {
		c.reusable = false
		return err
	}
	if err := c.finish(resp); err != nil {
		return err
	}
	if resp.status != 200 {
		return fmt.Errorf("%w %d", errStatus, resp.status)
	}
	return nil
}

// lineReader yields the records of a streamed body: ndjson lines, or the
// "data:" lines of SSE (the raw pass-through through nginx and direct).
type lineReader struct {
	br *bufio.Reader
}

func newLineReader(body io.Reader, size int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(body, size)}
}

// next returns the next record line (without its line end) and whether
// there is one; io.EOF ends the stream cleanly.
func (l *lineReader) next() ([]byte, error) {
	for {
		line, err := l.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A record longer than the buffer: not in this benchmark.
			return nil, err
		}
		if len(line) == 0 && err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
		case line[0] == '{':
			return line, nil
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimSpace(line[5:])
			if string(d) == "[DONE]" {
				continue
			}
			return d, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// stamp is the send time an agent's record carries: the digits after the
// first `"t":` (JSON records) or `t\":` (a text chunk wrapped as
// {"output":"…"}), 0 when there is none.
func stamp(rec []byte) int64 {
	i := bytes.Index(rec, []byte(`"t":`))
	if i >= 0 {
		i += 4
	} else if i = bytes.Index(rec, []byte(`t\":`)); i >= 0 {
		i += 4
	} else {
		return 0
	}
	var v int64
	for ; i < len(rec) && rec[i] >= '0' && rec[i] <= '9'; i++ {
		v = v*10 + int64(rec[i]-'0')
	}
	return v
}

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"
)

// raw is -mode raw: net/http's server in front, but a hand-written
// HTTP/1.1 client to the agent that writes the request and reads the
// reply on the handler's goroutine, from a pool of keep-alive
// connections. It measures what net/http's Transport costs: its
// per-connection readLoop and writeLoop goroutines and the hand-offs
// between them and the caller.
type raw struct {
	addr string
	idle chan *rawConn
}

type rawConn struct {
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func newRaw(addr string) *raw { return &raw{addr: addr, idle: make(chan *rawConn, 512)} }

func (p *raw) get() (*rawConn, error) {
	select {
	case c := <-p.idle:
		return c, nil
	default:
	}
	nc, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 4<<10), bw: bufio.NewWriterSize(nc, 4<<10)}, nil
}

func (p *raw) put(c *rawConn) {
	select {
	case p.idle <- c:
	default:
		c.nc.Close()
	}
}

func (p *raw) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, err := p.get()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	fmt.Fprintf(c.bw, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", r.Method, r.URL.Path, p.addr, len(body))
	c.bw.Write(body)
	if err := c.bw.Flush(); err != nil {
		c.nc.Close()
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	status, length, chunked, ctype, err := readHead(c.br)
	if err != nil {
		c.nc.Close()
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	var src io.Reader
	switch {
	case chunked:
		src = httputil.NewChunkedReader(c.br)
	case length >= 0:
		w.Header().Set("Content-Length", strconv.FormatInt(length, 10))
		src = io.LimitReader(c.br, length)
	default:
		http.Error(w, "reply without a length", http.StatusBadGateway)
		c.nc.Close()
		return
	}
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				c.nc.Close()
				return
			}
			if chunked {
				rc.Flush()
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			c.nc.Close()
			panic(http.ErrAbortHandler)
		}
	}
	if chunked { // the trailer
		for {
			line, err := c.br.ReadSlice('\n')
			if err != nil {
				c.nc.Close()
				return
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				break
			}
		}
	}
	p.put(c)
}

// readHead reads a reply's status line and the headers it needs.
func readHead(br *bufio.Reader) (status int, length int64, chunked bool, ctype string, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, 0, false, "", err
	}
	if len(line) < 12 {
		return 0, 0, false, "", errors.New("bad status line")
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, 0, false, "", err
	}
	length = -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, 0, false, "", err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return status, length, chunked, ctype, nil
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			length, _ = strconv.ParseInt(string(value), 10, 64)
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Content-Type")):
			ctype = string(value)
		}
	}
}

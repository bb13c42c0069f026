package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/sidecar-dev/sidecar/bench/internal/h1"
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
	// path, if set, is the agent's path for every call (the floor
	// ladder's rungs take the platform's route and call the agent's
	// /query); else the caller's.
	path string
}

type rawConn struct {
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
	// The floor ladder's liveness peek (ladder.go): made once.
	rc     syscall.RawConn
	peekFn func(fd uintptr) bool
	live   bool
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

func (p *raw) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.serve(w, r) }

// serve is ServeHTTP, returning the reply's status and the body bytes
// written (for the floor ladder's log line and metrics).
func (p *raw) serve(w http.ResponseWriter, r *http.Request) (status int, written int64) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest, 0
	}
	path := r.URL.Path
	if p.path != "" {
		path = p.path
	}
	c, err := p.get()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return http.StatusBadGateway, 0
	}
	h1.WriteRequest(c.bw, r.Method, path, p.addr, body)
	if err := c.bw.Flush(); err != nil {
		c.nc.Close()
		http.Error(w, err.Error(), http.StatusBadGateway)
		return http.StatusBadGateway, 0
	}
	head, err := h1.ReadHead(c.br)
	if err != nil {
		c.nc.Close()
		http.Error(w, err.Error(), http.StatusBadGateway)
		return http.StatusBadGateway, 0
	}
	if head.ContentType != "" {
		w.Header().Set("Content-Type", head.ContentType)
	}
	src := head.Body(c.br)
	if src == nil {
		http.Error(w, "reply without a length", http.StatusBadGateway)
		c.nc.Close()
		return http.StatusBadGateway, 0
	}
	if !head.Chunked {
		w.Header().Set("Content-Length", strconv.FormatInt(head.Length, 10))
	}
	w.WriteHeader(head.Status)
	rc := http.NewResponseController(w)
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	for {
		n, err := src.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			written += int64(m)
			if werr != nil {
				c.nc.Close()
				return head.Status, written
			}
			if head.Chunked {
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
	if head.Chunked {
		if err := h1.ReadTrailer(c.br); err != nil {
			c.nc.Close()
			return head.Status, written
		}
	}
	p.put(c)
	return head.Status, written
}

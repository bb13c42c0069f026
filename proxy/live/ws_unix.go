//go:build unix

package live

import (
	"io"
	"net"
	"os"
	"syscall"
)

// rawConn is conn's syscall.RawConn, through which an idle WS waits for
// bytes holding no buffer; nil when it has none (TLS, a pipe).
func rawConn(conn net.Conn) syscall.RawConn {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// rawIO is a WS's reads and writes through its raw socket: the functions
// handed to the RawConn are made once, with their results here, so that
// a read or a write allocates nothing.
type rawIO struct {
	read, write func(fd uintptr) bool
	// rn, rerr: the last read; wbuf, wn, werr: the last write's bytes
	// and its outcome.
	rn, wn     int
	rerr, werr error
	wbuf       []byte
}

func (c *WS) initRaw() {
	c.io.read = c.readFD
	c.io.write = c.writeFD
}

// readRaw reads once into the read buffer, as net's Read does (read(2);
// on EAGAIN, wait for the poller and read again), except that the buffer
// is given back while it waits: an idle connection holds none. It
// honours the socket's read deadline and its closing (rmu held).
func (c *WS) readRaw() (int, error) {
	err := c.raw.Read(c.io.read)
	n, rerr := c.io.rn, c.io.rerr
	c.io.rerr = nil
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, os.NewSyscallError("read", rerr)
	case n <= 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *WS) readFD(fd uintptr) bool {
	buf := c.takeRead()
	for {
		c.io.rn, c.io.rerr = sysRead(int(fd), buf)
		if c.io.rerr != syscall.EINTR {
			break
		}
	}
	if c.io.rerr == syscall.EAGAIN {
		c.releaseRead()
		return false // wait until readable, then again
	}
	return true
}

// writeRaw writes buf with one write(2) that does not wait for the
// socket to take more: the bytes it took, none when it takes none now
// (EAGAIN). It honours the socket's write deadline and its closing (wmu
// held).
func (c *WS) writeRaw(buf []byte) (int, error) {
	c.io.wbuf = buf
	err := c.raw.Write(c.io.write)
	n, werr := c.io.wn, c.io.werr
	c.io.wbuf, c.io.werr = nil, nil
	switch {
	case err != nil:
		return 0, err
	case werr == syscall.EAGAIN:
		return 0, nil
	case werr != nil:
		return 0, os.NewSyscallError("write", werr)
	}
	return n, nil
}

func (c *WS) writeFD(fd uintptr) bool {
	for {
		c.io.wn, c.io.werr = sysWrite(int(fd), c.io.wbuf)
		if c.io.werr != syscall.EINTR {
			return true
		}
	}
}

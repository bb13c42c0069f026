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

// readRaw reads once from rc into the buffer take gives, as net's Read
// does (read(2); on EAGAIN, wait for the poller and read again), except
// that the buffer is given back (drop) while it waits: an idle
// connection holds none. It honours rc's read deadline and its closing.
func readRaw(rc syscall.RawConn, take func() []byte, drop func()) (int, error) {
	var n int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		buf := take()
		for {
			n, rerr = syscall.Read(int(fd), buf)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			drop()
			return false // wait until readable, then again
		}
		return true
	})
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

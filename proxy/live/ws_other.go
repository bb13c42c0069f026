//go:build !unix

package live

import (
	"net"
	"syscall"
)

// rawConn is nil off unix: an idle WS waits in conn's Read, holding its
// read buffer.
func rawConn(net.Conn) syscall.RawConn { return nil }

func readRaw(syscall.RawConn, func() []byte, func()) (int, error) { panic("unreachable") }

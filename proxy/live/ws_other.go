//go:build !unix

package live

import (
	"net"
	"syscall"
)

// rawConn is nil off unix: an idle WS waits in conn's Read, holding its
// read buffer, and a write always waits.
func rawConn(net.Conn) syscall.RawConn { return nil }

type rawIO struct{}

func (c *WS) initRaw()                     {}
func (c *WS) readRaw() (int, error)        { panic("unreachable") }
func (c *WS) writeRaw([]byte) (int, error) { panic("unreachable") }
func sysRead(int, []byte) (int, error)     { panic("unreachable") }

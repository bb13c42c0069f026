package upstream

import (
	"syscall"
	"unsafe"
)

// unacked is how many bytes written to the TCP connection its peer has
// not acknowledged (SIOCOUTQ, which is TIOCOUTQ's number).
func unacked(rc syscall.RawConn) (int, bool) {
	var n int32
	ok := false
	err := rc.Control(func(fd uintptr) {
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
		ok = errno == 0
	})
	return int(n), ok && err == nil
}

package live

import (
	"syscall"
	"unsafe"
)

// sysRead and sysWrite are read(2) and write(2) on a socket that never
// blocks (it is non-blocking: a call that would wait fails with EAGAIN),
// made without telling the scheduler a system call may block
// (syscall.RawSyscall): the relay makes two or three of them a burst, and
// the bookkeeping of a blocking call cost more than the call.
func sysRead(fd int, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

func sysWrite(fd int, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

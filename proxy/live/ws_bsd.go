//go:build unix && !linux

package live

import "syscall"

func sysRead(fd int, p []byte) (int, error)  { return syscall.Read(fd, p) }
func sysWrite(fd int, p []byte) (int, error) { return syscall.Write(fd, p) }

//go:build !linux

package upstream

import "syscall"

// unacked is not known outside Linux: a request is then never taken as
// unacknowledged.
func unacked(syscall.RawConn) (int, bool) { return 0, false }

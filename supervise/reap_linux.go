package supervise

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// What Linux gives the supervisor that other systems do not: the
// parent-death signal, waitid without reaping, the child subreaper and
// /proc.

// sysProcAttr puts the child in a process group of its own (its pgid is its
// pid) and has the kernel kill it if the sidecar dies first. Pdeathsig
// fires when the thread that started the child exits; Go only ends threads
// locked with runtime.LockOSThread, which this package never does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExited blocks until pid has exited, without reaping it: the
// waitid(P_PID, pid, WEXITED|WNOWAIT) that os/exec uses the same way.
func waitExited(pid int) error {
	const pPID = 1
	var siginfo [16]uint64 // siginfo_t; its content is not needed
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&siginfo[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
		default:
			return errno
		}
	}
}

// setSubreaper turns PR_SET_CHILD_SUBREAPER on or off: while on, orphans
// among the process's descendants are re-parented to it, not to init.
func setSubreaper(on bool) error {
	const prSetChildSubreaper = 36
	var arg uintptr
	if on {
		arg = 1
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, arg, 0); errno != 0 {
		return errno
	}
	return nil
}

// groupRunning reports whether a process of group pgid still runs:
// exited processes not yet reaped (zombies) do not count.
func groupRunning(pgid int) bool {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: assume it runs
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		state, pgrp, ok := procState(pid)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procState reads a process's state and process group from
// /proc/PID/stat; ok is false when it is gone.
func procState(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	if len(f) < 3 || len(f[0]) == 0 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(string(f[2]))
	return f[0][0], pgrp, err == nil
}

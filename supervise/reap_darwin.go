package supervise

import "syscall"

// What a Mac gives the supervisor, where `sidecar dev` runs on a
// developer's machine rather than as a container's PID 1. It has process
// groups, so Signal and Stop reach everything the agent started, as on
// Linux. It has no parent-death signal and no child subreaper:
//
//   - An agent outlives a sidecar that is killed with SIGKILL (or crashes);
//     a sidecar that is stopped any other way stops the agent's group
//     first. (The agent's stdin is /dev/null, not a pipe whose EOF could
//     tell it, since an agent that reads stdin would change behaviour.)
//   - Orphans the agent leaves are re-parented to launchd, which reaps
//     them, not to the sidecar: with ReapOrphans, the reaper reaps only the
//     sidecar's own children.

// sysProcAttr puts the child in a process group of its own: its pgid is
// its pid.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited blocks until pid has exited, without reaping it: a kqueue
// EVFILT_PROC filter for NOTE_EXIT, where Linux has waitid with WNOWAIT
// (which Go's os package does not use on macOS either).
func waitExited(pid int) error {
	kq, err := syscall.Kqueue()
	if err != nil {
		return err
	}
	defer syscall.Close(kq)
	var change syscall.Kevent_t
	syscall.SetKevent(&change, pid, syscall.EVFILT_PROC, syscall.EV_ADD|syscall.EV_ONESHOT)
	change.Fflags = syscall.NOTE_EXIT
	got := make([]syscall.Kevent_t, 1)
	for {
		n, err := syscall.Kevent(kq, []syscall.Kevent_t{change}, got, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.ESRCH:
			return nil // already exited: pid is an unreaped child of ours
		case err != nil:
			return err
		case n == 0:
			continue
		case got[0].Flags&syscall.EV_ERROR != 0 && got[0].Data != 0:
			// A failed registration comes back as an event.
			if errno := syscall.Errno(got[0].Data); errno != syscall.ESRCH {
				return errno
			}
		}
		return nil
	}
}

// setSubreaper does nothing: macOS has no child subreaper.
func setSubreaper(bool) error { return nil }

// groupRunning reports whether a process of group pgid still runs. Without
// /proc a zombie cannot be told from a running process, but on a Mac the
// group's zombies are short-lived: the agent itself is reaped before Stop
// looks, and orphans are reaped by launchd.
func groupRunning(pgid int) bool {
	return syscall.Kill(-pgid, 0) != syscall.ESRCH
}

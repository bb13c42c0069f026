package supervise

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// reapInterval is the reaper's safety net: it also sweeps this often, in
// case a SIGCHLD was not delivered to it.
const reapInterval = time.Second

// reaping is set while a ReapOrphans supervisor runs: wait4(-1) belongs to
// one goroutine in the whole process, or two would steal each other's
// agents.
var reaping atomic.Bool

// errReaping rejects a second ReapOrphans supervisor.
var errReaping = errors.New("supervise: another supervisor is already reaping orphans")

// exitStatus turns a wait status into a shell-style exit code: the exit
// status, or 128+N for a death by signal N.
func exitStatus(ws syscall.WaitStatus) (int, syscall.Signal) {
	if ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return ws.ExitStatus(), 0
}

// waitAgent waits for the agent's pid only (no ReapOrphans): it blocks
// until the agent has exited, leaving it unreaped, and then reaps it under
// mu, so that Signal never sees a reaped pid as running.
func (s *Supervisor) waitAgent(pid int) {
	defer s.wg.Done()
	err := waitExited(pid)
	s.mu.Lock()
	var ws syscall.WaitStatus
	if err == nil {
		_, err = wait4(pid, &ws, 0) // a zombie by now: does not block
	}
	s.pid = 0
	s.mu.Unlock()
	if err != nil {
		// Something else in the process reaped the agent: its status is
		// lost. Report a failure rather than a success.
		s.log.Error("agent exit status lost", zap.Int("pid", pid), zap.Error(err))
		ws = syscall.WaitStatus(255 << 8)
	}
	s.exited <- ws
}

// startReaper makes the process a child subreaper (on Linux; macOS has
// none) and starts the goroutine that reaps every child. SIGCHLD is
// subscribed before the agent starts, so no exit goes unnoticed.
func (s *Supervisor) startReaper() error {
	if !reaping.CompareAndSwap(false, true) {
		return errReaping
	}
	if err := setSubreaper(true); err != nil {
		reaping.Store(false)
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGCHLD)
	s.reapQuit, s.reapDone = make(chan struct{}), make(chan struct{})
	go s.reap(sigc, s.reapQuit, s.reapDone)
	return nil
}

// stopReaper ends the reaper, after one last sweep, and gives up being a
// subreaper: with nobody reaping, later orphans are better off with init.
// It does nothing without ReapOrphans.
func (s *Supervisor) stopReaper() {
	if s.reapQuit == nil {
		return
	}
	close(s.reapQuit)
	<-s.reapDone
	s.reapQuit = nil
	if err := setSubreaper(false); err != nil {
		s.log.Warn("leaving child subreaper mode failed", zap.Error(err))
	}
	reaping.Store(false)
}

// reap sweeps on every SIGCHLD and every reapInterval until quit.
func (s *Supervisor) reap(sigc chan os.Signal, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer signal.Stop(sigc)
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		s.reapAll()
		select {
		case <-quit:
			s.reapAll()
			return
		case <-sigc:
		case <-t.C:
		}
	}
}

// reapAll reaps every child that has exited. The agent's status goes to
// the supervise goroutine; anyone else's is an orphan's and is dropped.
// Holding mu keeps spawn from starting an agent whose pid is not yet known
// here.
func (s *Supervisor) reapAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := wait4(-1, &ws, syscall.WNOHANG)
		if err != nil || pid <= 0 { // ECHILD: no children; 0: none has exited
			return
		}
		if pid == s.pid {
			s.pid = 0
			s.exited <- ws // buffered: one status per run, read before the next
			continue
		}
		code, _ := exitStatus(ws)
		s.log.Debug("orphan reaped", zap.Int("pid", pid), zap.Int("exit_code", code))
	}
}

// wait4 is syscall.Wait4, retried on EINTR.
func wait4(pid int, ws *syscall.WaitStatus, options int) (int, error) {
	for {
		wpid, err := syscall.Wait4(pid, ws, options, nil)
		if err != syscall.EINTR {
			return wpid, err
		}
	}
}

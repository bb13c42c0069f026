package supervise

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Signals to the agent's process group: Signal, the end of a run's
// leftovers, and Stop.

// Signal sends sig to the running agent's whole process group. It returns
// nil when no agent is running.
func (s *Supervisor) Signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signalLocked(sig)
}

func (s *Supervisor) signalLocked(sig syscall.Signal) error {
	if s.pid == 0 {
		return nil
	}
	if err := syscall.Kill(-s.pid, sig); err != nil {
		return fmt.Errorf("signalling agent group %d with %v: %w", s.pid, sig, err)
	}
	return nil
}

// endLeftovers sends SIGTERM to what the run that just ended left in its
// process group, before a restart: the next run kills what is still there.
func (s *Supervisor) endLeftovers() {
	s.mu.Lock()
	pgid := s.pgid
	err := s.killGroupLocked(syscall.SIGTERM)
	s.mu.Unlock()
	if err == nil {
		s.log.Info("agent's leftover processes signalled", zap.Int("pgid", pgid), zap.Stringer("signal", syscall.SIGTERM))
	}
}

// killGroupLocked sends sig to the latest run's process group, whether or
// not its leader still runs. It returns ESRCH when the group is empty.
//
// The group is signalled by number. The number cannot be reused while a
// process of the group lives; once the group is empty, only a pid wrap
// that hands it to a new group leader could make it name another group.
func (s *Supervisor) killGroupLocked(sig syscall.Signal) error {
	if s.pgid == 0 {
		return syscall.ESRCH
	}
	return syscall.Kill(-s.pgid, sig)
}

// groupPoll is how often Stop looks for processes left in the agent's
// group once its leader has been reaped.
const groupPoll = 20 * time.Millisecond

// Stop ends supervision: the agent is not restarted any more, its process
// group gets SIGTERM and, if anything in it is still running after grace,
// SIGKILL. The group is signalled even after the agent itself has exited,
// so nothing it started is left behind. Stop returns once the agent has
// been reaped, its group is empty (or has had SIGKILL) and Done is
// closed, or with ctx's error when ctx ends first. It is safe to call more
// than once, and after the agent has exited.
func (s *Supervisor) Stop(ctx context.Context, grace time.Duration) error {
	s.mu.Lock()
	if !s.stopping {
		s.stopping = true
		close(s.stop)
	}
	pgid := s.pgid
	err := s.killGroupLocked(syscall.SIGTERM)
	s.mu.Unlock()
	if err == nil {
		s.log.Info("agent stopping", zap.Int("pgid", pgid), zap.Duration("grace", grace))
	}

	t := time.NewTimer(grace)
	defer t.Stop()
	ended, err := s.waitEnded(ctx, t.C)
	if err != nil || ended {
		return err
	}
	s.mu.Lock()
	pgid = s.pgid
	err = s.killGroupLocked(syscall.SIGKILL)
	s.pgid = 0
	s.mu.Unlock()
	if err == nil {
		s.log.Warn("agent killed after grace", zap.Int("pgid", pgid), zap.Duration("grace", grace))
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping agent: %w", ctx.Err())
	}
}

// waitEnded waits until Done is closed and nothing runs in the agent's
// group any more (true), until expired fires (false), or until ctx ends.
func (s *Supervisor) waitEnded(ctx context.Context, expired <-chan time.Time) (bool, error) {
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	done := s.done // nil once closed
	for {
		if done == nil {
			s.mu.Lock()
			if s.pgid != 0 && !groupRunning(s.pgid) {
				s.pgid = 0
			}
			empty := s.pgid == 0
			s.mu.Unlock()
			if empty {
				return true, nil
			}
		}
		select {
		case <-done:
			done = nil
		case <-tick.C:
		case <-expired:
			return false, nil
		case <-ctx.Done():
			return false, fmt.Errorf("stopping agent: %w", ctx.Err())
		}
	}
}

package supervise

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// EventKind names what happened to the agent process.
type EventKind string

// The kinds of Event.
const (
	Started    EventKind = "started"
	Exited     EventKind = "exited"
	Restarting EventKind = "restarting" // a restart is due after the backoff
	GaveUp     EventKind = "gave_up"    // OnFailure reached MaxRestarts
)

// Event is something that happened to the agent process.
type Event struct {
	Kind EventKind
	// PID is the agent's pid (Started, Exited); 0 in an Exited event for a
	// restart that could not start the command.
	PID int
	// ExitCode is, in an Exited event, the exit status, or 128+N when the
	// agent was killed by signal N; 127 (not found) or 126 (not
	// executable) for a restart that could not start the command.
	ExitCode int
	// Signal is, in an Exited event, the signal that killed the agent, else 0.
	Signal syscall.Signal
	// Restarts is how many restarts had happened when the event did.
	Restarts int
}

// stableRun is how long a run must last for the next restart's delay to
// start over from Options.Backoff: the agent was up, not crash-looping.
const stableRun = 10 * time.Second

// eventBuffer is the capacity of the Events channel.
const eventBuffer = 64

// Supervisor runs one agent command: it starts it, restarts it as Options
// say, and reports its exit. Its methods are safe for concurrent use.
type Supervisor struct {
	opts Options
	path string // Command[0], resolved
	log  *zap.Logger
	out  *outputs

	events chan Event
	exited chan syscall.WaitStatus // the agent's status, once per run
	stop   chan struct{}           // closed by the first Stop
	done   chan struct{}
	wg     sync.WaitGroup // the goroutines waiting for the agent's pid

	// With ReapOrphans: reapQuit is closed to end the reaper, which closes
	// reapDone as it returns.
	reapQuit, reapDone chan struct{}

	// mu is held while a child is started, while children are reaped and
	// while the agent's group is signalled, so the reaper never reaps an
	// agent whose pid it has not been told, and a reaped pid is never
	// signalled.
	mu  sync.Mutex
	pid int // the running agent's pid, which is also its pgid; 0 if none
	// pgid is the latest run's process group. It outlives the run's
	// leader: processes the agent left behind are still in it, and are
	// ended before the next run starts and by Stop. 0 once ended.
	pgid     int
	stopping bool
	exitCode int
}

// Start starts the command and supervises it until it exits for good. It
// returns an error when the command cannot be started at all: it is not
// found, not executable, or the options are invalid.
func Start(opts Options) (*Supervisor, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	path, err := lookPath(opts.Command[0], opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("starting agent %q: %w", opts.Command[0], err)
	}
	s := &Supervisor{
		opts:   opts,
		path:   path,
		log:    opts.Logger,
		events: make(chan Event, eventBuffer),
		exited: make(chan syscall.WaitStatus, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if s.out, err = openOutputs(opts.Stdout, opts.Stderr); err != nil {
		return nil, fmt.Errorf("starting agent %q: %w", opts.Command[0], err)
	}
	if opts.ReapOrphans {
		if err := s.startReaper(); err != nil {
			s.out.close(0)
			return nil, err
		}
	}
	pid, err := s.spawn()
	if err != nil {
		s.stopReaper()
		s.out.close(0)
		return nil, err
	}
	s.started(pid, 0)
	go s.supervise(pid)
	return s, nil
}

// errStopping reports a restart that Stop came before.
var errStopping = errors.New("supervise: stopping")

// spawn starts one run of the command and, without ReapOrphans, the
// goroutine that waits for it.
func (s *Supervisor) spawn() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return 0, errStopping
	}
	// What an earlier run left behind (a background child of a wrapper
	// shell) could hold the agent's port and make this run fail: it has
	// had SIGTERM and the backoff to go; now it is killed.
	if s.pgid != 0 {
		s.killGroupLocked(syscall.SIGKILL)
		s.pgid = 0
	}
	p, err := os.StartProcess(s.path, s.opts.Command, &os.ProcAttr{
		Dir:   s.opts.Dir,
		Env:   s.opts.Env,
		Files: s.out.files[:],
		Sys:   sysProcAttr(),
	})
	if err != nil {
		return 0, fmt.Errorf("starting agent %q: %w", s.opts.Command[0], err)
	}
	// The pid is all we need: it is waited for and signalled by number,
	// under mu.
	pid := p.Pid
	p.Release()
	s.pid, s.pgid = pid, pid
	if !s.opts.ReapOrphans {
		s.wg.Add(1)
		go s.waitAgent(pid)
	}
	return pid, nil
}

// supervise runs until the agent has exited for good: it waits for each
// exit and decides whether and when to start the agent again.
func (s *Supervisor) supervise(pid int) {
	defer s.finish()
	delay := s.opts.Backoff
	began := time.Now()
	var startErr error // why the last restart did not start, with pid 0
	for restarts := 0; ; {
		var code int
		var sig syscall.Signal
		if pid != 0 {
			code, sig = exitStatus(<-s.exited)
		} else {
			code = startFailedCode(startErr)
		}
		s.exit(pid, code, sig, restarts, time.Since(began))
		switch {
		case s.isStopping(), s.opts.Restart != OnFailure, code == 0:
			return
		case s.opts.MaxRestarts > 0 && restarts >= s.opts.MaxRestarts:
			s.log.Error("agent failed too often, giving up", zap.Int("restarts", restarts))
			s.emit(Event{Kind: GaveUp, Restarts: restarts})
			return
		}
		if time.Since(began) >= stableRun {
			delay = s.opts.Backoff
		}
		s.endLeftovers()
		s.log.Warn("agent restarting", zap.Duration("delay", delay), zap.Int("restarts", restarts))
		s.emit(Event{Kind: Restarting, Restarts: restarts})
		if !s.sleep(delay) {
			return
		}
		delay = min(2*delay, s.opts.MaxBackoff)
		restarts++
		began = time.Now()
		pid, startErr = s.spawn()
		switch {
		case errors.Is(startErr, errStopping):
			return
		case startErr != nil:
			s.log.Error("agent restart failed", zap.Error(startErr), zap.Int("restarts", restarts))
		default:
			s.started(pid, restarts)
		}
	}
}

// startFailedCode is the exit code reported for a restart that could not
// start the command, as a shell would report it: 127 when it is gone, 126
// when it cannot be executed.
func startFailedCode(err error) int {
	if errors.Is(err, fs.ErrNotExist) {
		return 127
	}
	return 126
}

// started logs the program, never its arguments, which may hold a secret
// passed as a flag; they are logged at debug level only.
func (s *Supervisor) started(pid, restarts int) {
	fields := []zap.Field{zap.Int("pid", pid), zap.String("program", s.opts.Command[0]), zap.Int("restarts", restarts)}
	if s.log.Core().Enabled(zap.DebugLevel) {
		fields = append(fields, zap.Strings("args", s.opts.Command[1:]))
	}
	s.log.Info("agent started", fields...)
	s.emit(Event{Kind: Started, PID: pid, Restarts: restarts})
}

func (s *Supervisor) exit(pid, code int, sig syscall.Signal, restarts int, ran time.Duration) {
	s.mu.Lock()
	s.exitCode = code
	s.mu.Unlock()
	fields := []zap.Field{zap.Int("pid", pid), zap.Int("exit_code", code), zap.Int("restarts", restarts), zap.Duration("duration", ran)}
	if sig != 0 {
		fields = append(fields, zap.Stringer("signal", sig))
	}
	s.log.Info("agent exited", fields...)
	s.emit(Event{Kind: Exited, PID: pid, ExitCode: code, Signal: sig, Restarts: restarts})
}

// emit sends e without ever blocking: when the buffer is full, the oldest
// event is dropped to make room, so a late reader sees the latest ones.
// Only the supervise goroutine (and Start, before it) sends.
func (s *Supervisor) emit(e Event) {
	for {
		select {
		case s.events <- e:
			return
		default:
		}
		select {
		case <-s.events:
		default:
		}
	}
}

// sleep waits d, or less if Stop is called; it reports whether d passed.
func (s *Supervisor) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.stop:
		return false
	}
}

func (s *Supervisor) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// finish ends supervision once the agent has exited for good: it stops the
// reaper, flushes and closes the output pipes, waits for every goroutine,
// and only then closes Events and Done.
func (s *Supervisor) finish() {
	s.stopReaper()
	s.out.close(outputWait)
	s.wg.Wait()
	close(s.events)
	close(s.done)
}

// Events reports what happens to the agent, in order: started, exited,
// then restarting and started again, and gave_up when OnFailure reaches
// MaxRestarts. The channel holds the latest 64 events: when nobody reads,
// the oldest are dropped; it is closed once Done is.
func (s *Supervisor) Events() <-chan Event { return s.events }

// Done is closed once the agent has exited and will not be restarted:
// under Never, after an exit 0 under OnFailure, after giving up, or after
// Stop. By then every goroutine of the Supervisor has ended.
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// ExitCode is the agent's last exit code, valid once Done is closed: its
// exit status (0–255), or 128+N when signal N killed it.
func (s *Supervisor) ExitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitCode
}

// Running reports whether an agent process is alive (not yet reaped) now.
func (s *Supervisor) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid != 0
}

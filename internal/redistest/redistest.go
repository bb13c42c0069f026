// Package redistest runs, for tests, a real redis-server on a free
// loopback port: the state store's tests talk to Redis over TCP as a
// deployment does, and take it down and up again mid-run. It never
// installs: `make deps` installs Debian's redis-server before the suite.
package redistest

import (
	"bufio"
	"bytes"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/testports"
)

// startWait bounds a redis-server's start, from exec to its first PONG; a
// loaded machine takes well under a second, so only a broken start
// reaches it.
const startWait = 20 * time.Second

// stopWait is how long a stopped redis-server has to exit on SIGTERM
// before it is killed.
const stopWait = 10 * time.Second

// Server is a redis-server the test started.
type Server struct {
	t    testing.TB
	port int
	dir  string

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed once Wait returned
}

// Start runs redis-server on a free loopback port, without persistence
// (--save ” --appendonly no), waits until it answers PING, and stops it
// by its process id when the test ends. Without redis-server the test
// fails at once, naming `make deps`; under -short it is skipped.
func Start(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs redis-server (make deps)")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed: run `make deps` first (it installs Debian's redis-server): %v", err)
	}
	s := &Server{t: t, dir: t.TempDir()}
	t.Cleanup(s.Stop)
	// A port free when asked may be bound by another test binary before
	// redis-server binds it: then it starts again on another.
	for range 5 {
		s.port = testports.Free(t)
		out, err := s.start()
		if err == nil {
			return s
		}
		if !testports.InUse(out) {
			t.Fatalf("starting redis-server on 127.0.0.1:%d: %v\n%s", s.port, err, out)
		}
	}
	t.Fatal("starting redis-server: 5 free ports were taken before it bound them")
	return nil
}

// URL is the server's address as the state section writes it:
// redis://127.0.0.1:PORT/0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Stop ends the server by its process id (SIGTERM, SIGKILL if it is not
// gone within stopWait) and waits for it to exit. Stopping a stopped
// server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopWait):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Restart starts the server again on the same port, after Stop, and waits
// until it answers PING; a running server is stopped first.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if out, err := s.start(); err != nil {
		s.t.Fatalf("restarting redis-server on %s: %v\n%s", s.Addr(), err, out)
	}
}

// start runs redis-server on s.port and waits for its PONG; on a failure
// it returns what the server printed.
func (s *Server) start() (string, error) {
	cmd := exec.Command("redis-server",
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--daemonize", "no", "--protected-mode", "no",
		"--dir", s.dir, "--logfile", "")
	p := &process{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()

	deadline := time.Now().Add(startWait)
	for {
		if err := Ping(s.Addr()); err == nil {
			return "", nil
		}
		select {
		case <-p.done:
			s.mu.Lock()
			s.proc = nil
			s.mu.Unlock()
			return p.out.String(), &exitError{cmd.ProcessState.String()}
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return p.out.String(), &exitError{"no PONG within " + startWait.String()}
		}
	}
}

// Ping sends PING to the Redis at addr on a connection of its own and
// returns nil when it answers +PONG.
func Ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return &exitError{"answered " + strconv.Quote(line)}
	}
	return nil
}

type exitError struct{ what string }

func (e *exitError) Error() string { return "redis-server: " + e.what }

// syncBuffer is the server's output, written by exec's copier and read
// by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// errNoRedis is why the state rows are skipped on a machine without
// redis-server (make deps installs Debian's).
var errNoRedis = errors.New("redis-server is not installed (make deps installs it)")

// startRedis runs redis-server on a free loopback port, without
// persistence, as internal/redistest does for the tests (that package is
// test-only), and waits until it answers PING. The suite stops it with
// its other processes, by its PID.
func (s *suite) startRedis() (*proc, string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", errNoRedis
	}
	logPath := filepath.Join(s.dir, "redis.log")
	// A port free when asked may be bound by another process before
	// redis-server binds it: then it starts again on another.
	for range 5 {
		addr, err := freePort()
		if err != nil {
			return nil, "", err
		}
		_, port, _ := net.SplitHostPort(addr)
		p, err := start("redis", logPath, bin,
			"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--protected-mode", "no", "--dir", s.dir, "--logfile", "")
		if err != nil {
			return nil, "", err
		}
		s.track(p)
		if err := waitPong(addr, p, 10*time.Second); err == nil {
			return p, addr, nil
		} else if !p.exited() {
			p.stop(syscall.SIGKILL, time.Second)
			return nil, "", fmt.Errorf("%w (see %s)", err, logPath)
		}
	}
	return nil, "", fmt.Errorf("starting redis-server: 5 free ports were taken before it bound them (see %s)", logPath)
}

// waitPong polls PING on addr until redis-server answers +PONG, or p
// exits.
func waitPong(addr string, p *proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if ping(addr) == nil {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("redis-server exited before answering on %s", addr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server not answering PING on %s after %s", addr, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ping sends one PING in Redis' inline form and wants +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

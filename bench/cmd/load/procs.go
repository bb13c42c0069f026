package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a process the benchmark started; stop ends it by its PID.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func start(name string, logPath string, bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	// The sidecar listens on 0.0.0.0:$PORT when PORT is set: keep it out.
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PORT=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the process (its PID only) and waits; SIGKILL after
// grace.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// freePort returns a loopback address nothing listens on right now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// waitListening polls a TCP connect to addr until it succeeds.
func waitListening(addr string, p *proc, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			t := time.Now()
			c.Close()
			return t, nil
		}
		if p != nil && p.exited() {
			return time.Time{}, fmt.Errorf("%s exited before listening", p.name)
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s not listening on %s after %s", p.name, addr, timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// waitHTTP polls GET path on addr until it answers 200.
func waitHTTP(addr, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	req := []byte(fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr))
	for {
		c, err := dial(addr)
		if err == nil {
			c.nc.SetDeadline(time.Now().Add(time.Second))
			resp, err := c.send(req)
			c.Close()
			if err == nil && resp.status == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET http://%s%s: no 200 after %s", addr, path, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// rssKB is VmRSS of pid in KiB, from /proc/PID/status.
func rssKB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, errors.New("no VmRSS")
}

// treeRSSKB is the RSS of pid and its direct children (nginx's master and
// workers).
func treeRSSKB(pid int) (int, error) {
	total := 0
	for _, p := range family(pid) {
		kb, err := rssKB(p)
		if err != nil {
			return 0, err
		}
		total += kb
	}
	return total, nil
}

// statFields are the fields of /proc/PID/stat after "pid (comm)": state
// is [0], ppid [1], utime [11], stime [12].
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	// comm may hold spaces and parentheses: cut at the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// family is pid and its direct children.
func family(pid int) []int {
	out := []int{pid}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(child); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// clockTick is USER_HZ, the unit of utime and stime: 100 on Linux.
const clockTick = 10 * time.Millisecond

// cpuTime is the user plus system CPU time pids have used.
func cpuTime(pids []int) time.Duration {
	var ticks int64
	for _, p := range pids {
		f := statFields(p)
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * clockTick
}

// sidecarConfig is the method map the benchmark runs the sidecar with: a
// unary method and an SSE stream method on the stand-in agent. Its
// concurrency cap is above every load the suite runs: the benchmark
// measures the proxy, not the cap.
func sidecarConfig(agentAddr string) string {
	return fmt.Sprintf(`# written by bench/cmd/load
upstream:
  url: http://%s
limits: {concurrency: 10000}
methods:
  query:        {call: POST /query}
  stream_query: {mode: stream, call: POST /stream}
`, agentAddr)
}

// nginxConfig is a plain reverse proxy to the agent: no buffering of the
// reply, HTTP/1.1 with keep-alive to the upstream, access log on (the
// sidecar logs one line per call too); /ws is the agent's WebSocket at
// /live, upgraded.
func nginxConfig(prefix, listen, agentAddr string, conns int) string {
	return fmt.Sprintf(`# written by bench/cmd/load
daemon off;
master_process on;
worker_processes auto;
worker_rlimit_nofile %[4]d;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events {
    worker_connections %[4]d;
}
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 620s;
    upstream agent {
        server %[3]s;
        keepalive 256;
        keepalive_requests 1000000;
        keepalive_timeout 60s;
    }
    server {
        listen %[2]s;
        location / {
            proxy_pass http://agent;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 900s;
        }
        # The live rows' WebSocket: the upgrade passed on (hop-by-hop
        # headers are not, unless set), then bytes both ways, unbuffered.
        location = /ws {
            proxy_pass http://agent/live;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_buffering off;
            proxy_read_timeout 900s;
            proxy_send_timeout 900s;
        }
    }
}
`, prefix, listen, agentAddr, conns)
}

// startNginx writes a config under dir and runs nginx in the foreground
// with it (stop it by its PID).
func startNginx(bin, dir, listen, agentAddr string, conns int) (*proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(dir, listen, agentAddr, conns)), 0o644); err != nil {
		return nil, err
	}
	return start("nginx", filepath.Join(dir, "stderr.log"), bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"))
}

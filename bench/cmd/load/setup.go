package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// setUp starts the agent, nginx, the Go reference proxy and the sidecar,
// and warms each path.
func (s *suite) setUp() error {
	agentAddr, err := freePort()
	if err != nil {
		return err
	}
	agent, err := start("agent", filepath.Join(s.dir, "agent.log"), s.agent, "-listen", agentAddr)
	if err != nil {
		return err
	}
	s.track(agent)
	if err := waitHTTP(agentAddr, "/health", 10*time.Second); err != nil {
		return err
	}
	s.res.agentAddr = agentAddr

	nginxAddr, _ := freePort()
	ng, err := startNginx(s.nginx, filepath.Join(s.dir, "nginx"), nginxAddr, agentAddr, s.nofile)
	if err != nil {
		return err
	}
	s.track(ng)
	if _, err := waitListening(nginxAddr, ng, 10*time.Second); err != nil {
		return fmt.Errorf("%w (see %s)", err, filepath.Join(s.dir, "nginx"))
	}
	s.res.nginxAddr, s.res.nginxPID = nginxAddr, ng.pid()
	time.Sleep(100 * time.Millisecond) // the workers
	nginxPIDs := family(ng.pid())

	gp, goAddr, err := s.startGo(vGo)
	if err != nil {
		return err
	}
	gr, goRawAddr, err := s.startGo(vGoRaw)
	if err != nil {
		return err
	}
	sc, sidecarAddr, err := s.startSidecar(vSidecar)
	if err != nil {
		return err
	}

	s.variants = []variant{
		{name: vDirect, addr: agentAddr},
		{name: vNginx, addr: nginxAddr, cpu: func() time.Duration { return cpuTime(nginxPIDs) }},
		{name: vGo, addr: goAddr, cpu: func() time.Duration { return cpuTime([]int{gp.pid()}) }},
		{name: vGoRaw, addr: goRawAddr, cpu: func() time.Duration { return cpuTime([]int{gr.pid()}) }},
		{name: vSidecar, addr: sidecarAddr, contract: true, cpu: func() time.Duration { return cpuTime([]int{sc.pid()}) }},
	}
	if s.baseline != "" {
		bc, baseAddr, err := s.startSidecar(vBaseline)
		if err != nil {
			return err
		}
		s.variants = append(s.variants, variant{name: vBaseline, addr: baseAddr, contract: true,
			cpu: func() time.Duration { return cpuTime([]int{bc.pid()}) }})
	}
	if s.nethttp != "" {
		nc, netAddr, err := s.startSidecar(vNetHTTP)
		if err != nil {
			return err
		}
		s.variants = append(s.variants, variant{name: vNetHTTP, addr: netAddr, contract: true,
			cpu: func() time.Duration { return cpuTime([]int{nc.pid()}) }})
	}
	for _, v := range s.variants {
		if _, err := unaryLoad(v.addr, v.unaryRequest(), 4, 0, 300*time.Millisecond, nil); err != nil {
			return fmt.Errorf("warming %s: %w", v.name, err)
		}
		req := v.streamRequest(streamParams{N: 100, Size: s.plan.eventSize})
		if _, err := streamLoad(v.addr, req, 4, false, 100); err != nil {
			return fmt.Errorf("warming %s streams: %w", v.name, err)
		}
	}
	return nil
}

// startSidecar runs a sidecar (the baseline's binary for vBaseline, the
// nethttp build for vNetHTTP) with
// the benchmark's method map on a free port and waits until its /healthz
// is 200.
func (s *suite) startSidecar(name string) (*proc, string, error) {
	return s.startSidecarWith(name, sidecarConfig(s.res.agentAddr))
}

// startSidecarWith runs a sidecar as startSidecar does, with the config
// text given (written to name.yaml), sub (a subcommand and its flags,
// e.g. dev's) before its --config; none: serve.
func (s *suite) startSidecarWith(name, config string, sub ...string) (*proc, string, error) {
	addr, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cfg := filepath.Join(s.dir, name+".yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return nil, "", err
	}
	p, err := start(name, filepath.Join(s.dir, name+".log"), s.sidecarBin(name), append(sub, "--config", cfg, "--listen", addr)...)
	if err != nil {
		return nil, "", err
	}
	s.track(p)
	if err := waitHTTP(addr, "/healthz", 10*time.Second); err != nil {
		p.stop(syscall.SIGKILL, time.Second)
		return nil, "", fmt.Errorf("%w (see %s)", err, filepath.Join(s.dir, name+".log"))
	}
	return p, addr, nil
}

// goArgs are the Go reference proxy's arguments: -mode raw for the
// go-raw variant (and its -mem and -start runs).
func goArgs(name, addr, agent string) []string {
	args := []string{"-listen", addr, "-upstream", agent}
	if strings.HasPrefix(name, vGoRaw) {
		args = append(args, "-mode", "raw")
	}
	return args
}

// startGo runs the Go net/http reference proxy on a free port; name
// vGoRaw (or a name it begins) runs it with its hand-written client.
func (s *suite) startGo(name string) (*proc, string, error) {
	addr, err := freePort()
	if err != nil {
		return nil, "", err
	}
	p, err := start(name, filepath.Join(s.dir, name+".log"), s.goproxy, goArgs(name, addr, s.res.agentAddr)...)
	if err != nil {
		return nil, "", err
	}
	s.track(p)
	if _, err := waitListening(addr, p, 10*time.Second); err != nil {
		p.stop(syscall.SIGKILL, time.Second)
		return nil, "", err
	}
	return p, addr, nil
}

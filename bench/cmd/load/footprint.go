package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"
)

// idleLevel is how many idle streams a proxy can hold under the file
// limit: two descriptors per stream (caller and agent), plus a margin.
func (s *suite) idleLevel(want int) int {
	return min(want, (s.nofile-64)/2)
}

// memoryRows measures each proxy idle, then with each level of idle open
// streams: a fresh sidecar (and baseline) and a fresh Go proxy every
// time, the running nginx (whose memory does not grow with the load it
// has had).
func (s *suite) memoryRows() error {
	p := s.plan
	s.res.mem = memoryRows{idle: series{}}
	for _, want := range p.memLevels {
		lv := memLevel{want: want, n: s.idleLevel(want), rss: series{}, perStream: series{}, churned: series{}}
		if want == p.memLevels[0] {
			lv.sets = churnSets
		}
		s.res.mem.levels = append(s.res.mem.levels, lv)
	}
	for r := range p.memRounds {
		for li := range s.res.mem.levels {
			lv := &s.res.mem.levels[li]
			for i := range s.proxies {
				name := s.proxies[(i+r+li)%len(s.proxies)]
				if err := s.memory(name, lv); err != nil {
					return fmt.Errorf("%s with %d idle streams: %w", name, lv.n, err)
				}
			}
			logf("memory round %d, %d streams: KB/stream %s", r+1, lv.n, s.lastOf(lv.perStream, 1))
		}
	}
	return nil
}

// churnSets is how many times the first level's streams are opened (and
// all but the last closed again) for the steady-state row: a process that
// has served streams before holds more than a fresh one, as buffers freed
// by closed streams are reused (and so touched) or not yet given back.
const churnSets = 3

// settle lets a process finish what it was doing before its RSS is read.
const settle = 700 * time.Millisecond

func (s *suite) memory(name string, lv *memLevel) error {
	var (
		v   variant
		pid int
		rss = rssKB
	)
	switch name {
	case vNginx:
		v, pid, rss = s.variants[1], s.res.nginxPID, treeRSSKB
	case vGo, vGoRaw, vSidecar, vBaseline, vNetHTTP:
		start := s.startGo
		if isSidecar(name) {
			start = s.startSidecar
		}
		pr, addr, err := start(name + "-mem")
		if err != nil {
			return err
		}
		defer pr.stop(syscall.SIGTERM, 5*time.Second)
		v, pid = variant{name: name, addr: addr, contract: isSidecar(name)}, pr.pid()
		// One call of each kind first: the idle figure is of a process
		// that has served, as one in production has. Half a second, not
		// less: on a loaded machine the first call of a fresh process
		// (it waits for the agent's readiness) can take longer than 50 ms.
		if _, err := unaryLoad(addr, v.unaryRequest(), 1, 0, 500*time.Millisecond, nil); err != nil {
			return err
		}
		if _, err := streamLoad(addr, v.streamRequest(streamParams{N: 10, Size: s.plan.eventSize}), 1, false, 10); err != nil {
			return err
		}
	}
	time.Sleep(settle)
	idle, err := rss(pid)
	if err != nil {
		return err
	}
	s.res.mem.idle.add(name, float64(idle))

	req := v.streamRequest(streamParams{N: 1, Size: 16, Hold: true})
	var conns []*conn
	defer func() { closeAll(conns) }()
	for set := 1; set <= max(1, lv.sets); set++ {
		if set > 1 {
			closeAll(conns)
			time.Sleep(300 * time.Millisecond) // let both ends tear the streams down
		}
		if conns, err = openIdle(v.addr, req, lv.n, s.plan.idleOpenParallel); err != nil {
			return err
		}
		time.Sleep(settle)
		held, err := rss(pid)
		if err != nil {
			return err
		}
		perStream := float64(held-idle) / float64(lv.n)
		if set == 1 {
			lv.rss.add(name, float64(held))
			lv.perStream.add(name, perStream)
		} else if set == lv.sets {
			lv.churned.add(name, perStream)
		}
	}
	closeAll(conns)
	conns = nil
	time.Sleep(300 * time.Millisecond)
	return nil
}

// startupRows starts the sidecar, nginx and the Go proxy again and
// again: from the moment before fork/exec to the first accepted TCP
// connection, and for the sidecar (and the baseline) also to its first
// /healthz 200 (agent ready).
func (s *suite) startupRows() error {
	p := s.plan
	s.res.start = series{}
	s.res.healthy = series{}
	cfg := filepath.Join(s.dir, "sidecar.yaml")
	for i := range p.startups {
		for j := range s.proxies {
			name := s.proxies[(i+j)%len(s.proxies)]
			addr, err := freePort()
			if err != nil {
				return err
			}
			var pr *proc
			t0 := time.Now()
			switch name {
			case vSidecar, vBaseline, vNetHTTP:
				pr, err = start(name+"-start", filepath.Join(s.dir, name+"-start.log"), s.sidecarBin(name), "--config", cfg, "--listen", addr)
			case vGo, vGoRaw:
				pr, err = start(name+"-start", filepath.Join(s.dir, name+"-start.log"), s.goproxy, goArgs(name, addr, s.res.agentAddr)...)
			case vNginx:
				pr, err = startNginx(s.nginx, filepath.Join(s.dir, fmt.Sprintf("nginx-start-%d", i)), addr, s.res.agentAddr, 1024)
			}
			if err != nil {
				return err
			}
			s.track(pr)
			t1, err := waitListening(addr, pr, 5*time.Second)
			if err == nil && isSidecar(name) {
				if err = waitHTTP(addr, "/healthz", 5*time.Second); err == nil {
					s.res.healthy.add(name, float64(time.Since(t0).Microseconds())/1e3)
				}
			}
			pr.stop(syscall.SIGTERM, 5*time.Second)
			if err != nil {
				return err
			}
			s.res.start.add(name, float64(t1.Sub(t0).Microseconds())/1e3)
		}
	}
	if len(s.res.start[vSidecar]) == 0 {
		return errors.New("no startup measured")
	}
	return nil
}

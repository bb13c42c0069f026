package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The variants, in the table's column order.
const (
	vDirect  = "direct"
	vNginx   = "nginx"
	vGo      = "go"
	vGoRaw   = "go-raw"
	vSidecar = "sidecar"
	// vBaseline is the sidecar of another revision (load run -baseline),
	// shown as sidecar@NAME after the sidecar; only in runs that have one.
	vBaseline = "baseline"
)

// proxies are the variants that sit between the client and the agent.
var proxies = []string{vNginx, vGo, vGoRaw, vSidecar}

// isSidecar reports whether the variant (or a process named after it)
// is a sidecar: it speaks the platform contract and has a /healthz.
func isSidecar(name string) bool {
	return strings.HasPrefix(name, vSidecar) || strings.HasPrefix(name, vBaseline)
}

// plan is how much of each row one run measures.
type plan struct {
	rounds              int
	unaryWarm, unaryDur time.Duration
	concs               []int
	tputStreams         int
	tputEvents          int
	eventSize           int
	latStreams          int
	latEvents           int
	latGap              time.Duration
	ttflCount           int
	memLevels           []int
	memRounds           int
	startups            int
	deadline            time.Duration
	idleOpenParallel    int
}

func fullPlan() plan {
	return plan{
		rounds: 7, unaryWarm: 300 * time.Millisecond, unaryDur: 2500 * time.Millisecond, concs: []int{1, 32},
		tputStreams: 8, tputEvents: 50000, eventSize: 100,
		latStreams: 64, latEvents: 1500, latGap: time.Millisecond,
		ttflCount: 200, memLevels: []int{1000, 10000}, memRounds: 3, startups: 20,
		deadline: 11 * time.Minute, idleOpenParallel: 64,
	}
}

func quickPlan() plan {
	p := fullPlan()
	p.rounds = 3
	p.unaryWarm, p.unaryDur = 150*time.Millisecond, 700*time.Millisecond
	p.tputEvents = 20000
	p.latEvents = 300
	p.ttflCount = 50
	p.memRounds = 1
	p.startups = 10
	p.deadline = 2*time.Minute + 30*time.Second
	return p
}

// suite is one benchmark run: the processes it started and what it found.
type suite struct {
	plan    plan
	dir     string
	agent   string
	sidecar string
	goproxy string
	nginx   string
	nofile  int
	// baseline is the binary of the baseline sidecar ("" for none) and
	// baseName its name in the table (sidecar@baseName).
	baseline string
	baseName string
	// columns and proxies are the package's, plus vBaseline when there
	// is a baseline.
	columns []string
	proxies []string

	mu    sync.Mutex
	procs []*proc

	variants []variant
	res      results
}

func (s *suite) track(p *proc) *proc {
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p
}

// setVariants sets the run's columns and proxies: the baseline, when
// there is one, joins both after the sidecar.
func (s *suite) setVariants() {
	s.columns, s.proxies = columns, proxies
	if s.baseline != "" {
		s.columns = append(slices.Clone(columns), vBaseline)
		s.proxies = append(slices.Clone(proxies), vBaseline)
	}
}

// sidecarBin is the binary of a sidecar variant: the baseline's for
// vBaseline (and the process names it begins).
func (s *suite) sidecarBin(name string) string {
	if strings.HasPrefix(name, vBaseline) {
		return s.baseline
	}
	return s.sidecar
}

// stopAll ends every process this run started, by its PID.
func (s *suite) stopAll() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(syscall.SIGTERM, 3*time.Second)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func runSuite(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load run", flag.ContinueOnError)
	agentBin := fs.String("agent", "bench/bin/agent", "the stand-in agent binary")
	sidecarBin := fs.String("sidecar", "bench/bin/sidecar", "the sidecar binary")
	goproxyBin := fs.String("goproxy", "bench/bin/goproxy", "the Go net/http reference proxy binary")
	nginxBin := fs.String("nginx", "/usr/sbin/nginx", "the nginx binary")
	quick := fs.Bool("quick", false, "a short run (under two minutes)")
	out := fs.String("out", "", "also write the report to this file")
	keep := fs.Bool("keep", false, "keep the work directory (configs, logs)")
	only := fs.String("only", "", "run only these rows, comma-separated: unary, throughput, latency, firstline, memory, startup")
	baseline := fs.String("baseline", "", "a sidecar binary of another revision, run as one more variant with the sidecar's config")
	baseName := fs.String("baseline-name", "baseline", "the baseline's name in the table: sidecar@NAME")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p := fullPlan()
	if *quick {
		p = quickPlan()
	}
	if *baseline != "" {
		p.deadline += p.deadline / 5 // six variants, not five
	}
	dir, err := os.MkdirTemp("", "sidecar-bench-")
	if err != nil {
		return err
	}
	os.Chmod(dir, 0o755) // nginx's workers run as nobody
	if !*keep {
		defer os.RemoveAll(dir)
	} else {
		defer logf("work directory kept: %s", dir)
	}
	var rl syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	s := &suite{plan: p, dir: dir, agent: *agentBin, sidecar: *sidecarBin, goproxy: *goproxyBin, nginx: *nginxBin, nofile: int(rl.Cur),
		baseline: *baseline, baseName: *baseName}
	s.setVariants()
	defer s.stopAll()

	// A run that overstays its budget, or a signal, stops every process
	// this run started before the program ends.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
			logf("interrupted: stopping the processes this run started")
		case <-time.After(p.deadline):
			logf("over the time budget of %s: stopping", p.deadline)
		}
		s.stopAll()
		if !*keep {
			os.RemoveAll(dir)
		}
		os.Exit(1)
	}()

	began := time.Now()
	if err := s.setUp(); err != nil {
		return err
	}
	type step struct {
		key, name string
		f         func() error
	}
	steps := []step{
		{"unary", "unary", s.unaryRows},
		{"throughput", "stream throughput", s.throughputRows},
		{"latency", "per-event latency", s.latencyRows},
		{"firstline", "time to first line", s.firstLineRows},
		{"memory", "memory", s.memoryRows},
		{"startup", "startup", s.startupRows},
	}
	wanted := map[string]bool{}
	for k := range strings.SplitSeq(*only, ",") {
		if k = strings.TrimSpace(k); k != "" {
			wanted[k] = true
		}
	}
	for k := range wanted {
		if !slices.ContainsFunc(steps, func(st step) bool { return st.key == k }) {
			return fmt.Errorf("-only: no row %q (want unary, throughput, latency, firstline, memory or startup)", k)
		}
	}
	for _, st := range steps {
		if len(wanted) > 0 && !wanted[st.key] {
			continue
		}
		logf("== %s", st.name)
		if err := st.f(); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	s.stopAll()
	report := s.report(time.Since(began), *quick)
	fmt.Print(report)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
			return err
		}
	}
	return nil
}

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
	s.res.nginxPID = ng.pid()
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

// startSidecar runs a sidecar (the baseline's binary for vBaseline) with
// the benchmark's method map on a free port and waits until its /healthz
// is 200.
func (s *suite) startSidecar(name string) (*proc, string, error) {
	addr, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cfg := filepath.Join(s.dir, "sidecar.yaml")
	if err := os.WriteFile(cfg, []byte(sidecarConfig(s.res.agentAddr)), 0o644); err != nil {
		return nil, "", err
	}
	p, err := start(name, filepath.Join(s.dir, name+".log"), s.sidecarBin(name), "--config", cfg, "--listen", addr)
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

// order is the variants of round r, rotated so that no variant always
// runs first or right after the same one.
func (s *suite) order(r int) []variant {
	n := len(s.variants)
	out := make([]variant, n)
	for i := range n {
		out[i] = s.variants[(i+r)%n]
	}
	return out
}

func (s *suite) unaryRows() error {
	p := s.plan
	for _, c := range p.concs {
		row := unaryRow{conc: c, rps: series{}, p50: series{}, p99: series{}, added: series{}, cpu: series{}}
		for r := range p.rounds {
			p50 := map[string]float64{}
			for _, v := range s.order(r) {
				res, err := unaryLoad(v.addr, v.unaryRequest(), c, p.unaryWarm, p.unaryDur, v.cpu)
				if err != nil {
					return fmt.Errorf("%s c=%d: %w", v.name, c, err)
				}
				if res.errors > 0 {
					return fmt.Errorf("%s c=%d: %d failed calls", v.name, c, res.errors)
				}
				row.rps.add(v.name, res.rps)
				row.p50.add(v.name, res.p50)
				row.p99.add(v.name, res.p99)
				row.cpu.add(v.name, res.cpuPerCall)
				p50[v.name] = res.p50
			}
			for _, v := range s.proxies {
				row.added.add(v, p50[v]-p50[vDirect])
			}
			logf("unary c=%d round %d: req/s %s", c, r+1, s.lastOf(row.rps, 0))
		}
		s.res.unary = append(s.res.unary, row)
	}
	return nil
}

// lastOf is each variant's latest figure in sr, for progress lines.
func (s *suite) lastOf(sr series, dec int) string {
	var b strings.Builder
	for _, v := range s.columns {
		if xs, ok := sr[v]; ok {
			fmt.Fprintf(&b, " %s %.*f", s.label(v), dec, last(xs))
		}
	}
	return strings.TrimSpace(b.String())
}

func last(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return xs[len(xs)-1]
}

func (s *suite) throughputRows() error {
	p := s.plan
	s.res.tput, s.res.tputCPU = series{}, series{}
	for r := range p.rounds {
		for _, v := range s.order(r) {
			req := v.streamRequest(streamParams{N: p.tputEvents, Size: p.eventSize})
			var cpu0 time.Duration
			if v.cpu != nil {
				cpu0 = v.cpu()
			}
			res, err := streamLoad(v.addr, req, p.tputStreams, false, p.tputEvents)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			s.res.tput.add(v.name, float64(res.records)/res.elapsed.Seconds())
			if v.cpu != nil {
				s.res.tputCPU.add(v.name, float64((v.cpu()-cpu0).Microseconds())/float64(res.records))
			}
		}
		logf("records/s round %d: %s", r+1, s.lastOf(s.res.tput, 0))
	}
	return nil
}

func (s *suite) latencyRows() error {
	p := s.plan
	s.res.lat = latencyRow{p50: series{}, p99: series{}, added50: series{}, added99: series{}}
	for r := range p.rounds {
		p50, p99 := map[string]float64{}, map[string]float64{}
		for _, v := range s.order(r) {
			req := v.streamRequest(streamParams{N: p.latEvents, Size: p.eventSize, Gap: p.latGap.String()})
			res, err := streamLoad(v.addr, req, p.latStreams, true, p.latEvents)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			p50[v.name], p99[v.name] = percentile(res.lat, 50), percentile(res.lat, 99)
			s.res.lat.p50.add(v.name, p50[v.name])
			s.res.lat.p99.add(v.name, p99[v.name])
		}
		for _, v := range s.proxies {
			s.res.lat.added50.add(v, p50[v]-p50[vDirect])
			s.res.lat.added99.add(v, p99[v]-p99[vDirect])
		}
		logf("per-event latency round %d: p50 %s; p99 %s (µs)", r+1, s.lastOf(s.res.lat.p50, 0), s.lastOf(s.res.lat.p99, 0))
	}
	return nil
}

func (s *suite) firstLineRows() error {
	p := s.plan
	s.res.ttfl50, s.res.ttfl99 = series{}, series{}
	for r := range p.rounds {
		for _, v := range s.order(r) {
			req := v.streamRequest(streamParams{N: 3, Size: p.eventSize})
			xs, err := firstLine(v.addr, req, p.ttflCount)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			s.res.ttfl50.add(v.name, percentile(xs, 50))
			s.res.ttfl99.add(v.name, percentile(xs, 99))
		}
	}
	return nil
}

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
	case vGo, vGoRaw, vSidecar, vBaseline:
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
			case vSidecar, vBaseline:
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

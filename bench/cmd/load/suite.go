package main

import (
	"context"
	"flag"
	"fmt"
	"os"
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
	// vNetHTTP is the sidecar built with -tags nethttp (load run -nethttp):
	// its agent client is net/http's http.Transport, not the hand-written
	// one; only in runs that have it.
	vNetHTTP = "sidecar-nethttp"
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
	// stateBudget is what the state rows add to deadline: two sidecars
	// of this tree whatever the variants, so it is not scaled with them.
	stateBudget time.Duration
	// authBudget is the same for the auth rows: four sidecars of this
	// tree and the signing of their tokens.
	authBudget time.Duration
	// liveBudget is the same for the live rows (three variants whatever
	// the run's: the sidecar of this tree only).
	liveBudget time.Duration
	// partsBudget is the same for the parts rows: a fresh sidecar of this
	// tree (and of the baseline) per call, image and text, each round.
	partsBudget      time.Duration
	idleOpenParallel int
	// The live rows: liveConns connections × liveWindow frames of
	// liveFrameSize bytes in flight for frames/s (for unaryDur after
	// unaryWarm), livePings frames ping-ponged for latency, liveIdle idle
	// conversations for memory.
	liveConns, liveWindow, liveFrameSize int
	livePings, liveIdle                  int
}

func fullPlan() plan {
	return plan{
		rounds: 7, unaryWarm: 300 * time.Millisecond, unaryDur: 2500 * time.Millisecond, concs: []int{1, 32},
		tputStreams: 8, tputEvents: 50000, eventSize: 100,
		latStreams: 64, latEvents: 1500, latGap: time.Millisecond,
		ttflCount: 200, memLevels: []int{1000, 10000}, memRounds: 3, startups: 20,
		deadline: 11 * time.Minute, stateBudget: 100 * time.Second, authBudget: 2 * time.Minute, idleOpenParallel: 64,
		liveBudget: 150 * time.Second, partsBudget: 150 * time.Second, liveConns: 32, liveWindow: 16, liveFrameSize: 100, livePings: 3000, liveIdle: 1000,
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
	p.stateBudget = 25 * time.Second
	p.authBudget = 45 * time.Second
	p.liveBudget = 40 * time.Second
	p.partsBudget = 75 * time.Second
	p.livePings = 1000
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
	// nethttp is the binary of the nethttp sidecar ("" for none).
	nethttp string
	// columns and proxies are the package's, plus vBaseline and vNetHTTP
	// when the run has them.
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

// setVariants sets the run's columns and proxies: the baseline and the
// nethttp sidecar, when the run has them, join both after the sidecar.
func (s *suite) setVariants() {
	s.columns, s.proxies = slices.Clone(columns), slices.Clone(proxies)
	for _, v := range s.sidecars()[1:] {
		s.columns = append(s.columns, v)
		s.proxies = append(s.proxies, v)
	}
}

// sidecarBin is the binary of a sidecar variant: the baseline's for
// vBaseline, the nethttp build's for vNetHTTP (and the process names
// they begin).
func (s *suite) sidecarBin(name string) string {
	switch {
	case strings.HasPrefix(name, vBaseline):
		return s.baseline
	case strings.HasPrefix(name, vNetHTTP):
		return s.nethttp
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
	only := fs.String("only", "", "run only these rows, comma-separated: unary, throughput, latency, firstline, memory, startup, ways, state, auth, live, parts; floor (the floor ladder) only when named")
	baseline := fs.String("baseline", "", "a sidecar binary of another revision, run as one more variant with the sidecar's config")
	baseName := fs.String("baseline-name", "baseline", "the baseline's name in the table: sidecar@NAME")
	nethttp := fs.String("nethttp", "", "the sidecar built with -tags nethttp (net/http's Transport to the agent), run as one more variant with the sidecar's config")
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
	if *nethttp != "" {
		p.deadline += p.deadline / 5
	}
	p.deadline += p.stateBudget + p.authBudget + p.liveBudget + p.partsBudget
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
		baseline: *baseline, baseName: *baseName, nethttp: *nethttp}
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
		// optIn: only when -only names it (not in a run of every row).
		optIn bool
	}
	steps := []step{
		{"unary", "unary", s.unaryRows, false},
		{"throughput", "stream throughput", s.throughputRows, false},
		{"latency", "per-event latency", s.latencyRows, false},
		{"firstline", "time to first line", s.firstLineRows, false},
		{"memory", "memory", s.memoryRows, false},
		{"startup", "startup", s.startupRows, false},
		{"ways", "a door's stream on its own listener, mounted and through the passthrough", s.waysRows, false},
		{"state", "A2A and MCP calls with the memory store and with Redis", s.stateRows, false},
		{"auth", "a protected call: the caller's token checked", s.authRows, false},
		{"live", "live conversations: frames/s, latency per frame, memory per idle conversation", s.liveRows, false},
		{"parts", "a 5 MiB image through the MCP and A2A doors, against the same bytes as text", s.partsRows, false},
		{"floor", "the floor ladder", s.floorRows, true},
	}
	wanted := map[string]bool{}
	for k := range strings.SplitSeq(*only, ",") {
		if k = strings.TrimSpace(k); k != "" {
			wanted[k] = true
		}
	}
	for k := range wanted {
		if !slices.ContainsFunc(steps, func(st step) bool { return st.key == k }) {
			return fmt.Errorf("-only: no row %q (want unary, throughput, latency, firstline, memory, startup, ways, state, auth, live, parts or floor)", k)
		}
	}
	for _, st := range steps {
		if len(wanted) > 0 && !wanted[st.key] || len(wanted) == 0 && st.optIn {
			continue
		}
		logf("== %s", st.name)
		if err := st.f(); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	s.stopAll()
	report := s.report(time.Since(began), *quick) + s.res.ways + s.res.state + s.res.auth + s.res.live + s.res.parts + s.res.floor
	fmt.Print(report)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
			return err
		}
	}
	return nil
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The live rows (issue 39): a conversation's frames through nginx and
// through the sidecar, against the stand-in agent's WebSocket echo
// (GET /live) called directly, side by side in rotating rounds:
//
//   - frames/s: liveConns connections, each keeping liveWindow text
//     frames in flight and sending the next as an echo comes back;
//   - latency per frame: one connection, ping-pong (a frame, then its
//     echo), its p50 and p99, and the added latency (variant minus direct
//     in the same round);
//   - memory per idle conversation: a fresh nginx and a fresh sidecar,
//     each after one conversation, then with liveIdle conversations open
//     (each has echoed one frame, so it is open end to end): RSS held over
//     idle, per conversation; for the sidecar also Go's heap and stacks
//     and its goroutines, from its admin listener's /metrics.
//
// nginx proxies /ws to the agent's /live (liveNginxLocation). The
// sidecar is one of this tree's with AgentCore's door mounted on the
// platform's listener and its ws option naming a bidi method to /live
// (liveConfig). Only the sidecar of this tree: a baseline's may have no
// conversations.

// liveVariant is one way of reaching the echo: an address and the path
// of its WebSocket there.
type liveVariant struct {
	name, addr, path string
	// cpu is the CPU time the proxy's processes have used so far; nil
	// for the agent called directly.
	cpu func() time.Duration
}

// liveColumns are the live table's variants, in order.
var liveColumns = []string{vDirect, vNginx, vSidecar}

// liveConfig is the method map of the live rows' sidecars: the bench's
// unary method, a bidi method to the agent's /live, AgentCore's door
// mounted at / with ws naming it, room for every conversation the rows
// open, and an admin listener (/metrics) when admin is not "".
func liveConfig(agentAddr, admin string, conversations int) string {
	cfg := fmt.Sprintf(`# written by bench/cmd/load
upstream:
  url: http://%s
limits: {concurrency: 10000, live: {connections: %d}}
methods:
  query:    {call: POST /query}
  converse: {mode: bidi, call: GET /live}
protocols:
  agentcore: {mount: /, method: query, ws: converse}
`, agentAddr, conversations)
	if admin != "" {
		cfg += fmt.Sprintf("admin: {listen: %q}\n", admin)
	}
	return cfg
}

// liveRow is one row of the live table: a figure per round for some of
// liveColumns, and a target the sidecar's median meets or not.
type liveRow struct {
	name   string
	sr     series
	format func(float64) string
	// only are the variants with a figure (nil: every column).
	only []string
	// ratio: show the median of the sidecar's per-round ratios to nginx.
	ratio  bool
	target string
	ok     func(sidecar, nginx float64) bool
}

// liveTable is the Markdown table of rows: each variant's median and its
// lowest and highest round, sidecar / nginx, the target and whether the
// sidecar met it.
func liveTable(rows []liveRow) string {
	var b strings.Builder
	b.WriteString("| row |")
	for _, v := range liveColumns {
		b.WriteString(" " + v + " |")
	}
	b.WriteString(" sidecar / nginx | target | met |\n|---|")
	for range liveColumns {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---|---|\n")
	for _, r := range rows {
		only := r.only
		if only == nil {
			only = liveColumns
		}
		fmt.Fprintf(&b, "| %s |", r.name)
		for _, v := range liveColumns {
			xs := r.sr[v]
			if !slices.Contains(only, v) || len(finite(xs)) == 0 {
				b.WriteString(" " + na + " |")
				continue
			}
			lo, hi := spread(xs)
			if lo == hi {
				fmt.Fprintf(&b, " %s |", r.format(median(xs)))
			} else {
				fmt.Fprintf(&b, " %s (%s–%s) |", r.format(median(xs)), r.format(lo), r.format(hi))
			}
		}
		ratio, met := na, ""
		if r.ratio {
			if x := ratioTo(r.sr[vSidecar], r.sr[vNginx]); !math.IsNaN(x) && !math.IsInf(x, 0) {
				ratio = fmt.Sprintf("%.2f×", x)
			}
		}
		if r.ok != nil {
			met = metIf(r.ok(r.sr.median(vSidecar), r.sr.median(vNginx)))
		}
		fmt.Fprintf(&b, " %s | %s | %s |\n", ratio, r.target, met)
	}
	return b.String()
}

// liveResults is what the live rows measured, one figure per round and
// variant.
type liveResults struct {
	fps, cpu             series // frames echoed per second; proxy CPU µs per frame
	p50, p99             series // µs per frame, ping-pong
	added50, added99     series // the same minus direct's, per round
	perConn              series // KB of RSS per idle conversation
	heap, stack, routine series // the sidecar's, per idle conversation: KB, KB, goroutines
	idle                 int    // idle conversations opened
}

func (s *suite) liveRows() error {
	p := s.plan
	lr := liveResults{fps: series{}, cpu: series{}, p50: series{}, p99: series{}, added50: series{}, added99: series{},
		perConn: series{}, heap: series{}, stack: series{}, routine: series{}, idle: s.idleLevel(p.liveIdle)}

	// Room for a round's conversations while the last round's may still
	// be closing: the rows measure the relay, not the cap.
	sc, scAddr, err := s.startSidecarWith("live", liveConfig(s.res.agentAddr, "", 8*p.liveConns))
	if err != nil {
		return err
	}
	defer sc.stop(syscall.SIGTERM, 5*time.Second)
	nginxCPU := func() time.Duration { return cpuTime(family(s.res.nginxPID)) }
	variants := []liveVariant{
		{name: vDirect, addr: s.res.agentAddr, path: "/live"},
		{name: vNginx, addr: s.res.nginxAddr, path: "/ws", cpu: nginxCPU},
		{name: vSidecar, addr: scAddr, path: "/ws", cpu: func() time.Duration { return cpuTime([]int{sc.pid()}) }},
	}
	for _, v := range variants {
		if _, err := pingPong(v.addr, v.path, 20, p.liveFrameSize); err != nil {
			return fmt.Errorf("warming %s: %w", v.name, err)
		}
	}
	order := func(r int) []liveVariant {
		out := make([]liveVariant, len(variants))
		for i := range variants {
			out[i] = variants[(i+r)%len(variants)]
		}
		return out
	}

	for r := range p.rounds {
		for _, v := range order(r) {
			res, err := frameLoad(v.addr, v.path, p.liveConns, p.liveWindow, p.liveFrameSize, p.unaryWarm, p.unaryDur, v.cpu)
			if err != nil {
				return fmt.Errorf("frames/s %s: %w", v.name, err)
			}
			lr.fps.add(v.name, res.fps)
			if v.cpu != nil {
				lr.cpu.add(v.name, res.cpuPerFrame)
			}
		}
		logf("live frames/s round %d: %s", r+1, lastIn(lr.fps))
	}

	for r := range p.rounds {
		p50, p99 := map[string]float64{}, map[string]float64{}
		for _, v := range order(r) {
			xs, err := pingPong(v.addr, v.path, p.livePings, p.liveFrameSize)
			if err != nil {
				return fmt.Errorf("latency %s: %w", v.name, err)
			}
			p50[v.name], p99[v.name] = percentile(xs, 50), percentile(xs, 99)
			lr.p50.add(v.name, p50[v.name])
			lr.p99.add(v.name, p99[v.name])
		}
		for _, v := range []string{vNginx, vSidecar} {
			lr.added50.add(v, p50[v]-p50[vDirect])
			lr.added99.add(v, p99[v]-p99[vDirect])
		}
		logf("live latency per frame round %d: p50 %s; p99 %s (µs)", r+1, lastIn(lr.p50), lastIn(lr.p99))
	}

	for r := range p.memRounds {
		for i := range 2 {
			name := []string{vNginx, vSidecar}[(i+r)%2]
			if err := s.liveMemory(name, &lr); err != nil {
				return fmt.Errorf("%s with %d idle conversations: %w", name, lr.idle, err)
			}
		}
		logf("live memory round %d, %d conversations: KB each %s", r+1, lr.idle, lastIn(lr.perConn))
	}
	s.res.live = s.liveReport(lr)
	return nil
}

// lastIn is each live column's latest figure, for progress lines.
func lastIn(sr series) string {
	var b strings.Builder
	for _, v := range liveColumns {
		if xs, ok := sr[v]; ok {
			fmt.Fprintf(&b, " %s %.1f", v, last(xs))
		}
	}
	return strings.TrimSpace(b.String())
}

// liveReport is the live rows' section: what ran, then the table.
func (s *suite) liveReport(lr liveResults) string {
	p := s.plan
	n := num(float64(lr.idle), 0)
	if lr.idle < p.liveIdle {
		n += fmt.Sprintf(" (not %s: the file limit is %d, two per conversation)", num(float64(p.liveIdle), 0), s.nofile)
	}
	us := func(x float64) string { return num(x, 0) }
	us1 := func(x float64) string { return num(x, 1) }
	proxies := []string{vNginx, vSidecar}
	rows := []liveRow{
		{name: fmt.Sprintf("frames/s, %d connections × %d frames of %d B in flight, echoed", p.liveConns, p.liveWindow, p.liveFrameSize),
			sr: lr.fps, format: us, ratio: true, target: "≥ nginx", ok: func(sc, ng float64) bool { return sc >= ng }},
		{name: "proxy CPU per frame echoed (µs, both ways)", sr: lr.cpu, format: func(x float64) string { return num(x, 2) }, only: proxies, ratio: true},
		{name: fmt.Sprintf("latency per frame p50, one connection ping-pong × %s (µs)", num(float64(p.livePings), 0)), sr: lr.p50, format: us, ratio: true},
		{name: "latency per frame p99 (µs)", sr: lr.p99, format: us, ratio: true},
		{name: "added latency per frame p50 over direct (µs)", sr: lr.added50, format: us, only: proxies},
		{name: "added latency per frame p99 over direct (µs)", sr: lr.added99, format: us, only: proxies},
		{name: fmt.Sprintf("RSS per idle conversation at %s (KB; nginx: master + workers)", n), sr: lr.perConn, format: us1, only: proxies, ratio: true,
			target: "≤ 48 KB", ok: func(sc, _ float64) bool { return sc <= 48 }},
		{name: "Go heap in use per idle conversation (KB)", sr: lr.heap, format: us1, only: []string{vSidecar}},
		{name: "Go stacks in use per idle conversation (KB)", sr: lr.stack, format: us1, only: []string{vSidecar}},
		{name: "goroutines per idle conversation", sr: lr.routine, format: us1, only: []string{vSidecar}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nLive rows: a WebSocket echo (the agent's GET /live, text frames sent back as they come) reached directly, "+
		"through nginx (/ws → /live: `proxy_http_version 1.1`, `Upgrade $http_upgrade`, `Connection \"upgrade\"`, `proxy_buffering off`) "+
		"and through the sidecar (AgentCore's /ws mounted on the platform's listener, `converse: {mode: bidi, call: GET /live}`); "+
		"the client is the load generator's own WebSocket code. Frames/s: %s after %s of warm-up; latency: one connection, a frame and its echo "+
		"at a time; idle: a fresh nginx and a fresh sidecar after one conversation, then with the conversations open (each has echoed one frame), "+
		"held over idle; the sidecar's Go figures are its /metrics `go_memstats_heap_inuse_bytes`, `go_memstats_stack_inuse_bytes` and `go_goroutines`. "+
		"Median of %d rotating rounds (memory: %d), lowest–highest round in brackets; sidecar / nginx is the median of the per-round ratios.\n\n",
		p.unaryDur, p.unaryWarm, p.rounds, p.memRounds)
	b.WriteString(liveTable(rows))
	return b.String()
}

// liveMemory measures one fresh proxy (name: nginx or the sidecar)
// idle, then with lr.idle idle conversations open through it, and adds
// its figures to lr.
func (s *suite) liveMemory(name string, lr *liveResults) error {
	var (
		pr      *proc
		addr    string
		admin   string
		rss     = rssKB
		err     error
		statsOf = func() (goStats, error) { return goStats{}, nil }
	)
	switch name {
	case vNginx:
		addr, err = freePort()
		if err != nil {
			return err
		}
		pr, err = startNginx(s.nginx, filepath.Join(s.dir, fmt.Sprintf("nginx-live-%d", len(lr.perConn[vNginx]))), addr, s.res.agentAddr, s.nofile)
		if err != nil {
			return err
		}
		s.track(pr)
		if _, err := waitListening(addr, pr, 10*time.Second); err != nil {
			pr.stop(syscall.SIGKILL, time.Second)
			return err
		}
		time.Sleep(100 * time.Millisecond) // the workers
		rss = treeRSSKB
	case vSidecar:
		if admin, err = freePort(); err != nil {
			return err
		}
		pr, addr, err = s.startSidecarWith("live-mem", liveConfig(s.res.agentAddr, admin, lr.idle+16))
		if err != nil {
			return err
		}
		statsOf = func() (goStats, error) { return readGoStats(admin) }
	}
	defer pr.stop(syscall.SIGTERM, 5*time.Second)
	// One conversation first: the idle figure is of a process that has
	// served one, as one in production has.
	if _, err := pingPong(addr, "/ws", 10, s.plan.liveFrameSize); err != nil {
		return err
	}
	time.Sleep(settle)
	idle, err := rss(pr.pid())
	if err != nil {
		return err
	}
	g0, err := statsOf()
	if err != nil {
		return err
	}
	conns, err := openIdleWS(addr, "/ws", lr.idle, s.plan.idleOpenParallel, s.plan.liveFrameSize)
	defer func() { closeAllWS(conns) }()
	if err != nil {
		return err
	}
	time.Sleep(settle)
	held, err := rss(pr.pid())
	if err != nil {
		return err
	}
	g1, err := statsOf()
	if err != nil {
		return err
	}
	n := float64(lr.idle)
	lr.perConn.add(name, float64(held-idle)/n)
	if name == vSidecar {
		lr.heap.add(name, (g1.heap-g0.heap)/1024/n)
		lr.stack.add(name, (g1.stack-g0.stack)/1024/n)
		lr.routine.add(name, (g1.goroutines-g0.goroutines)/n)
	}
	closeAllWS(conns)
	conns = nil
	time.Sleep(300 * time.Millisecond) // let both ends tear the conversations down
	return nil
}

// goStats are a Go process's memory figures from its /metrics.
type goStats struct {
	heap, stack, goroutines float64 // bytes, bytes, count
}

// readGoStats reads the sidecar's admin listener's /metrics.
func readGoStats(admin string) (goStats, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		return goStats{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return goStats{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return goStats{}, fmt.Errorf("GET /metrics: %d", resp.StatusCode)
	}
	return parseGoStats(b)
}

// parseGoStats takes a Go process's figures from a Prometheus text
// exposition: go_memstats_heap_inuse_bytes, go_memstats_stack_inuse_bytes
// and go_goroutines, each a metric without labels.
func parseGoStats(b []byte) (goStats, error) {
	var g goStats
	want := map[string]*float64{
		"go_memstats_heap_inuse_bytes":  &g.heap,
		"go_memstats_stack_inuse_bytes": &g.stack,
		"go_goroutines":                 &g.goroutines,
	}
	found := map[string]bool{}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		name, value, ok := bytes.Cut(line, []byte(" "))
		if !ok {
			continue
		}
		dst := want[string(name)]
		if dst == nil {
			continue
		}
		// A value may be followed by a timestamp.
		value, _, _ = bytes.Cut(bytes.TrimSpace(value), []byte(" "))
		x, err := strconv.ParseFloat(string(value), 64)
		if err != nil {
			return goStats{}, fmt.Errorf("metrics: %s: %w", name, err)
		}
		*dst = x
		found[string(name)] = true
	}
	var missing []string
	for _, name := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines"} {
		if !found[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return goStats{}, fmt.Errorf("metrics: no %s (is the Go collector registered?)", strings.Join(missing, ", "))
	}
	return g, nil
}

// liveFrame is a text frame's payload of size bytes.
func liveFrame(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// frameResult is one frames/s run.
type frameResult struct {
	fps float64
	// cpuPerFrame is the proxy's CPU µs per frame echoed over the
	// measured window; NaN without a cpu function.
	cpuPerFrame float64
}

// frameLoad opens conns WebSockets at addr's path, then has each keep
// window frames of size bytes in flight, sending one more as each echo
// comes back, for warm then dur; the echoes that come back in dur count.
// cpu, if not nil, is read at both ends of the measured window.
func frameLoad(addr, path string, conns, window, size int, warm, dur time.Duration, cpu func() time.Duration) (frameResult, error) {
	cs := make([]*wsConn, conns)
	defer func() { closeAllWS(cs) }()
	var wg sync.WaitGroup
	var errp atomic.Pointer[error]
	for i := range cs {
		wg.Go(func() {
			c, err := wsDial(addr, path)
			if err != nil {
				errp.CompareAndSwap(nil, &err)
				return
			}
			cs[i] = c
		})
	}
	wg.Wait()
	if p := errp.Load(); p != nil {
		return frameResult{}, *p
	}

	payload := liveFrame(size)
	measureFrom := time.Now().Add(warm)
	end := measureFrom.Add(dur)
	var cpu0, cpu1 time.Duration
	var cpuDone sync.WaitGroup
	if cpu != nil {
		cpuDone.Add(2)
		time.AfterFunc(warm, func() { cpu0 = cpu(); cpuDone.Done() })
		time.AfterFunc(warm+dur, func() { cpu1 = cpu(); cpuDone.Done() })
	}
	var echoed atomic.Int64
	for _, c := range cs {
		wg.Go(func() {
			n, err := echoLoop(c, payload, window, measureFrom, end)
			echoed.Add(n)
			if err != nil {
				errp.CompareAndSwap(nil, &err)
			}
		})
	}
	wg.Wait()
	cpuDone.Wait()
	if p := errp.Load(); p != nil {
		return frameResult{}, *p
	}
	r := frameResult{fps: float64(echoed.Load()) / dur.Seconds(), cpuPerFrame: math.NaN()}
	if cpu != nil && echoed.Load() > 0 {
		r.cpuPerFrame = float64((cpu1 - cpu0).Microseconds()) / float64(echoed.Load())
	}
	return r, nil
}

// echoLoop sends window frames on c, then one more for each echo read,
// until end; it returns the echoes read between from and end. Frames to
// send wait in c's buffer while more echoes are already read in: one
// write(2) carries them all.
func echoLoop(c *wsConn, payload []byte, window int, from, end time.Time) (int64, error) {
	c.nc.SetDeadline(end.Add(10 * time.Second))
	for range window {
		if err := c.write(opText, payload); err != nil {
			return 0, err
		}
	}
	if err := c.flush(); err != nil {
		return 0, err
	}
	var n int64
	for {
		_, msg, err := c.read()
		if err != nil {
			return n, err
		}
		if !bytes.Equal(msg, payload) {
			return n, fmt.Errorf("an echo of %d bytes that is not the %d sent", len(msg), len(payload))
		}
		now := time.Now()
		if now.After(end) {
			return n, nil
		}
		if now.After(from) {
			n++
		}
		if err := c.write(opText, payload); err != nil {
			return n, err
		}
		if !c.buffered() {
			if err := c.flush(); err != nil {
				return n, err
			}
		}
	}
}

// pingPong opens one WebSocket at addr's path and sends count frames of
// size bytes one at a time, each after the echo of the one before: the
// round trip of each in µs.
func pingPong(addr, path string, count, size int) ([]float64, error) {
	c, err := wsDial(addr, path)
	if err != nil {
		return nil, err
	}
	defer c.close()
	c.nc.SetDeadline(time.Now().Add(60 * time.Second))
	payload := liveFrame(size)
	out := make([]float64, 0, count)
	for range count {
		t0 := time.Now()
		if err := c.write(opText, payload); err != nil {
			return out, err
		}
		if err := c.flush(); err != nil {
			return out, err
		}
		_, msg, err := c.read()
		if err != nil {
			return out, err
		}
		out = append(out, float64(time.Since(t0).Nanoseconds())/1e3)
		if !bytes.Equal(msg, payload) {
			return out, errors.New("an echo that is not the frame sent")
		}
	}
	return out, nil
}

// openIdleWS opens n WebSockets at addr's path, parallel at a time, each
// echoing one frame of size bytes so that it is open end to end, and
// returns them once all are; the caller closes them.
func openIdleWS(addr, path string, n, parallel, size int) ([]*wsConn, error) {
	conns := make([]*wsConn, n)
	payload := liveFrame(size)
	var next atomic.Int64
	var errp atomic.Pointer[error]
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || errp.Load() != nil {
					return
				}
				c, err := wsDial(addr, path)
				if err == nil {
					conns[i] = c
					c.nc.SetDeadline(time.Now().Add(30 * time.Second))
					if err = c.write(opText, payload); err == nil {
						if err = c.flush(); err == nil {
							_, _, err = c.read()
						}
					}
					c.nc.SetDeadline(time.Time{})
				}
				if err != nil {
					err = fmt.Errorf("idle conversation %d: %w", i, err)
					errp.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := errp.Load(); p != nil {
		closeAllWS(conns)
		return nil, *p
	}
	return conns, nil
}

func closeAllWS(conns []*wsConn) {
	for _, c := range conns {
		if c != nil {
			c.close()
		}
	}
}

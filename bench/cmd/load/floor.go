package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The floor row (-only floor, issue 23): unary c=32 through each rung of
// bench/cmd/goproxy's floor ladder (-mode ladder -rung NAME, ladder.go),
// from go-raw up to the sidecar's own handler, then the sidecar binary as
// the benchmark runs it (no metrics: its config has no admin listener)
// and with metrics on (admin.listen), all in the same rotating rounds.
// Each rung adds one thing the sidecar does per call, so the difference
// between two rungs' CPU per call is what that thing costs.

// floorRung is one rung of the ladder: its -rung name and what it adds.
type floorRung struct{ name, adds string }

// floorRungs are goproxy's ladder rungs (ladder.go's rungs), in order.
var floorRungs = []floorRung{
	{"go-raw", "net/http's server, the hand-written client (the platform's request in, the agent's /query called)"},
	{"log", "+ the call's log line (zap JSON, as cmd/sidecar's logger, to stderr)"},
	{"metrics", "+ the call recorded in package metrics"},
	{"mux", "+ gorilla/mux: the platform door's router"},
	{"envelope", "+ the envelope decoded (platform.Door.Open), the reply read whole and answered {\"output\": …}"},
	{"retryablehttp", "+ the request as an *http.Request through go-retryablehttp and http.Client"},
	{"peek", "+ the liveness peek on a pooled connection"},
	{"readresponse", "+ the reply's head read by net/http's ReadResponse (as upstream's transport does) in place of the hand parser"},
	{"upstream", "the ladder's client replaced by upstream.Client (its request building, clocks, contexts, reply checks)"},
	{"server", "the sidecar's handler, proxy.Server (call context, slot, write bounds, Server-Timing)"},
	{"server-buflog", "off the ladder, a proposal: server with its log lines through zap's BufferedWriteSyncer (256 KiB, flushed every second; lines in the buffer are lost if the process dies)"},
}

// floorFrom is the step a step's Δ is taken from, where that is not the
// step before it.
var floorFrom = map[string]string{
	floorName("server-buflog"): floorName("server"),
	vSidecar:                   floorName("server"),
	floorSidecar:               vSidecar,
	vBaseline:                  vSidecar,
}

// floorSidecar is the sidecar with metrics on, the ladder's last step.
const floorSidecar = "sidecar+metrics"

func floorName(rung string) string { return "floor:" + rung }

// floorRows runs the floor row: it starts the ladder's rungs and a
// sidecar with metrics, measures them beside the sidecar in rotating
// rounds, stops them, and keeps the table in s.res.floor.
func (s *suite) floorRows() error {
	p := s.plan
	var vs []variant
	var started []*proc
	defer func() {
		for _, pr := range started {
			pr.stop(syscall.SIGTERM, 3*time.Second)
		}
	}()
	for _, r := range floorRungs {
		addr, err := freePort()
		if err != nil {
			return err
		}
		name := floorName(r.name)
		pr, err := start(name, filepath.Join(s.dir, strings.ReplaceAll(name, ":", "-")+".log"), s.goproxy,
			"-listen", addr, "-upstream", s.res.agentAddr, "-mode", "ladder", "-rung", r.name)
		if err != nil {
			return err
		}
		s.track(pr)
		started = append(started, pr)
		if _, err := waitListening(addr, pr, 10*time.Second); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		vs = append(vs, variant{name: name, addr: addr, contract: true, cpu: func() time.Duration { return cpuTime([]int{pr.pid()}) }})
	}
	for _, v := range s.variants {
		if v.name == vSidecar {
			vs = append(vs, v)
		}
	}
	var extra []variant // the baseline sidecar (BASELINE=), after the ladder's steps
	for _, v := range s.variants {
		if v.name == vBaseline {
			extra = append(extra, v)
		}
	}
	admin, err := freePort()
	if err != nil {
		return err
	}
	mp, maddr, err := s.startSidecarWith(floorSidecar, sidecarConfig(s.res.agentAddr)+fmt.Sprintf("admin: {listen: %q}\n", admin))
	if err != nil {
		return err
	}
	started = append(started, mp)
	vs = append(vs, variant{name: floorSidecar, addr: maddr, contract: true, cpu: func() time.Duration { return cpuTime([]int{mp.pid()}) }})
	vs = append(vs, extra...)
	for _, v := range vs {
		if _, err := unaryLoad(v.addr, v.unaryRequest(), 4, 0, 300*time.Millisecond, nil); err != nil {
			return fmt.Errorf("warming %s: %w", v.name, err)
		}
	}

	const conc = 32
	cpu, rps := series{}, series{}
	for r := range p.rounds {
		for i := range vs {
			v := vs[(i+r)%len(vs)]
			res, err := unaryLoad(v.addr, v.unaryRequest(), conc, p.unaryWarm, p.unaryDur, v.cpu)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			if res.errors > 0 {
				return fmt.Errorf("%s: %d failed calls", v.name, res.errors)
			}
			cpu.add(v.name, res.cpuPerCall)
			rps.add(v.name, res.rps)
		}
		var b strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&b, " %s %.1f", strings.TrimPrefix(v.name, "floor:"), last(cpu[v.name]))
		}
		logf("floor round %d: CPU µs per call%s", r+1, b.String())
	}
	s.res.floor = floorTable(vs, cpu, rps, p.rounds, s.label(vBaseline))
	return nil
}

// floorTable is the floor row's table: each step's CPU per call (median,
// lowest and highest round), its difference from the step before and its
// ratio to go-raw (medians of the per-round figures: a round's variants
// ran back to back), and requests/s.
func floorTable(vs []variant, cpu, rps series, rounds int, baseLabel string) string {
	adds := map[string]string{vSidecar: "the sidecar binary as the benchmark runs it (no admin listener: no metrics)",
		floorSidecar: "the sidecar binary with metrics on (admin.listen): what the server rung serves, as a process",
		vBaseline:    "the baseline sidecar (BASELINE=), as the benchmark runs it"}
	for _, r := range floorRungs {
		adds[floorName(r.name)] = r.adds
	}
	base := floorName(floorRungs[0].name)
	var b strings.Builder
	fmt.Fprintf(&b, "\nFloor row: unary c=32 through each rung of `bench/cmd/goproxy -mode ladder` and the sidecar, %d rotating rounds. "+
		"CPU per call is the process's user + system time over the measured window divided by the calls; Δ and × go-raw are medians of the per-round figures.\n\n", rounds)
	b.WriteString("| step | adds | CPU per call (µs) | lowest–highest | Δ from the step before (µs) | × go-raw | requests/s |\n|---|---|---:|---:|---:|---:|---:|\n")
	prev := ""
	for _, v := range vs {
		xs := cpu[v.name]
		delta := "—"
		if from, ok := floorFrom[v.name]; ok {
			delta = fmt.Sprintf("%+.1f (from %s)", median(pairwise(xs, cpu[from], func(a, b float64) float64 { return a - b })), strings.TrimPrefix(from, "floor:"))
		} else if prev != "" {
			delta = fmt.Sprintf("%+.1f", median(pairwise(xs, cpu[prev], func(a, b float64) float64 { return a - b })))
		}
		ratio := ratioTo(xs, cpu[base])
		lo, hi := spread(xs)
		label := strings.TrimPrefix(v.name, "floor:")
		if v.name == vBaseline {
			label = baseLabel
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f–%.1f | %s | %.2f× | %s |\n", label, adds[v.name],
			median(xs), lo, hi, delta, ratio, commas(rps.median(v.name)))
		prev = v.name
	}
	return b.String()
}

// pairwise is f of the two series round by round.
func pairwise(xs, ys []float64, f func(a, b float64) float64) []float64 {
	out := make([]float64, 0, len(xs))
	for i := range min(len(xs), len(ys)) {
		out = append(out, f(xs[i], ys[i]))
	}
	return out
}

// ratioTo is the median of xs's per-round ratios to base.
func ratioTo(xs, base []float64) float64 {
	return median(pairwise(xs, base, func(a, b float64) float64 { return a / b }))
}

// cell is xs as a table shows it: its median, then its lowest and
// highest round.
func cell(xs []float64) string {
	lo, hi := spread(xs)
	return fmt.Sprintf("%.0f (%.0f–%.0f)", median(xs), lo, hi)
}

// spread is the lowest and highest finite value of xs.
func spread(xs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range finite(xs) {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// commas writes x rounded, with thousands separators.
func commas(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	s := fmt.Sprintf("%.0f", x)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

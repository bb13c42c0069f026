package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// results is everything one run measured: per variant, one figure per
// round.
type results struct {
	agentAddr string
	nginxAddr string
	nginxPID  int

	unary   []unaryRow
	tput    series
	tputCPU series // proxy CPU µs per record
	lat     latencyRow
	ttfl50  series
	ttfl99  series
	mem     memoryRows
	start   series // ms to the first accepted connection
	healthy series // ms to the first /healthz 200 (sidecar)
	floor   string // the floor row's table (floor.go), "" when not run
	ways    string // the ways rows' table (ways.go), "" when not run
	state   string // the state rows' table (state.go), "" when not run
	auth    string // the auth rows' table (auth.go), "" when not run
	live    string // the live rows' table (live.go), "" when not run
	parts   string // the parts rows' table (parts.go), "" when not run
}

type unaryRow struct {
	conc                      int
	rps, p50, p99, added, cpu series
}

type latencyRow struct {
	p50, p99, added50, added99 series
}

type memoryRows struct {
	idle   series // KiB
	levels []memLevel
}

type memLevel struct {
	want, n   int
	rss       series // KiB
	perStream series // KiB per stream over idle
	// sets > 1: the streams were opened that many times, the earlier sets
	// closed; churned is the per-stream figure of the last set.
	sets    int
	churned series
}

// columns are the variants the table shows, in order (a run with a
// baseline adds vBaseline, one with the nethttp sidecar vNetHTTP:
// suite.columns).
var columns = []string{vDirect, vNginx, vGo, vGoRaw, vSidecar}

// row is one line of the table.
type row struct {
	name  string
	cells map[string]string
	ratio string
	// baseRatio is sidecar / baseline, in runs with a baseline.
	baseRatio string
	// netRatio is sidecar-nethttp / sidecar, in runs with the nethttp
	// sidecar: what net/http's Transport does to the figure.
	netRatio string
	// spread is each sidecar variant's lowest and highest round, "a–b".
	spread map[string]string
	target string
	met    string
}

const na = "—"

// figures makes a row's cells from a series' medians; only the listed
// variants get a figure, the others a dash.
func (s *suite) figures(sr series, format func(float64) string, only ...string) map[string]string {
	cells := map[string]string{}
	for _, v := range s.columns {
		cells[v] = na
	}
	if len(only) == 0 {
		only = s.columns
	}
	for _, v := range only {
		cells[v] = format(sr.median(v))
	}
	return cells
}

// simple is a row of figures with the sidecar/nginx ratio (and the
// sidecar/baseline one) and no target.
func (s *suite) simple(name string, sr series, format func(float64) string, only ...string) row {
	r := row{name: name, cells: s.figures(sr, format, only...), ratio: ratio(sr.median(vSidecar), sr.median(vNginx))}
	if s.baseline != "" {
		r.baseRatio = ratio(sr.median(vSidecar), sr.median(vBaseline))
	}
	if s.nethttp != "" {
		r.netRatio = ratio(sr.median(vNetHTTP), sr.median(vSidecar))
	}
	r.spread = map[string]string{}
	for _, v := range s.sidecars() {
		if xs := finite(sr[v]); len(xs) > 0 {
			r.spread[v] = format(slices.Min(xs)) + "–" + format(slices.Max(xs))
		}
	}
	return r
}

// targeted is a row with a target the sidecar's median meets or not.
func (s *suite) targeted(name string, sr series, format func(float64) string, target string, ok func(sidecar, nginx float64) bool, only ...string) row {
	r := s.simple(name, sr, format, only...)
	r.target = target
	r.met = metIf(ok(sr.median(vSidecar), sr.median(vNginx)))
	return r
}

// report is the run's Markdown report: how it ran, then the table.
func (s *suite) report(took time.Duration, quick bool) string {
	p := s.plan
	var b strings.Builder
	mode := "full"
	if quick {
		mode = "quick (QUICK=1)"
	}
	fmt.Fprintf(&b, "\n## Results (%s run, %s, took %s)\n\n", mode, time.Now().UTC().Format("2006-01-02 15:04 UTC"), took.Round(time.Second))
	fmt.Fprintf(&b, "Machine: %s.  \n", machine())
	versions := sidecarVersion(s.sidecar)
	if s.baseline != "" {
		versions += " (baseline: " + sidecarVersion(s.baseline) + ")"
	}
	fmt.Fprintf(&b, "Versions: %s; %s; %s.  \n", versions, nginxVersion(s.nginx), runtime.Version())
	b.WriteString("Load generator: `bench/cmd/load`, a Go client speaking raw HTTP/1.1 (one keep-alive connection per worker or stream, no net/http client), " +
		"on the same machine as the agent and the proxies. Agent: `bench/cmd/agent` (Go net/http). " +
		"nginx: `worker_processes auto`, `proxy_buffering off`, `proxy_http_version 1.1`, upstream `keepalive 256`, access log on. " +
		"go: `bench/cmd/goproxy`, the least a net/http server and http.Transport can do (one RoundTrip, copy with a flush per read, no logging): the net/http floor. " +
		"go-raw: the same server with a hand-written HTTP/1.1 client on the handler's goroutine (`-mode raw`), as the sidecar's own transport: the floor of a net/http server. " +
		"sidecar: the real binary at its default log level (one log line per call).  \n")
	if s.baseline != "" {
		fmt.Fprintf(&b, "%s: the sidecar built from revision %s (`BASELINE=`) with the sidecar's config, one more variant in the same rounds; "+
			"sidecar / baseline is the sidecar's median over the baseline's: the change's effect, read as sidecar / nginx is.  \n", s.label(vBaseline), s.baseName)
	}
	if s.nethttp != "" {
		b.WriteString("sidecar-nethttp: the same sidecar built with `-tags nethttp` (`VARIANT_NETHTTP=1`): its agent client is net/http's http.Transport instead of the hand-written one, one more variant in the same rounds; " +
			"sidecar-nethttp / sidecar is its median over the sidecar's: what switching would do, read as sidecar / nginx is.  \n")
	}
	fmt.Fprintf(&b, "Each figure is the median of %d rounds (memory: %d); in every round the variants run one after another in a rotating order. "+
		"Latency is the client's clock minus the agent's send stamp: one machine, one clock. Proxy CPU is user + system time from /proc/PID/stat over the measured window "+
		"(nginx: master + workers). Ratios are sidecar / nginx: above 1 is better for requests/s and records/s, below 1 is better for latency, CPU, memory and start time.\n\n",
		p.rounds, p.memRounds)
	rows := s.rows()
	b.WriteString(s.table(rows))
	if s.nethttp != "" {
		b.WriteString("\nThe spread: each sidecar's lowest and highest round (the table's figure is their median).\n\n")
		b.WriteString(s.spreadTable(rows))
	}
	return b.String()
}

// spreadTable is the Markdown table of each sidecar variant's lowest and
// highest round, row by row.
func (s *suite) spreadTable(rows []row) string {
	var b strings.Builder
	head, rule := "| row |", "|---|"
	for _, v := range s.sidecars() {
		head += " " + s.label(v) + " (min–max) |"
		rule += "---:|"
	}
	b.WriteString(head + "\n" + rule + "\n")
	for _, r := range rows {
		if r.empty() || len(r.spread) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s |", r.name)
		for _, v := range s.sidecars() {
			fmt.Fprintf(&b, " %s |", orNA(r.spread[v]))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// rows are the table's rows, from what the run measured.
func (s *suite) rows() []row {
	p, res := s.plan, s.res
	var rows []row
	us := func(x float64) string { return num(x, 0) }
	us1 := func(x float64) string { return num(x, 1) }
	mb := func(kb float64) string { return num(kb/1024, 1) }

	for _, u := range res.unary {
		c := u.conc
		rows = append(rows,
			s.targeted(fmt.Sprintf("unary c=%d: requests/s", c), u.rps, us, "≥ 0.90× nginx",
				func(sc, ng float64) bool { return sc >= 0.9*ng }),
			s.simple(fmt.Sprintf("unary c=%d: latency p50 (µs)", c), u.p50, us),
			s.simple(fmt.Sprintf("unary c=%d: latency p99 (µs)", c), u.p99, us),
			s.targeted(fmt.Sprintf("unary c=%d: added p50 over direct (µs)", c), u.added, us, "≤ nginx's",
				func(sc, ng float64) bool { return sc <= ng }, s.proxies...),
			s.simple(fmt.Sprintf("unary c=%d: proxy CPU per call (µs)", c), u.cpu, us1, s.proxies...),
		)
	}

	rows = append(rows,
		s.targeted(fmt.Sprintf("stream: records/s, %d streams × %s events of %d B, no gap (sidecar: SSE→ndjson; others: SSE as sent)",
			p.tputStreams, num(float64(p.tputEvents), 0), p.eventSize), res.tput, us, "≥ nginx",
			func(sc, ng float64) bool { return sc >= ng }),
		s.simple("stream: proxy CPU per record (µs)", res.tputCPU, func(x float64) string { return num(x, 2) }, s.proxies...),
	)

	l := res.lat
	what := fmt.Sprintf("%d streams × %s events, %s gap", p.latStreams, num(float64(p.latEvents), 0), p.latGap)
	rows = append(rows,
		s.simple("per-event latency p50, arrival − send stamp (µs), "+what, l.p50, us),
		s.simple("per-event latency p99 (µs), "+what, l.p99, us),
		s.targeted("added per-event latency p50 over direct (µs)", l.added50, us, "≤ nginx's",
			func(sc, ng float64) bool { return sc <= ng }, s.proxies...),
		s.targeted("added per-event latency p99 over direct (µs)", l.added99, us, "≤ nginx's",
			func(sc, ng float64) bool { return sc <= ng }, s.proxies...),
		s.simple(fmt.Sprintf("time to first line p50 (µs), %d sequential streams, keep-alive", p.ttflCount), res.ttfl50, us),
		s.simple("time to first line p99 (µs)", res.ttfl99, us),
	)

	m := res.mem
	rows = append(rows, s.targeted("RSS idle (MB; nginx: master + workers)", m.idle, mb, "≤ 20 MB",
		func(sc, _ float64) bool { return sc <= 20*1024 }, s.proxies...))
	for _, lv := range m.levels {
		n := num(float64(lv.n), 0)
		if lv.n < lv.want {
			n += fmt.Sprintf(" (not %s: the file limit is %d, two per stream)", num(float64(lv.want), 0), s.nofile)
		}
		rows = append(rows,
			s.simple(fmt.Sprintf("RSS with %s open idle streams (MB)", n), lv.rss, mb, s.proxies...),
			s.targeted(fmt.Sprintf("RSS per idle open stream at %s (KB)", num(float64(lv.n), 0)), lv.perStream, us1, "≤ 48 KB",
				func(sc, _ float64) bool { return sc <= 48 }, s.proxies...),
		)
		if lv.sets > 1 {
			rows = append(rows, s.targeted(fmt.Sprintf("RSS per idle open stream at %s, set %d of %d opened in turn (KB): steady state", num(float64(lv.n), 0), lv.sets, lv.sets),
				lv.churned, us1, "≤ 48 KB", func(sc, _ float64) bool { return sc <= 48 }, s.proxies...))
		}
	}
	rows = append(rows,
		s.targeted(fmt.Sprintf("start → accepting TCP (ms, median of %d)", p.startups), res.start, us1, "≤ 50 ms",
			func(sc, _ float64) bool { return sc <= 50 }, s.proxies...),
		s.simple(fmt.Sprintf("start → /healthz 200, agent up (ms, median of %d)", p.startups), res.healthy, us1, s.sidecars()...),
	)

	return rows
}

// table is the Markdown table of rows: a column per variant, the
// sidecar/nginx ratio, the sidecar/baseline one in runs with a baseline,
// the target and whether the sidecar met it.
func (s *suite) table(rows []row) string {
	var b strings.Builder
	head, rule := "| row |", "|---|"
	for _, v := range s.columns {
		head += " " + s.label(v) + " |"
		rule += "---:|"
	}
	head += " sidecar / nginx |"
	rule += "---:|"
	if s.baseline != "" {
		head += " sidecar / baseline |"
		rule += "---:|"
	}
	if s.nethttp != "" {
		head += " sidecar-nethttp / sidecar |"
		rule += "---:|"
	}
	b.WriteString(head + " target | met |\n" + rule + "---|---|\n")
	for _, r := range rows {
		if r.empty() {
			continue // a row -only left out
		}
		fmt.Fprintf(&b, "| %s |", r.name)
		for _, v := range s.columns {
			fmt.Fprintf(&b, " %s |", r.cells[v])
		}
		fmt.Fprintf(&b, " %s |", orNA(r.ratio))
		if s.baseline != "" {
			fmt.Fprintf(&b, " %s |", orNA(r.baseRatio))
		}
		if s.nethttp != "" {
			fmt.Fprintf(&b, " %s |", orNA(r.netRatio))
		}
		fmt.Fprintf(&b, " %s | %s |\n", r.target, r.met)
	}
	return b.String()
}

// label is a variant's column heading: sidecar@NAME for the baseline.
func (s *suite) label(v string) string {
	if v == vBaseline {
		return "sidecar@" + s.baseName
	}
	return v
}

// sidecars are the sidecar variants of the run: the sidecar, then the
// baseline and the nethttp sidecar when the run has them.
func (s *suite) sidecars() []string {
	v := []string{vSidecar}
	if s.baseline != "" {
		v = append(v, vBaseline)
	}
	if s.nethttp != "" {
		v = append(v, vNetHTTP)
	}
	return v
}

// empty reports whether no variant has a figure in r.
func (r row) empty() bool {
	for _, c := range r.cells {
		if c != na && c != "n/a" {
			return false
		}
	}
	return true
}

func orNA(s string) string {
	if s == "" {
		return na
	}
	return s
}

func metIf(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// ratio is a/b to two places; n/a when b is not positive.
func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// num formats x with dec decimals and thousands separators.
func num(x float64, dec int) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	s := fmt.Sprintf("%.*f", dec, x)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "−" + out
	}
	return out
}

func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	kernel := "unknown kernel"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(b))
	}
	memTotal := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb float64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
				memTotal = fmt.Sprintf(", %.0f GB RAM", kb/1024/1024)
			}
		}
	}
	return fmt.Sprintf("nproc %d, %s, %s%s", runtime.NumCPU(), model, kernel, memTotal)
}

func sidecarVersion(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "sidecar (version unknown)"
	}
	return strings.TrimSpace(string(out))
}

func nginxVersion(bin string) string {
	out, _ := exec.Command(bin, "-v").CombinedOutput()
	v := strings.TrimSpace(string(bytes.TrimPrefix(out, []byte("nginx version: "))))
	if v == "" {
		return "nginx (version unknown)"
	}
	return v + " (Debian nginx-light)"
}

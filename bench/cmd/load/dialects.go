package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The dialect rows (issue 23): what the mapping stage costs per record of
// a long answer's token stream, per dialect and emit mode. They come from
// package dialect's BenchmarkDialect (a test binary, built by run.sh), run
// round by round, alternating with the baseline's binary when there is one
// (the same benchmark file built against the baseline's package), so that
// before and after share the machine's state. Each figure is the median
// over the rounds.
//
//	load dialects -test bin/dialect.test [-base bin/dialect-base.test -base-name REV] [-rounds 5] [-benchtime 200x] [-out file]

// dialectFigures are one benchmark's figures in one round.
type dialectFigures struct {
	recordsPerSec, cpuNs, allocs, bytes float64
}

// dialectRuns are the figures of every round: by variant ("now" or
// "base"), then by benchmark name (dialect/emit).
type dialectRuns map[string]map[string][]dialectFigures

func runDialects(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load dialects", flag.ContinueOnError)
	test := fs.String("test", "", "package dialect's test binary (go test -c ./dialect)")
	base := fs.String("base", "", "the baseline's dialect test binary, built with this tree's bench_test.go")
	baseName := fs.String("base-name", "base", "the baseline's name (its revision)")
	rounds := fs.Int("rounds", 5, "rounds")
	benchtime := fs.String("benchtime", "200x", "-test.benchtime: streams of 1,000 tokens per benchmark and round")
	out := fs.String("out", "", "also write the table to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *test == "" {
		return fmt.Errorf("load dialects: -test is required")
	}
	runs := dialectRuns{}
	for r := range *rounds {
		bins := [][2]string{{"now", *test}, {"base", *base}}
		if r%2 == 1 {
			bins[0], bins[1] = bins[1], bins[0] // rotate who goes first
		}
		for _, b := range bins {
			if b[1] == "" {
				continue
			}
			fmt.Fprintf(os.Stderr, "bench: dialects round %d/%d: %s\n", r+1, *rounds, b[0])
			text, err := benchDialect(ctx, b[1], *benchtime)
			if err != nil {
				return err
			}
			parseDialectBench(runs, b[0], text)
		}
	}
	table := dialectTable(runs, *baseName)
	fmt.Print(table)
	if *out != "" {
		return os.WriteFile(*out, []byte(table), 0o644)
	}
	return nil
}

// benchDialect runs BenchmarkDialect of a test binary, in a fresh
// process, and returns its output.
func benchDialect(ctx context.Context, bin, benchtime string) ([]byte, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, abs, "-test.run", "^$", "-test.bench", "^BenchmarkDialect$", "-test.benchtime", benchtime)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	text, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %s%s", bin, err, text, stderr.Bytes())
	}
	return text, nil
}

// parseDialectBench adds the figures of one run's output to runs under
// variant.
func parseDialectBench(runs dialectRuns, variant string, text []byte) {
	if runs[variant] == nil {
		runs[variant] = map[string][]dialectFigures{}
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || !strings.HasPrefix(f[0], "BenchmarkDialect/") {
			continue
		}
		name := strings.TrimPrefix(f[0], "BenchmarkDialect/")
		if i := strings.LastIndexByte(name, '-'); i > strings.LastIndexByte(name, '/') {
			name = name[:i] // the GOMAXPROCS suffix
		}
		var fig dialectFigures
		for i := 2; i+1 < len(f); i += 2 {
			x, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "records/s":
				fig.recordsPerSec = x
			case "cpu-ns/record":
				fig.cpuNs = x
			case "allocs/record":
				fig.allocs = x
			case "B/record":
				fig.bytes = x
			}
		}
		runs[variant][name] = append(runs[variant][name], fig)
	}
}

// dialectMedians are a benchmark's figures, each the median of its rounds.
func dialectMedians(figs []dialectFigures) dialectFigures {
	pick := func(f func(dialectFigures) float64) float64 {
		var xs []float64
		for _, x := range figs {
			xs = append(xs, f(x))
		}
		return median(xs)
	}
	return dialectFigures{
		recordsPerSec: pick(func(f dialectFigures) float64 { return f.recordsPerSec }),
		cpuNs:         pick(func(f dialectFigures) float64 { return f.cpuNs }),
		allocs:        pick(func(f dialectFigures) float64 { return f.allocs }),
		bytes:         pick(func(f dialectFigures) float64 { return f.bytes }),
	}
}

// dialectTable is the Markdown table of the dialect rows: per dialect and
// emit mode, records/s, CPU and allocations per record, now and (with a
// baseline) then, each emit mode's records/s against emit raw's (the
// deframer alone: by wall time, and by CPU time, which the machine's
// other load does not stretch), and the targets. The floor rows
// are the least any mapping stage can cost (BenchmarkDialect's floor).
func dialectTable(runs dialectRuns, baseName string) string {
	now, base := runs["now"], runs["base"]
	var dialects []string
	seen := map[string]bool{}
	for _, name := range sortedKeys(now) {
		d, _, _ := strings.Cut(name, "/")
		if !seen[d] {
			seen[d] = true
			dialects = append(dialects, d)
		}
	}
	var b strings.Builder
	b.WriteString("| dialect | emit | records/s | CPU per record (ns) | allocs per record | B per record |")
	if base != nil {
		fmt.Fprintf(&b, " records/s @%[1]s | CPU per record @%[1]s (ns) | allocs per record @%[1]s |", baseName)
	}
	b.WriteString(" / raw: records/s (wall) | / raw: records per CPU second |")
	if base != nil {
		fmt.Fprintf(&b, " / raw per CPU second @%s |", baseName)
	}
	b.WriteString(" target | met |\n|---|---|---:|---:|---:|---:|")
	if base != nil {
		b.WriteString("---:|---:|---:|")
	}
	b.WriteString("---:|---:|")
	if base != nil {
		b.WriteString("---:|")
	}
	b.WriteString("---|---|\n")
	for _, d := range dialects {
		raw := dialectMedians(now[d+"/raw"])
		baseRaw := dialectMedians(base[d+"/raw"])
		for _, emit := range []string{"raw", "text", "adk", "floor"} {
			figs, ok := now[d+"/"+emit]
			if !ok {
				continue
			}
			m := dialectMedians(figs)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |", d, emit, num(m.recordsPerSec, 0), num(m.cpuNs, 0), num(m.allocs, 2), num(m.bytes, 0))
			var bm dialectFigures
			if base != nil {
				bm = dialectMedians(base[d+"/"+emit])
				fmt.Fprintf(&b, " %s | %s | %s |", num(bm.recordsPerSec, 0), num(bm.cpuNs, 0), num(bm.allocs, 2))
			}
			target, met := "", ""
			switch emit {
			case "floor": // the least a mapping stage can cost: no target
				fmt.Fprintf(&b, " %s | %s |", ratio(m.recordsPerSec, raw.recordsPerSec), ratio(raw.cpuNs, m.cpuNs))
				if base != nil {
					fmt.Fprintf(&b, " %s |", ratio(baseRaw.cpuNs, bm.cpuNs))
				}
			case "raw":
				fmt.Fprintf(&b, " — | — |")
				if base != nil {
					b.WriteString(" — |")
				}
			default:
				fmt.Fprintf(&b, " %s | %s |", ratio(m.recordsPerSec, raw.recordsPerSec), ratio(raw.cpuNs, m.cpuNs))
				if base != nil {
					fmt.Fprintf(&b, " %s |", ratio(baseRaw.cpuNs, bm.cpuNs))
				}
				allocs := map[string]float64{"text": 3, "adk": 8}[emit]
				target = fmt.Sprintf("≤ %g allocs", allocs)
				ok := m.allocs <= allocs
				if emit == "text" {
					target += ", ≥ 0.50× raw"
					ok = ok && raw.cpuNs/m.cpuNs >= 0.5
				}
				met = metIf(ok && !math.IsNaN(m.allocs))
			}
			fmt.Fprintf(&b, " %s | %s |\n", target, met)
		}
	}
	return b.String()
}

// sortedKeys are the benchmark names by dialect, then raw, text, adk.
func sortedKeys(m map[string][]dialectFigures) []string {
	order := map[string]int{"raw": 0, "text": 1, "adk": 2, "floor": 3}
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		da, ea, _ := strings.Cut(a, "/")
		db, eb, _ := strings.Cut(b, "/")
		if c := strings.Compare(da, db); c != 0 {
			return c
		}
		return order[ea] - order[eb]
	})
	return keys
}

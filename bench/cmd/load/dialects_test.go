package main

import (
	"strings"
	"testing"
)

// The dialect rows read BenchmarkDialect's output, take the median of the
// rounds, and set each emit mode against emit raw, now and then.
func TestDialectTable(t *testing.T) {
	out := func(rawCPU, textCPU, textAllocs string) []byte {
		return []byte("goos: linux\n" +
			"BenchmarkDialect/vercel-ui/raw-2  200  1000 ns/op  5.1 B/record  0.007 allocs/record  150 cpu-ns/record  1.0 lines/record  160 ns/record  6000000 records/s\n" +
			"BenchmarkDialect/vercel-ui/raw-2  200  1000 ns/op  5.1 B/record  0.007 allocs/record  " + rawCPU + " cpu-ns/record  1.0 lines/record  160 ns/record  6000000 records/s\n" +
			"BenchmarkDialect/vercel-ui/text-2  200  1000 ns/op  33 B/record  " + textAllocs + " allocs/record  " + textCPU + " cpu-ns/record  1.0 lines/record  400 ns/record  2500000 records/s\n" +
			"PASS\n")
	}
	runs := dialectRuns{}
	parseDialectBench(runs, "now", out("150", "300", "1.9"))
	parseDialectBench(runs, "now", out("150", "300", "1.9"))
	parseDialectBench(runs, "base", out("150", "1500", "15"))
	got := dialectTable(runs, "eab40f3")
	for _, want := range []string{
		"| dialect | emit | records/s | CPU per record (ns) | allocs per record | B per record | records/s @eab40f3 |",
		"| vercel-ui | raw | 6,000,000 | 150 | 0.01 | 5 | 6,000,000 | 150 | 0.01 | — | — | — |  |  |",
		"| vercel-ui | text | 2,500,000 | 300 | 1.90 | 33 | 2,500,000 | 1,500 | 15.00 | 0.42× | 0.50× | 0.10× | ≤ 3 allocs, ≥ 0.50× raw | met |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table:\n%s\nwant a line with\n%s", got, want)
		}
	}
	runs = dialectRuns{}
	parseDialectBench(runs, "now", out("150", "301", "3.5"))
	if got := dialectTable(runs, ""); !strings.Contains(got, "| vercel-ui | text | 2,500,000 | 301 | 3.50 | 33 | 0.42× | 0.50× | ≤ 3 allocs, ≥ 0.50× raw | **missed** |") {
		t.Errorf("table without a baseline, targets missed:\n%s", got)
	}
}

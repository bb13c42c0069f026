package main

import (
	"strings"
	"testing"
)

// unaryResults is a run's results with one unary row, each variant's
// requests/s given, the other figures left out.
func unaryResults(rps map[string]float64) results {
	u := unaryRow{conc: 1, rps: series{}, p50: series{}, p99: series{}, added: series{}, cpu: series{}}
	for v, x := range rps {
		u.rps.add(v, x)
	}
	return results{unary: []unaryRow{u}}
}

// The table of a run without a baseline is as it always was: five
// variants, the sidecar/nginx ratio, the target.
func TestTableWithoutBaseline(t *testing.T) {
	s := &suite{plan: quickPlan()}
	s.setVariants()
	s.res = unaryResults(map[string]float64{vDirect: 300, vNginx: 200, vGo: 150, vGoRaw: 160, vSidecar: 190})
	want := "| row | direct | nginx | go | go-raw | sidecar | sidecar / nginx | target | met |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---|---|\n" +
		"| unary c=1: requests/s | 300 | 200 | 150 | 160 | 190 | 0.95× | ≥ 0.90× nginx | met |\n"
	if got := s.table(s.rows()); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// With a baseline, the table has its column, sidecar@NAME, after the
// sidecar's, and a sidecar/baseline ratio after the sidecar/nginx one.
func TestTableWithBaseline(t *testing.T) {
	s := &suite{plan: quickPlan(), baseline: "bench/bin/sidecar-base", baseName: "c2c3222"}
	s.setVariants()
	s.res = unaryResults(map[string]float64{vDirect: 300, vNginx: 200, vGo: 150, vGoRaw: 160, vSidecar: 190, vBaseline: 100})
	s.res.healthy = series{vSidecar: {10}, vBaseline: {40}}
	want := "| row | direct | nginx | go | go-raw | sidecar | sidecar@c2c3222 | sidecar / nginx | sidecar / baseline | target | met |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n" +
		"| unary c=1: requests/s | 300 | 200 | 150 | 160 | 190 | 100 | 0.95× | 1.90× | ≥ 0.90× nginx | met |\n"
	got := s.table(s.rows())
	if !strings.HasPrefix(got, want) {
		t.Errorf("table:\n%s\nwant it to begin:\n%s", got, want)
	}
	// A row of the sidecars alone has both, and no nginx to divide by.
	healthz := "| start → /healthz 200, agent up (ms, median of 10) | — | — | — | — | 10.0 | 40.0 | n/a | 0.25× |  |  |\n"
	if !strings.HasSuffix(got, healthz) {
		t.Errorf("table:\n%s\nwant it to end:\n%s", got, healthz)
	}
}

// With the nethttp sidecar, the table has its column, sidecar-nethttp,
// and a sidecar-nethttp/sidecar ratio; the report adds each sidecar's
// spread across rounds.
func TestTableWithNetHTTP(t *testing.T) {
	s := &suite{plan: quickPlan(), nethttp: "bench/bin/sidecar-nethttp"}
	s.setVariants()
	s.res = unaryResults(map[string]float64{vDirect: 300, vNginx: 200, vGo: 150, vGoRaw: 160, vSidecar: 190, vNetHTTP: 171})
	s.res.unary[0].rps.add(vSidecar, 210)
	s.res.unary[0].rps.add(vSidecar, 170)
	want := "| row | direct | nginx | go | go-raw | sidecar | sidecar-nethttp | sidecar / nginx | sidecar-nethttp / sidecar | target | met |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n" +
		"| unary c=1: requests/s | 300 | 200 | 150 | 160 | 190 | 171 | 0.95× | 0.90× | ≥ 0.90× nginx | met |\n"
	rows := s.rows()
	if got := s.table(rows); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	spread := "| row | sidecar (min–max) | sidecar-nethttp (min–max) |\n|---|---:|---:|\n| unary c=1: requests/s | 170–210 | 171–171 |\n"
	if got := s.spreadTable(rows); got != spread {
		t.Errorf("spread:\n%s\nwant:\n%s", got, spread)
	}
}

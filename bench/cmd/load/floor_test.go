package main

import (
	"strings"
	"testing"
)

// TestFloorTable checks the floor row's arithmetic: each step's median,
// spread, Δ as the median of the per-round differences from the step
// before (or the step floorFrom names), and × go-raw as the median of the
// per-round ratios.
func TestFloorTable(t *testing.T) {
	vs := []variant{{name: floorName("go-raw")}, {name: floorName("log")}, {name: floorName("server")}, {name: floorName("server-buflog")}, {name: vSidecar}}
	cpu := series{
		floorName("go-raw"):        {20, 22, 30},
		floorName("log"):           {24, 25, 31},
		floorName("server"):        {40, 44, 50},
		floorName("server-buflog"): {38, 43, 45},
		vSidecar:                   {41, 47, 52},
	}
	rps := series{floorName("go-raw"): {1000, 2000, 1500}}
	got := floorTable(vs, cpu, rps, 3, "sidecar@x")
	for _, want := range []string{
		"| go-raw | " + floorRungs[0].adds + " | 22.0 | 20.0–30.0 | — | 1.00× | 1,500 |",
		// log − go-raw per round: 4, 3, 1; log / go-raw: 1.2, 1.136, 1.033
		"| log | " + floorRungs[1].adds + " | 25.0 | 24.0–31.0 | +3.0 | 1.14× | — |",
		// server − log: 16, 19, 19
		"| server | ", " | 44.0 | 40.0–50.0 | +19.0 | 2.00× |",
		// server-buflog − server: -2, -1, -5
		"| server-buflog | ", " | -2.0 (from server) |",
		// sidecar − server: 1, 3, 2
		"| sidecar | ", " | +2.0 (from server) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

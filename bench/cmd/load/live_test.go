package main

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// TestLiveTable: each variant's median and spread, a dash where a
// variant has no figure, sidecar / nginx as the median of the per-round
// ratios, and the target met or missed by the sidecar's median.
func TestLiveTable(t *testing.T) {
	us := func(x float64) string { return num(x, 0) }
	rows := []liveRow{
		{name: "frames/s", sr: series{vDirect: {300, 310, 290}, vNginx: {200, 100, 150}, vSidecar: {100, 90, 60}},
			format: us, ratio: true, target: "≥ nginx", ok: func(sc, ng float64) bool { return sc >= ng }},
		{name: "added", sr: series{vNginx: {9, 10}, vSidecar: {20, 30}}, format: us, only: []string{vNginx, vSidecar}},
		{name: "RSS per idle conversation", sr: series{vNginx: {18}, vSidecar: {40}}, format: func(x float64) string { return num(x, 1) },
			only: []string{vNginx, vSidecar}, ratio: true, target: "≤ 48 KB", ok: func(sc, _ float64) bool { return sc <= 48 }},
		{name: "heap", sr: series{vSidecar: {math.NaN()}}, format: us, only: []string{vSidecar}},
	}
	want := "| row | direct | nginx | sidecar | sidecar / nginx | target | met |\n" +
		"|---|---:|---:|---:|---:|---|---|\n" +
		// per-round ratios 0.5, 0.9, 0.4: their median 0.5, not 90 / 150
		"| frames/s | 300 (290–310) | 150 (100–200) | 90 (60–100) | 0.50× | ≥ nginx | **missed** |\n" +
		"| added | — | 10 (9–10) | 25 (20–30) | — |  |  |\n" +
		"| RSS per idle conversation | — | 18.0 | 40.0 | 2.22× | ≤ 48 KB | met |\n" +
		"| heap | — | — | — | — |  |  |\n"
	if got := liveTable(rows); got != want {
		t.Errorf("liveTable:\n%s\nwant:\n%s", got, want)
	}
}

// TestParseGoStats takes the three figures from a Prometheus text
// exposition as client_golang writes it, and names what is missing.
func TestParseGoStats(t *testing.T) {
	in := `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 5012
# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 4.4687360e+07
go_memstats_heap_inuse_bytes_total{x="y"} 1
go_memstats_stack_inuse_bytes 3.2702464e+07 1700000000000
sidecar_live_connections 1000
`
	g, err := parseGoStats([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := (goStats{heap: 44687360, stack: 32702464, goroutines: 5012}); g != want {
		t.Errorf("parseGoStats = %+v, want %+v", g, want)
	}
	_, err = parseGoStats([]byte("go_goroutines 5\n"))
	if err == nil || !strings.Contains(err.Error(), "go_memstats_heap_inuse_bytes, go_memstats_stack_inuse_bytes") {
		t.Errorf("parseGoStats without the memstats = %v, want them named", err)
	}
	_, err = parseGoStats([]byte("go_goroutines x\ngo_memstats_heap_inuse_bytes 1\ngo_memstats_stack_inuse_bytes 1\n"))
	if err == nil || !strings.Contains(err.Error(), "go_goroutines") {
		t.Errorf("parseGoStats with a bad value = %v, want it named", err)
	}
}

// TestPingPong: one round trip measured per frame, every echo checked.
func TestPingPong(t *testing.T) {
	xs, err := pingPong(echoServer(t, nil), "/live", 50, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(xs) != 50 {
		t.Errorf("pingPong(50) = %d round trips, want 50", len(xs))
	}
	for _, x := range xs {
		if !(x > 0) {
			t.Fatalf("pingPong: a round trip of %v µs", x)
		}
	}
}

// TestPingPongWrongEcho: an echo that is not the frame sent fails the
// row, not counted as one.
func TestPingPongWrongEcho(t *testing.T) {
	addr := echoServer(t, func(ctx context.Context, c *websocket.Conn, msg []byte) error {
		msg[0] ^= 1
		return nil
	})
	if _, err := pingPong(addr, "/live", 5, 10); err == nil {
		t.Error("pingPong with a wrong echo = nil, want an error")
	}
	if _, err := frameLoad(addr, "/live", 2, 4, 10, 0, time.Second, nil); err == nil || !strings.Contains(err.Error(), "not the 10 sent") {
		t.Errorf("frameLoad with a wrong echo = %v, want an error", err)
	}
}

// TestFrameLoad: every connection keeps its window in flight, and the
// proxy's CPU is read at both ends of the window.
func TestFrameLoad(t *testing.T) {
	addr := echoServer(t, nil)
	cpuReads := atomic.Int64{}
	res, err := frameLoad(addr, "/live", 4, 8, 100, 0, 500*time.Millisecond, func() time.Duration {
		cpuReads.Add(1)
		return time.Duration(cpuReads.Load()) * time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	if !(res.fps > 0) {
		t.Errorf("frameLoad = %v frames/s, want some", res.fps)
	}
	if cpuReads.Load() != 2 || !(res.cpuPerFrame > 0) {
		t.Errorf("frameLoad read the CPU %d times, %v µs a frame; want twice, a figure", cpuReads.Load(), res.cpuPerFrame)
	}
	if _, err := frameLoad(addr, "/nowhere", 2, 4, 10, 0, time.Second, nil); !errors.Is(err, errStatus) {
		t.Errorf("frameLoad to a 404 = %v, want its status", err)
	}
}

// TestOpenIdleWS: every conversation is open end to end (its frame
// echoed) when openIdleWS returns, and a refusal fails it with every
// connection closed.
func TestOpenIdleWS(t *testing.T) {
	var echoed atomic.Int64
	addr := echoServer(t, func(context.Context, *websocket.Conn, []byte) error {
		echoed.Add(1)
		return nil
	})
	conns, err := openIdleWS(addr, "/live", 20, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAllWS(conns)
	if len(conns) != 20 || echoed.Load() != 20 {
		t.Errorf("openIdleWS(20) = %d conversations, %d echoed; want 20 and 20", len(conns), echoed.Load())
	}
	if _, err := openIdleWS(addr, "/nowhere", 5, 2, 16); !errors.Is(err, errStatus) {
		t.Errorf("openIdleWS to a 404 = %v, want its status", err)
	}
}

// TestLiveConfig: the live sidecar's map is one the sidecar takes, as it
// parses it: converse a bidi method to the agent's /live, AgentCore's door
// conversing with it, the cap on conversations, and the admin listener
// only when asked for.
func TestLiveConfig(t *testing.T) {
	for _, admin := range []string{"", "127.0.0.1:10"} {
		cfg, err := config.Parse("live.yaml", []byte(liveConfig("127.0.0.1:9", admin, 48)), doors.Kinds(doors.All)...)
		if err != nil {
			t.Fatalf("liveConfig(admin %q): %v", admin, err)
		}
		if cfg.Bidi("converse") == nil {
			t.Errorf("liveConfig(admin %q): converse is not a bidi method", admin)
		}
		if cfg.Limits.Live.Connections != 48 {
			t.Errorf("liveConfig(admin %q): limits.live.connections = %d, want 48", admin, cfg.Limits.Live.Connections)
		}
		if cfg.Admin.Listen != admin {
			t.Errorf("liveConfig(admin %q): admin.listen = %q", admin, cfg.Admin.Listen)
		}
	}
}

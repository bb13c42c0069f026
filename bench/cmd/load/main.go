// Command load is the side-by-side benchmark of the sidecar (issue 6):
// it starts the stand-in agent, nginx as a plain reverse proxy to it, and
// the sidecar in front of it, runs every row with the variants interleaved
// round by round (direct, nginx, sidecar, in a rotating order), and prints
// one Markdown table of medians with ratios. -baseline adds a sidecar
// binary of another revision as one more variant, sidecar@NAME, with a
// sidecar / baseline ratio: before and after in one run.
//
//	load run -agent bin/agent -sidecar bin/sidecar [-quick] [-baseline bin/sidecar-base -baseline-name REV]
//
// Two more subcommands put steady load on one address, for profiling:
//
//	load unary  -addr 127.0.0.1:8080 -contract -c 32 -d 20s
//	load stream -addr 127.0.0.1:8080 -contract -streams 8 -n 20000 -d 20s
//
//	load idle   -addr 127.0.0.1:8080 -contract -n 1000 -d 20s
//
// and two put it on a WebSocket (the live rows' echo, live.go):
//
//	load frames -addr 127.0.0.1:8080 -path /ws -c 32 -window 16 -d 20s
//	load wsidle -addr 127.0.0.1:8080 -path /ws -n 1000 -d 20s
//
// "load dialects" runs package dialect's benchmark (see dialects.go), and
// "load ports N" prints N free loopback addresses.
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/sidecar-dev/sidecar/bench/internal/cli"
)

func main() { cli.Main("load", run) }

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: load run|unary|stream|firstline|idle|frames|wsidle|dialects|ports [flags]")
	}
	switch args[0] {
	case "run":
		return runSuite(ctx, args[1:])
	case "unary":
		return runUnary(args[1:])
	case "stream":
		return runStream(args[1:])
	case "firstline":
		return runFirstLine(args[1:])
	case "idle":
		return runIdle(args[1:])
	case "frames":
		return runFrames(args[1:])
	case "wsidle":
		return runWSIdle(args[1:])
	case "dialects":
		return runDialects(ctx, args[1:])
	case "ports":
		// Free loopback addresses, for scripts: "load ports 3".
		n := 1
		if len(args) > 1 {
			fmt.Sscan(args[1], &n)
		}
		for range n {
			addr, err := freePort()
			if err != nil {
				return err
			}
			fmt.Println(addr)
		}
		return nil
	}
	return fmt.Errorf("unknown subcommand %q (want run, unary, stream, firstline, idle, frames, wsidle, dialects or ports)", args[0])
}

// runUnary puts closed-loop unary load on one address and prints what it
// got.
func runUnary(args []string) error {
	fs := flag.NewFlagSet("load unary", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to load")
	contract := fs.Bool("contract", false, "speak the platform contract (the sidecar); else call the agent's /query")
	conc := fs.Int("c", 32, "concurrent connections")
	dur := fs.Duration("d", 10*time.Second, "duration")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v := variant{name: "target", addr: *addr, contract: *contract}
	r, err := unaryLoad(v.addr, v.unaryRequest(), *conc, 200*time.Millisecond, *dur, nil)
	if err != nil {
		return err
	}
	fmt.Printf("unary c=%d: %.0f req/s, p50 %.0f µs, p99 %.0f µs, %d errors\n", *conc, r.rps, r.p50, r.p99, r.errors)
	return nil
}

// runStream reads full-speed streams, streams at a time, for a duration.
func runStream(args []string) error {
	fs := flag.NewFlagSet("load stream", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to load")
	contract := fs.Bool("contract", false, "speak the platform contract (the sidecar); else call the agent's /stream")
	streams := fs.Int("streams", 8, "concurrent streams")
	n := fs.Int("n", 20000, "events per stream")
	size := fs.Int("size", 100, "padding bytes per event")
	gap := fs.String("gap", "", "gap between events (Go duration)")
	format := fs.String("format", "sse", "agent reply format: sse, ndjson or text")
	dur := fs.Duration("d", 10*time.Second, "duration")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v := variant{name: "target", addr: *addr, contract: *contract}
	req := v.streamRequest(streamParams{N: *n, Size: *size, Gap: *gap, Format: *format})
	end := time.Now().Add(*dur)
	var records int64
	var elapsed time.Duration
	var lat []float64
	for time.Now().Before(end) {
		r, err := streamLoad(v.addr, req, *streams, true, *n)
		if err != nil {
			return err
		}
		records += r.records
		elapsed += r.elapsed
		lat = append(lat, r.lat...)
	}
	fmt.Printf("stream x%d: %.0f records/s, latency p50 %.0f µs, p99 %.0f µs\n",
		*streams, float64(records)/elapsed.Seconds(), percentile(lat, 50), percentile(lat, 99))
	return nil
}

// runFirstLine times sequential stream calls on one keep-alive
// connection, from writing the request to reading the first record.
func runFirstLine(args []string) error {
	fs := flag.NewFlagSet("load firstline", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to call")
	contract := fs.Bool("contract", false, "speak the platform contract (the sidecar); else call the agent's /stream")
	n := fs.Int("n", 500, "stream calls")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v := variant{name: "target", addr: *addr, contract: *contract}
	xs, err := firstLine(v.addr, v.streamRequest(streamParams{N: 3, Size: 100}), *n)
	if err != nil {
		return err
	}
	fmt.Printf("first line x%d: p50 %.0f µs, p99 %.0f µs\n", len(xs), percentile(xs, 50), percentile(xs, 99))
	return nil
}

// runIdle opens n idle streams (one record each, then held open), says
// "open" on stdout, holds them for a duration and closes them.
func runIdle(args []string) error {
	fs := flag.NewFlagSet("load idle", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to open streams on")
	contract := fs.Bool("contract", false, "speak the platform contract (the sidecar); else call the agent's /stream")
	n := fs.Int("n", 1000, "idle streams")
	dur := fs.Duration("d", 10*time.Second, "how long to hold them")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v := variant{name: "target", addr: *addr, contract: *contract}
	conns, err := openIdle(v.addr, v.streamRequest(streamParams{N: 1, Size: 16, Hold: true}), *n, 64)
	if err != nil {
		return err
	}
	fmt.Printf("open %d\n", len(conns))
	time.Sleep(*dur)
	closeAll(conns)
	return nil
}

// runFrames echoes frames on WebSockets, a window of them in flight on
// each, for a duration, and prints the frames/s it got.
func runFrames(args []string) error {
	fs := flag.NewFlagSet("load frames", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to load")
	path := fs.String("path", "/ws", "the WebSocket's path (the agent's own: /live)")
	conns := fs.Int("c", 32, "connections")
	window := fs.Int("window", 16, "frames in flight on each connection")
	size := fs.Int("size", 100, "bytes per text frame")
	dur := fs.Duration("d", 10*time.Second, "duration")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *conns < 1 || *window < 1 || *size < 0 || *size > wsMaxMessage {
		return fmt.Errorf("frames: -c and -window must be at least 1, and -size 0 to %d", wsMaxMessage)
	}
	r, err := frameLoad(*addr, *path, *conns, *window, *size, 200*time.Millisecond, *dur, nil)
	if err != nil {
		return err
	}
	fmt.Printf("frames c=%d window=%d: %.0f frames/s\n", *conns, *window, r.fps)
	return nil
}

// runWSIdle opens n idle WebSockets (one frame echoed on each), says
// "open" on stdout, holds them for a duration and closes them.
func runWSIdle(args []string) error {
	fs := flag.NewFlagSet("load wsidle", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "address to open WebSockets on")
	path := fs.String("path", "/ws", "the WebSocket's path (the agent's own: /live)")
	n := fs.Int("n", 1000, "idle WebSockets")
	dur := fs.Duration("d", 10*time.Second, "how long to hold them")
	if err := fs.Parse(args); err != nil {
		return err
	}
	conns, err := openIdleWS(*addr, *path, *n, 64, 100)
	if err != nil {
		return err
	}
	fmt.Printf("open %d\n", len(conns))
	time.Sleep(*dur)
	closeAllWS(conns)
	return nil
}

package main

import (
	"fmt"
	"strings"
	"syscall"
	"time"
)

// The ways rows (issue 28): a door's stream reached three ways, the time
// to its first agent record side by side in rotating rounds: on its own
// listener, mounted on the platform's listener, and through sidecar dev's
// emulation of the platform's passthrough
// (/reasoningEngines/v1/…/api/{path}) to that mount. The contract has no
// listener of its own: its rows are the sidecar without mounted doors,
// the one with doors mounted beside it, and the passthrough.

// way is one way of reaching the doors: a sidecar and the path prefix
// every door's route gets on it.
type way struct{ name, adds string }

var ways = []way{
	{"own", "each door on a listener of its own (the contract on the platform's, no door mounted)"},
	{"mounted", "every door mounted on the platform's listener (a2a at /a2a, openai at /)"},
	{"passthrough", "the mounted sidecar under sidecar dev, called through the dev listener's /reasoningEngines/v1/projects/p/locations/l/reasoningEngines/1/api/…"},
}

// wayDoor is one door's stream as the ways rows call it.
type wayDoor struct {
	name string
	// route is its streaming route on its own listener, mounted its
	// route once mounted (under the passthrough too).
	route, mounted string
	body           string
}

var wayDoors = []wayDoor{
	{"agent_platform", "/api/stream_reasoning_engine", "/api/stream_reasoning_engine", `{"class_method":"stream_query","input":{"n":3}}`},
	{"a2a", "/", "/a2a", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`},
	{"openai", "/v1/chat/completions", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
}

// passthroughPrefix is what the passthrough puts before a path.
const passthroughPrefix = "/reasoningEngines/v1/projects/p/locations/l/reasoningEngines/1/api"

// waysConfig is the bench sidecar's map with the A2A and OpenAI doors,
// each on its own listener (a2a, openai: their addresses) or mounted (a2a
// and openai "").
func waysConfig(agentAddr, a2a, openai string) string {
	if a2a == "" {
		return sidecarConfig(agentAddr) + "protocols:\n  a2a: {mount: /a2a, method: stream_query}\n  openai: {mount: /, method: stream_query, model: m}\n"
	}
	return sidecarConfig(agentAddr) + fmt.Sprintf("protocols:\n  a2a: {listen: %q, method: stream_query}\n  openai: {listen: %q, method: stream_query, model: m}\n", a2a, openai)
}

// waysRows starts a sidecar per way, measures each door's time to its
// first agent record every way in rotating rounds, stops them, and keeps
// the table in s.res.ways.
func (s *suite) waysRows() error {
	p := s.plan
	var started []*proc
	defer func() {
		for _, pr := range started {
			pr.stop(syscall.SIGTERM, 3*time.Second)
		}
	}()
	// addrs[way][door] is where the door's stream is served that way,
	// prefixes[way][door] what its route is under.
	addrs := map[string]map[string]string{}
	routes := map[string]map[string]string{}

	a2aAddr, _ := freePort()
	openaiAddr, _ := freePort()
	own, ownAddr, err := s.startSidecarWith("ways-own", waysConfig(s.res.agentAddr, a2aAddr, openaiAddr))
	if err != nil {
		return err
	}
	started = append(started, own)
	if err := waitHTTP(a2aAddr, "/healthz", 10*time.Second); err != nil {
		return err
	}
	if err := waitHTTP(openaiAddr, "/healthz", 10*time.Second); err != nil {
		return err
	}
	addrs["own"] = map[string]string{"agent_platform": ownAddr, "a2a": a2aAddr, "openai": openaiAddr}
	routes["own"] = map[string]string{}
	for _, d := range wayDoors {
		routes["own"][d.name] = d.route
	}

	mounted, mountedAddr, err := s.startSidecarWith("ways-mounted", waysConfig(s.res.agentAddr, "", ""))
	if err != nil {
		return err
	}
	started = append(started, mounted)
	addrs["mounted"], routes["mounted"] = map[string]string{}, map[string]string{}
	for _, d := range wayDoors {
		addrs["mounted"][d.name], routes["mounted"][d.name] = mountedAddr, d.mounted
	}

	devAddr, _ := freePort()
	dev, _, err := s.startSidecarWith("ways-passthrough", waysConfig(s.res.agentAddr, "", ""), "dev", "--dev-listen", devAddr)
	if err != nil {
		return err
	}
	started = append(started, dev)
	if err := waitHTTP(devAddr, passthroughPrefix+"/healthz", 10*time.Second); err != nil {
		return err
	}
	addrs["passthrough"], routes["passthrough"] = map[string]string{}, map[string]string{}
	for _, d := range wayDoors {
		addrs["passthrough"][d.name], routes["passthrough"][d.name] = devAddr, passthroughPrefix+d.mounted
	}

	// The first record of the agent's is the line that carries its
	// sequence number: a door may write lines of its own before it (A2A's
	// task, OpenAI's role delta).
	const marker = "seq"
	ttfl := series{}
	key := func(door, w string) string { return door + "/" + w }
	for _, w := range ways {
		for _, d := range wayDoors {
			addr := addrs[w.name][d.name]
			if _, err := firstMatch(addr, request(addr, routes[w.name][d.name], []byte(d.body)), 4, marker); err != nil {
				return fmt.Errorf("warming %s %s: %w", d.name, w.name, err)
			}
		}
	}
	for r := range p.rounds {
		for i := range ways {
			w := ways[(i+r)%len(ways)]
			for _, d := range wayDoors {
				addr := addrs[w.name][d.name]
				xs, err := firstMatch(addr, request(addr, routes[w.name][d.name], []byte(d.body)), p.ttflCount, marker)
				if err != nil {
					return fmt.Errorf("%s %s: %w", d.name, w.name, err)
				}
				ttfl.add(key(d.name, w.name), percentile(xs, 50))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nWays rows: each door's stream reached three ways, time to the agent's first record (p50 of %d sequential streams on one keep-alive connection, µs; "+
		"median of %d rotating rounds, lowest–highest round), and the ratio to its own listener (median of the per-round ratios).\n\n", p.ttflCount, p.rounds)
	for _, w := range ways {
		fmt.Fprintf(&b, "- %s: %s\n", w.name, w.adds)
	}
	b.WriteString("\n| door | own | mounted | passthrough | mounted / own | passthrough / own |\n|---|---:|---:|---:|---:|---:|\n")
	for _, d := range wayDoors {
		fmt.Fprintf(&b, "| %s |", d.name)
		for _, w := range ways {
			xs := ttfl[key(d.name, w.name)]
			lo, hi := spread(xs)
			fmt.Fprintf(&b, " %.0f (%.0f–%.0f) |", median(xs), lo, hi)
		}
		base := ttfl[key(d.name, "own")]
		for _, w := range ways[1:] {
			fmt.Fprintf(&b, " %.2f× |", median(pairwise(ttfl[key(d.name, w.name)], base, func(a, b float64) float64 { return a / b })))
		}
		b.WriteString("\n")
	}
	s.res.ways = b.String()
	return nil
}

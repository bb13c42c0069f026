package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// The state rows (issue 30): what keeping A2A tasks and MCP sessions in
// Redis (state.store: redis) costs a call, against the memory store,
// side by side in rotating rounds: two sidecars of this tree, one per
// store, with the A2A and MCP doors mounted, and a redis-server of the
// run's own on a free loopback port. Without redis-server the rows say so
// and are skipped.

// stateConc is the rows' concurrency: many callers at once, as a store
// shared by replicas sees them.
const stateConc = 32

// stores are the state rows' columns.
var stores = []string{"memory", "redis"}

// stateCall is one call the state rows measure.
type stateCall struct {
	name string
	// request is the call on addr; session is the MCP session's id.
	request func(addr, session string) []byte
	// ok reports whether a reply is the call's success.
	ok func(body []byte) bool
}

// mcpVersion is the MCP revision of the rows' session: 2025-11-25, whose
// sessions the store keeps (2026-07-28 is stateless).
const mcpVersion = "2025-11-25"

var stateCalls = []stateCall{
	{
		name: "A2A message/send",
		request: func(addr, _ string) []byte {
			return request(addr, "/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"hello"}]}}}`))
		},
		ok: func(b []byte) bool {
			return bytes.Contains(b, []byte(`"completed"`)) && !bytes.Contains(b, []byte(`"error"`))
		},
	},
	{
		name: "MCP tools/call (" + mcpVersion + " session)",
		request: func(addr, session string) []byte {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query","arguments":{"message":"hello"}}}`
			return []byte(fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
				"MCP-Protocol-Version: %s\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s", addr, mcpVersion, session, len(body), body))
		},
		ok: func(b []byte) bool {
			return bytes.Contains(b, []byte(`"result"`)) && !bytes.Contains(b, []byte(`"isError":true`))
		},
	},
}

// stateConfig is the bench sidecar's map with the A2A door at /a2a and
// the MCP door at /mcp, its state in the store named (redis: the server
// at redisAddr).
func stateConfig(agentAddr, store, redisAddr string) string {
	cfg := sidecarConfig(agentAddr) + "protocols:\n  a2a: {mount: /a2a, method: query}\n  mcp: {mount: /mcp, methods: [query]}\n"
	if store == "redis" {
		cfg += fmt.Sprintf("state: {store: redis, redis: {url: \"redis://%s/0\", key_prefix: bench}}\n", redisAddr)
	}
	return cfg
}

// stateTarget is one store's sidecar as the rows call it.
type stateTarget struct {
	addr, session string
	cpu           func() time.Duration
}

// stateRows starts redis-server and a sidecar per store, measures each
// call with each store in rotating rounds, stops them, and keeps the
// table in s.res.state.
func (s *suite) stateRows() error {
	p := s.plan
	var started []*proc
	defer func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].stop(syscall.SIGTERM, 3*time.Second)
		}
	}()
	rp, redisAddr, err := s.startRedis()
	if errors.Is(err, errNoRedis) {
		logf("state rows skipped: %v", err)
		s.res.state = fmt.Sprintf("\nState rows: skipped, %v.\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	started = append(started, rp)
	redisCPU := func() time.Duration { return cpuTime([]int{rp.pid()}) }

	targets := map[string]*stateTarget{}
	for _, st := range stores {
		pr, addr, err := s.startSidecarWith("state-"+st, stateConfig(s.res.agentAddr, st, redisAddr))
		if err != nil {
			return err
		}
		started = append(started, pr)
		session, err := mcpInitialize(addr)
		if err != nil {
			return fmt.Errorf("%s store: %w", st, err)
		}
		targets[st] = &stateTarget{addr: addr, session: session, cpu: func() time.Duration { return cpuTime([]int{pr.pid()}) }}
		for _, c := range stateCalls {
			if err := checkCall(addr, c.request(addr, session), c.ok); err != nil {
				return fmt.Errorf("%s with the %s store: %w", c.name, st, err)
			}
		}
	}

	rps, p50, cpu, redisPerCall := series{}, series{}, series{}, series{}
	key := func(call, store string) string { return call + "/" + store }
	for r := range p.rounds {
		for i := range stores {
			st := stores[(i+r)%len(stores)]
			t := targets[st]
			for _, c := range stateCalls {
				var r0 time.Duration
				if st == "redis" {
					r0 = redisCPU()
				}
				res, err := unaryLoad(t.addr, c.request(t.addr, t.session), stateConc, p.unaryWarm, p.unaryDur, t.cpu)
				if err != nil {
					return fmt.Errorf("%s with the %s store: %w", c.name, st, err)
				}
				if res.errors > 0 {
					return fmt.Errorf("%s with the %s store: %d failed calls", c.name, st, res.errors)
				}
				k := key(c.name, st)
				rps.add(k, res.rps)
				p50.add(k, res.p50)
				cpu.add(k, res.cpuPerCall)
				if st == "redis" {
					// Over the whole load, warm-up included: the calls
					// it served are about rps × (warm + dur).
					calls := res.rps * (p.unaryWarm + p.unaryDur).Seconds()
					redisPerCall.add(c.name, float64((redisCPU()-r0).Microseconds())/calls)
				}
			}
		}
		var b strings.Builder
		for _, c := range stateCalls {
			fmt.Fprintf(&b, " %s: memory %.0f redis %.0f;", c.name, last(rps[key(c.name, "memory")]), last(rps[key(c.name, "redis")]))
		}
		logf("state round %d: calls/s%s", r+1, strings.TrimSuffix(b.String(), ";"))
	}

	ratio := func(sr series, call string) float64 { return ratioTo(sr[key(call, "redis")], sr[key(call, "memory")]) }
	var b strings.Builder
	fmt.Fprintf(&b, "\nState rows: a call whose state is kept in the memory store and in Redis (state.store: redis, a redis-server on loopback), "+
		"%d closed-loop callers for %s after %s of warm-up, median of %d rotating rounds (lowest–highest round); ratios are medians of the per-round ratios. "+
		"MCP calls share one %s session. CPU is the sidecar's per call (µs); redis-server's is its CPU over the load per call.\n\n",
		stateConc, p.unaryDur, p.unaryWarm, p.rounds, mcpVersion)
	b.WriteString("| call | calls/s memory | calls/s redis | redis / memory | p50 µs memory | p50 µs redis | redis / memory | CPU µs memory | CPU µs redis | redis / memory | redis-server CPU µs |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range stateCalls {
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f× | %s | %s | %.2f× | %s | %s | %.2f× | %.1f |\n", c.name,
			cell(rps[key(c.name, "memory")]), cell(rps[key(c.name, "redis")]), ratio(rps, c.name),
			cell(p50[key(c.name, "memory")]), cell(p50[key(c.name, "redis")]), ratio(p50, c.name),
			cell(cpu[key(c.name, "memory")]), cell(cpu[key(c.name, "redis")]), ratio(cpu, c.name),
			median(redisPerCall[c.name]))
	}
	s.res.state = b.String()
	return nil
}

// mcpInitialize opens an MCP session of mcpVersion on the sidecar at
// addr and returns its id.
func mcpInitialize(addr string) (string, error) {
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + mcpVersion + `","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("initializing an MCP session: %w", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		return "", fmt.Errorf("initializing an MCP session: %d %s, no Mcp-Session-Id", resp.StatusCode, b)
	}
	// The client says it is ready, as the SDKs do.
	note, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	note.Header = req.Header.Clone()
	note.Header.Set("Mcp-Session-Id", id)
	note.Header.Set("MCP-Protocol-Version", mcpVersion)
	resp, err = c.Do(note)
	if err != nil {
		return "", fmt.Errorf("notifying initialized: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("notifying initialized: %d, want 202", resp.StatusCode)
	}
	return id, nil
}

// checkCall sends req once and wants a 200 whose body ok accepts: the
// rows measure successes only.
func checkCall(addr string, req []byte, ok func([]byte) bool) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(resp.body, 1<<20))
	if err != nil {
		return err
	}
	if resp.status != 200 || !ok(b) {
		return fmt.Errorf("answered %d %s", resp.status, b)
	}
	var v any
	if json.Unmarshal(bytes.TrimSpace(b), &v) != nil && !bytes.HasPrefix(b, []byte("event:")) && !bytes.HasPrefix(b, []byte("data:")) {
		return fmt.Errorf("answered %d, not JSON nor SSE: %s", resp.status, b)
	}
	return nil
}

package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/idptest"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// hostileBinaryDoors mounts the protected doors on the platform's one
// port, each calling the table agent's query.
const hostileBinaryDoors = `protocols:
  a2a: {mount: /a2a, method: query}
  mcp: {mount: /mcp, methods: [query]}
  openai: {mount: /, method: query}
`

// hostileAuthBinary: the protected rows through the real binary, as a
// hostile client sees it: `sidecar serve` with A2A (both bindings), MCP
// and OpenAI mounted on its one port and protected, in front of the
// table's agent, the provider's key set named by auth.jwks_url. Its
// JWKS endpoint hangs, then is down, then back (providerTrouble, on MCP:
// the key set is the process's, shared by the doors), then every door gets every hostile token (hostileTokenRows),
// the binary's JSON log lines read as the rows read the in-process ones.
func hostileAuthBinary(t *testing.T) {
	p := idptest.Start(t)
	agent := newHostileAgent(t)
	// The key set named: the provider's JWKS endpoint itself goes down
	// and hangs (the in-process rows have it discovered).
	yaml := "upstream: {url: \"" + agent.url + "\"}\n" + hostileMethods + hostileBinaryDoors +
		`auth: {issuer: "` + p.URL + `", jwks_url: "` + p.URL + `/jwks", audience: "` + hostileAudience + `", doors: [a2a, mcp, openai]}` + "\n"
	cfg, err := config.Parse("sidecar.yaml", []byte(yaml), doors.Kinds(doors.All)...)
	if err != nil {
		t.Fatal(err)
	}
	r := startServeBinary(t, yaml)
	logs := binaryLogs(r.log)
	served := func(protocol string) hostileServed {
		door := cfg.Protocols.Door(protocol)
		root := r.base
		if door.Mount != "/" {
			root += door.Mount
		}
		return hostileServed{listener: r.base, root: root, url: doorNamed(protocol).URL(r.base, door)}
	}
	mcp := doorNamed("mcp")
	t.Run("provider down or hanging", func(t *testing.T) { providerTrouble(t, mcp, served("mcp"), logs, p, p.JWKSHits.Load, agent) })
	rest := doorNamed("a2a")
	rest.Probe = a2aREST
	for _, d := range []struct {
		name string
		door doors.Door
	}{{"a2a", doorNamed("a2a")}, {"a2a HTTP+JSON", rest}, {"mcp", mcp}, {"openai", doorNamed("openai")}} {
		t.Run("hostile tokens, "+d.name, func(t *testing.T) { hostileTokenRows(t, d.door, served(d.door.Name), logs, p, agent) })
	}
}

// binaryLogs is the log of a sidecar binary, its JSON lines on stderr;
// each line is parsed once (a row may wait on a log of thousands).
func binaryLogs(l *listenLog) hostileLogs {
	var mu sync.Mutex
	var read int // the bytes of the log parsed
	var lines []map[string]any
	return hostileLogs{
		calls: func() []map[string]any {
			mu.Lock()
			defer mu.Unlock()
			text := l.String()
			end := strings.LastIndexByte(text, '\n') + 1
			for _, line := range strings.Split(text[min(read, end):end], "\n") {
				var e map[string]any
				if !strings.Contains(line, `"message":"call"`) || json.Unmarshal([]byte(line), &e) != nil || e["message"] != "call" {
					continue
				}
				if status, ok := e["status"].(float64); ok {
					e["status"] = int64(status) // as zap's observer has it
				}
				lines = append(lines, e)
			}
			read = max(read, end)
			return lines[:len(lines):len(lines)]
		},
		text: l.String,
	}
}

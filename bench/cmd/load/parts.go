package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The parts rows (issue 41, ONLY=parts): a 5 MiB PNG an agent answers as
// one inline part, in one SSE event, through the MCP door and the A2A
// door of a sidecar of this tree, against the same base64 answered as a
// text record. Each call is measured in a fresh sidecar, so that its peak
// resident memory (VmHWM) is the calls': the peak over the sidecar's idle
// RSS, and the time per call.

const (
	// partImage is the image's size (bench/cmd/agent's partSize), and
	// partBase64 the size of its base64.
	partImage  = 5 << 20
	partBase64 = (partImage + 2) / 3 * 4
	// partRepeat is the calls per fresh sidecar: the first one and the
	// ones timed after it.
	partRepeat = 4
	// partRounds is the most rounds the rows run: each call starts a
	// sidecar.
	partRounds = 5
)

// partCall is one call the parts rows measure.
type partCall struct {
	name string
	// request is the call on addr asking for the image (text false) or
	// the same base64 as text; session is the MCP session's id.
	request func(addr, session string, text bool) []byte
}

// partMessage is what the caller says: the bench agent answers the
// image's base64 as text when the message says "as text".
func partMessage(text bool) string {
	if text {
		return "the image as text"
	}
	return "the image"
}

var partCalls = []partCall{
	{
		name: "MCP tools/call (" + mcpVersion + " session)",
		request: func(addr, session string, text bool) []byte {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"part","arguments":{"message":"` + partMessage(text) + `"}}}`
			return []byte(fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
				"MCP-Protocol-Version: %s\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s", addr, mcpVersion, session, len(body), body))
		},
	},
	{
		name: "A2A message/send",
		request: func(addr, _ string, text bool) []byte {
			return request(addr, "/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"`+partMessage(text)+`"}]}}}`))
		},
	},
	{
		name: "A2A message/stream",
		request: func(addr, _ string, text bool) []byte {
			return request(addr, "/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"`+partMessage(text)+`"}]}}}`))
		},
	},
}

// partsConfig is the bench sidecar's map with one more method, part (the
// agent's /part, streamed), the A2A door at /a2a and the MCP door at
// /mcp.
func partsConfig(agentAddr string) string {
	return sidecarConfig(agentAddr) + "  part:         {mode: stream, call: POST /part}\n" +
		"protocols:\n  a2a: {mount: /a2a, method: part}\n  mcp: {mount: /mcp, methods: [part]}\n"
}

// partOK reports whether body is the call's answer whole: the image as
// an image (its media type, no error) or the base64 as text, and as many
// bytes as the base64 at least.
func partOK(body []byte, text bool) bool {
	if len(body) < partBase64 || bytes.Contains(body, []byte(`"error"`)) || bytes.Contains(body, []byte(`"isError":true`)) {
		return false
	}
	return text || bytes.Contains(body, []byte(`image/png`))
}

// partsRows measures each call, image and text, with each sidecar
// variant (this tree's, and the baseline's in a run that has one), in
// rotating rounds, and keeps the table in s.res.parts.
func (s *suite) partsRows() error {
	p := s.plan
	variants := []string{vSidecar}
	if s.baseline != "" {
		variants = append(variants, vBaseline)
	}
	kinds := []bool{false, true} // image, text
	type combo struct {
		call    partCall
		text    bool
		variant string
	}
	var combos []combo
	for _, c := range partCalls {
		for _, text := range kinds {
			for _, v := range variants {
				combos = append(combos, combo{c, text, v})
			}
		}
	}
	key := func(c combo) string { return fmt.Sprintf("%s/%t/%s", c.call.name, c.text, c.variant) }
	peak, ms := series{}, series{}
	rounds := min(p.rounds, partRounds)
	for r := range rounds {
		for i := range combos {
			c := combos[(i+r)%len(combos)]
			pk, t, err := s.partCall(c.variant, c.call, c.text)
			if err != nil {
				what := "the image"
				if c.text {
					what = "the image as text"
				}
				return fmt.Errorf("%s, %s, %s: %w", c.call.name, what, c.variant, err)
			}
			peak.add(key(c), pk)
			ms.add(key(c), t)
		}
		logf("parts round %d of %d", r+1, rounds)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\nParts rows: an agent's 5 MiB PNG as one inline part in one SSE event (%.2f MB of base64), and the same base64 as a text record, "+
		"through each door of a fresh sidecar: %d calls one after another; the peak is the sidecar's VmHWM after the first call over its RSS before it (MB, and × the base64), "+
		"the time the median of the calls after the first, from writing the request to reading the answer's last byte (ms). "+
		"Median of %d rotating rounds (lowest–highest round).\n\n", float64(partBase64)/1e6, partRepeat, rounds)
	b.WriteString("| call | answer | sidecar | peak MB over idle | × the base64 | ms per call |\n|---|---|---|---:|---:|---:|\n")
	for _, c := range combos {
		name := "sidecar"
		if c.variant == vBaseline {
			name = "sidecar@" + s.baseName
		}
		what := "image"
		if c.text {
			what = "text"
		}
		pk := peak[key(c)]
		fmt.Fprintf(&b, "| %s | %s | %s | %.1f (%.1f–%.1f) | %.1f× | %s |\n", c.call.name, what, name,
			median(pk), slices.Min(pk), slices.Max(pk), median(pk)*1e6/partBase64, cell(ms[key(c)]))
	}
	s.res.parts = b.String()
	return nil
}

// partCall starts a fresh sidecar of variant, makes partCalls calls of
// call, and returns its peak RSS over its idle RSS by the end of the
// first call (MB: one call's, as the process's first) and the median time
// of the calls after the first (ms).
func (s *suite) partCall(variant string, call partCall, text bool) (peakMB, ms float64, err error) {
	pr, addr, err := s.startSidecarWith(variant+"-parts", partsConfig(s.res.agentAddr))
	if err != nil {
		return 0, 0, err
	}
	defer pr.stop(syscall.SIGTERM, 3*time.Second)
	session, err := mcpInitialize(addr)
	if err != nil {
		return 0, 0, err
	}
	idle, err := rssKB(pr.pid())
	if err != nil {
		return 0, 0, err
	}
	var times []float64
	hwm := 0
	for i := range partRepeat {
		began := time.Now()
		body, err := partCallOnce(addr, call.request(addr, session, text))
		if err != nil {
			return 0, 0, err
		}
		if i > 0 {
			times = append(times, float64(time.Since(began).Microseconds())/1000)
		}
		if !partOK(body, text) {
			return 0, 0, fmt.Errorf("answered %d bytes, not the whole answer: %.300s", len(body), body)
		}
		if i == 0 {
			if hwm, err = statusKB(pr.pid(), "VmHWM:"); err != nil {
				return 0, 0, err
			}
		}
	}
	return float64(hwm-idle) * 1024 / 1e6, median(times), nil
}

// partCallOnce sends req on a connection of its own and reads the whole
// answer.
func partCallOnce(addr string, req []byte) ([]byte, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.nc.SetDeadline(time.Now().Add(60 * time.Second))
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.status != http.StatusOK {
		return nil, fmt.Errorf("answered %d %.300s", resp.status, b)
	}
	return b, nil
}

// statusKB is a field of /proc/PID/status in KiB (VmHWM:, VmRSS:).
func statusKB(pid int, field string) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/internal/doortest"
)

// TestStreamAnswerMemory: a 30 MB answer through a streaming tool, with a
// progress token (30 progress notifications of 1 MB, then the result
// holding the whole text), under the default limits (reply_bytes 32 MiB),
// peaks the real sidecar binary's resident memory (VmHWM, a process of its
// own) at no more than twice the answer plus 30 MB: the door keeps one
// copy of the text and writes the result from it. Before, 228 MB.
func TestStreamAnswerMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the sidecar binary")
	}
	bin := doortest.BuildSidecar(t)
	agent := startAgent(t)
	p := doortest.StartSidecar(t, bin, fmt.Sprintf("upstream: {url: %q}\nmethods:\n  long: {mode: stream, call: POST /long, reply: sse}\n"+
		"protocols:\n  mcp: {listen: \"127.0.0.1:0\"}\n", agent), Name)
	url := "http://" + p.Addr[Name] + DefaultPath

	const pieces, size = 30, 1_000_000
	answer := pieces * size
	params := fmt.Sprintf(`"name":"long","arguments":{"n":%d,"size":%d},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}`, pieces, size)
	resp, b := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+params+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "long")
	evs := bytes.Split(bytes.TrimSuffix(b, []byte("\n\n")), []byte("\n\n"))
	var last struct {
		Result struct {
			Content []struct{ Text string }
			IsError bool
		}
	}
	if err := json.Unmarshal(bytes.TrimPrefix(evs[len(evs)-1], []byte("data: ")), &last); err != nil || resp.StatusCode != 200 ||
		len(evs) != pieces+1 || last.Result.IsError || len(last.Result.Content) != 1 || len(last.Result.Content[0].Text) != answer || strings.Trim(last.Result.Content[0].Text, "x") != "" {
		t.Fatalf("= %d, %d events (%v), want %d progress and a result of %d bytes of text, every one the agent's x", resp.StatusCode, len(evs), err, pieces, answer)
	}
	peak := p.PeakRSS(t)
	limit := int64(2*answer + 30_000_000)
	t.Logf("peak RSS %d MB for an answer of %d MB (limit %d MB)", peak/1_000_000, answer/1_000_000, limit/1_000_000)
	if peak > limit {
		t.Errorf("peak RSS %d bytes, want at most 2 × the answer (%d) + 30 MB = %d", peak, answer, limit)
	}
}

// TestPartMemory: an agent's part through a streaming tool, in the real
// sidecar binary (a process of its own per case, so its peak resident
// memory, VmHWM, is the case's). A 5 MB image under the default limits
// reaches the caller whole, base64 as sent, the sidecar's peak at most 3×
// the image's base64 (6.7 MB) beyond a process's own (BigSlack): the
// record as read (its buffer becomes the record, and the mapping stage
// writes it as it is), the result's copy, and the collector's room (about
// 20 MB over a fresh process's 22 MB; before the record was held once
// more and the stage copied it, 30 MB). A part
// of 64 MiB of base64, past limits.parts.bytes (5 MiB), ends the call
// with PART_TOO_LARGE: under the default limits.record_bytes (8 MiB) the
// record is cut at 8 MiB, and the sidecar holds no more than the cap on
// a record; with record_bytes raised to 96 MiB, the record is read whole
// first (the part's size is known at its end), so the peak is a small
// multiple of record_bytes, never of what the agent sends past it.
func TestPartMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the sidecar binary")
	}
	bin := doortest.BuildSidecar(t)
	agent := startAgent(t)
	tests := []struct {
		name, limits string
		size         int    // the part's bytes
		says         string // the result's text, "" for the image
		limit        int64  // the peak, beyond BigSlack
	}{
		{"a 5 MB image", "", 5_000_000, "", 3 * 6_666_668},
		{"64 MiB past the default record", "", 64 << 20 / 4 * 3, "record", 3 * 8 << 20},
		{"64 MiB in a 96 MiB record", "limits: {record_bytes: 96MiB}\n", 64 << 20 / 4 * 3, "limits.parts.bytes", 3 * 96 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := doortest.StartSidecar(t, bin, fmt.Sprintf("upstream: {url: %q}\n%smethods:\n  big: {mode: stream, call: POST /big, reply: ndjson}\n"+
				"protocols:\n  mcp: {listen: \"127.0.0.1:0\"}\n", agent, tt.limits), Name)
			url := "http://" + p.Addr[Name] + DefaultPath
			resp, b := modern(t, url, "tools/call", fmt.Sprintf(`"name":"big","arguments":{"size":%d,"mime_type":"image/png"}`, tt.size), "big")
			evs := bytes.Split(bytes.TrimSuffix(b, []byte("\n\n")), []byte("\n\n"))
			var last struct {
				Result struct {
					Content []struct{ Type, Text, Data, MimeType string }
					IsError bool
				}
			}
			if err := json.Unmarshal(bytes.TrimPrefix(evs[len(evs)-1], []byte("data: ")), &last); err != nil || resp.StatusCode != 200 {
				t.Fatalf("= %d %.300s: %v", resp.StatusCode, b, err)
			}
			c := last.Result.Content
			if tt.says == "" {
				if last.Result.IsError || len(c) != 3 || c[1].Type != "image" || len(c[1].Data) != (tt.size+2)/3*4 || strings.Trim(c[1].Data, "A=") != "" {
					t.Errorf("= %d contents, isError %t: want big:, the image of %d bytes, end", len(c), last.Result.IsError, tt.size)
				}
			} else if !last.Result.IsError || len(c) != 1 || !strings.Contains(c[0].Text, tt.says) {
				t.Errorf("= %.300s, want an isError saying %q", b, tt.says)
			}
			peak := p.PeakRSS(t)
			limit := tt.limit + doortest.BigSlack
			t.Logf("peak RSS %d MB for a part of %d MB (limit %d MB)", peak>>20, tt.size>>20, limit>>20)
			if peak > limit {
				t.Errorf("peak RSS %d bytes, want at most %d", peak, limit)
			}
		})
	}
}

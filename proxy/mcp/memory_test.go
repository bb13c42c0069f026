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

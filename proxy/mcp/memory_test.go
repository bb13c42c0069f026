package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: cannot read the process's peak memory")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sidecar")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/sidecar").CombinedOutput(); err != nil {
		t.Fatalf("building the sidecar: %v\n%s", err, out)
	}
	agent := startAgent(t)
	config := fmt.Sprintf("upstream: {url: %q}\nmethods:\n  long: {mode: stream, call: POST /long, reply: sse}\n"+
		"protocols:\n  agent_platform: {enabled: false}\n  mcp: {listen: \"127.0.0.1:0\"}\n", agent)
	if err := os.WriteFile(filepath.Join(dir, "sidecar.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config", filepath.Join(dir, "sidecar.yaml"))
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	url := mcpAddr(t, logs) + DefaultPath

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
	peak := vmHWM(t, cmd.Process.Pid)
	limit := int64(2*answer + 30_000_000)
	t.Logf("peak RSS %d MB for an answer of %d MB (limit %d MB)", peak/1_000_000, answer/1_000_000, limit/1_000_000)
	if peak > limit {
		t.Errorf("peak RSS %d bytes, want at most 2 × the answer (%d) + 30 MB = %d", peak, answer, limit)
	}
}

// mcpAddr is the MCP door's URL, from the sidecar's "listening" log line.
func mcpAddr(t *testing.T, logs io.Reader) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		sent := false
		for sc.Scan() {
			var line struct{ Message, Protocol, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "listening" && line.Protocol == Name && !sent {
				found <- "http://" + line.Addr
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case url, ok := <-found:
		if !ok {
			t.Fatal("the sidecar exited without listening on the MCP door")
		}
		return url
	case <-time.After(30 * time.Second):
		t.Fatal("the sidecar did not log its MCP door listening within 30s")
	}
	return ""
}

// vmHWM is process pid's peak resident set size, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}

package devapi

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// nodeModules is @google-cloud/aiplatform's node_modules, as `make deps`
// installed it (testdata/aiplatform/install.sh, into
// ${SIDECAR_CACHE:-<repo>/.cache}/aiplatform).
func nodeModules(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run @google-cloud/aiplatform's client")
	}
	// It prints <cache>/aiplatform/node_modules/@google-cloud/aiplatform/build/protos/protos.json.
	protos := deps.NPM(t, "aiplatform")
	dir, ok := strings.CutSuffix(protos, filepath.FromSlash("/@google-cloud/aiplatform/build/protos/protos.json"))
	if !ok {
		t.Fatalf("install.sh printed %q", protos)
	}
	return dir
}

// nodeStep is one line of testdata/aiplatform/client.js's output.
type nodeStep struct {
	Step   string         `json:"step"`
	Output map[string]any `json:"output"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Lines []struct {
		ContentType string `json:"contentType"`
		Data        string `json:"data"`
	} `json:"lines"`
}

// TestNodeClient: the platform's own Node client, @google-cloud/aiplatform
// over REST (fallback), against the emulator in front of a real sidecar
// and agent: :query, an error, :streamQuery read as the lines come (the
// agent holds each line after the first until the client has the one
// before), a final error line, and a stream refused before its first line.
func TestNodeClient(t *testing.T) {
	modules := nodeModules(t)
	st := newStack(t, Options{})
	port := st.dev[strings.LastIndex(st.dev, ":")+1:]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "../../testdata/aiplatform/client.js", port, st.agent)
	cmd.Env = append(cmd.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.js: %v\n%s\n%s", err, out, stderr.String())
	}
	steps := map[string]nodeStep{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var s nodeStep
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("client.js printed %q: %v", line, err)
		}
		steps[s.Step] = s
	}
	t.Logf("client.js:\n%s", out)

	// :query: the input arrives; the output comes back as a Value.
	q := steps["query"]
	if in, _ := q.Output["input"].(map[string]any); in["message"] != "hi" || in["n"] != float64(2) {
		t.Errorf("query: %+v", q)
	}
	// An input that is not a Struct is sent empty.
	if in, _ := steps["plain_input"].Output["input"].(map[string]any); in == nil || len(in) != 0 {
		t.Errorf("plain_input: %+v, want the input sent empty", steps["plain_input"])
	}
	// A container error: FAILED_PRECONDITION (gRPC code 9) with its body.
	if e := steps["query_error"].Error; e == nil || e.Code != 9 || !strings.Contains(e.Message, `Error Details: {"detail":"boom: no luck"}`) {
		t.Errorf("query_error: %+v", steps["query_error"].Error)
	}

	s := steps["stream"]
	if s.Error != nil || len(s.Lines) != 3 {
		t.Fatalf("stream: %+v", s)
	}
	for i, l := range s.Lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l.Data), &v); err != nil || v["n"] != float64(i) || l.ContentType == "" {
			t.Errorf("stream line %d: %q %q", i, l.ContentType, l.Data)
		}
	}

	f := steps["stream_final_error"]
	if f.Error != nil || len(f.Lines) != 2 || !strings.HasPrefix(f.Lines[1].Data, `{"error":{`) {
		t.Errorf("stream_final_error: %+v, want a line then the final error line, no client error", f)
	}

	e := steps["stream_error"]
	if len(e.Lines) != 0 || e.Error == nil || e.Error.Code != 9 || !strings.Contains(e.Error.Message, "Error Details: ") {
		t.Errorf("stream_error: %+v, want FAILED_PRECONDITION before any line", e)
	}
}

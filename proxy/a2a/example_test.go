package a2a

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExample: the door's copy-paste examples (what sidecar dev's
// playground lists) work as printed against the door: the curl sends a
// message and gets the completed task; the JavaScript snippet, run as an
// ES module with @a2a-js/sdk installed beside it, prints the agent's
// answer.
func TestExample(t *testing.T) {
	modules := sdkModules(t)
	base := serve(t, "stream_query")
	ex := example(base, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	out, err := exec.CommandContext(ctx, "sh", "-c", ex.Curl).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"state":"completed"`) || !strings.Contains(string(out), `"text":"[hi] "`) {
		t.Errorf("the curl example: %v\n%s\n%s", err, ex.Curl, out)
	}

	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "example.mjs")
	if err := os.WriteFile(script, []byte(ex.Client), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil || !strings.Contains(string(out), "[hi] once upon a time") {
		t.Errorf("the %s example: %v\n%s\nprinted %q\n%s", ex.ClientLang, err, ex.Client, out, stderr.String())
	}
}

package mcp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestExample: the registration's Example, at the door's URL (the
// listener's, then the Path of its section: here protocols.mcp.path
// /tools, not the default), runs as printed against the served door: its
// curl lists the tools, and its TypeScript snippet, with the 2.x client,
// calls the first tool and prints its text.
func TestExample(t *testing.T) {
	c, err := config.Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {ask: {}}\nprotocols: {mcp: {path: /tools}}\n"), Protocol.Kind)
	if err != nil {
		t.Fatal(err)
	}
	section := c.Protocols.Door(Name)
	s := serve(t, "", Protocol.Options(section, core.Host{}))
	url := s.base + Protocol.Path(section)
	ex := Protocol.Example(url, section)
	if url != s.base+"/tools" || ex.ClientLang != "typescript" || !strings.Contains(ex.Curl, s.url+" ") || !strings.Contains(ex.Client, `"`+s.url+`"`) {
		t.Fatalf("Example(%s) = %+v, want calls of %s", url, ex, s.url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := exec.LookPath("curl"); err == nil {
		out, err := exec.CommandContext(ctx, "sh", "-c", ex.Curl).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"name":"ask"`) || !strings.Contains(string(out), `"resultType":"complete"`) {
			t.Errorf("the curl example: %v\n%s", err, out)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run the TypeScript example")
	}
	// The snippet imports the client: an ES module finds it in a
	// node_modules beside the script, not through NODE_PATH.
	dir := t.TempDir()
	if err := os.Symlink(deps.NPM(t, "mcp2"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "example.mjs")
	if err := os.WriteFile(script, []byte(ex.Client), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, "node", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != `{"answer":"you asked: hi","words":1}` {
		t.Errorf("the TypeScript example: %v\n%s", err, out)
	}
}

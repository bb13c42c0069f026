package deps

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckInstallsNothing: every testdata/*/install.sh, run with --check
// as the tests run it, against an empty cache, fails at once naming
// `make deps`, and leaves the cache empty: no test installs.
func TestCheckInstallsNothing(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(Repo(), "testdata", "*", "install.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no testdata/*/install.sh: %v", err)
	}
	for _, script := range scripts {
		set := filepath.Base(filepath.Dir(script))
		t.Run(set, func(t *testing.T) {
			cache := t.TempDir()
			// An install would run npm for minutes: the bound is the
			// behaviour (a check reads a stamp file), so it is short.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", script, "--check")
			cmd.Env = append(os.Environ(), "SIDECAR_CACHE="+cache)
			out, err := cmd.CombinedOutput()
			if err == nil || ctx.Err() != nil {
				t.Errorf("%s --check on an empty cache = %v (context %v), want a quick failure\n%s", set, err, ctx.Err(), out)
			}
			if !strings.Contains(string(out), "make deps") {
				t.Errorf("%s --check said %q, want it to name `make deps`", set, out)
			}
			if left, _ := os.ReadDir(cache); len(left) > 0 {
				t.Errorf("%s --check wrote %v into the cache, want nothing installed", set, left)
			}
		})
	}
}

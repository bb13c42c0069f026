package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMakeInstall: the README's install step works: `make install` puts a
// `sidecar` in GOBIN that runs and says the version it was stamped with,
// and the README names the step before its first `sidecar` command.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sidecar")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	gobin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-C", "..", "install", "VERSION=v0.0.0-install-test")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(gobin, "sidecar"), "version").CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || got != "sidecar v0.0.0-install-test" {
		t.Errorf("the installed sidecar version = %q, %v; want sidecar v0.0.0-install-test", got, err)
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	install := strings.Index(string(readme), "make install")
	first := regexp.MustCompile("(?m)^sidecar ").FindIndex(readme)
	if install < 0 || first == nil || install > first[0] {
		t.Errorf("README.md: `make install` at byte %d, the first `sidecar` command at %v: want the install step first", install, first)
	}
}

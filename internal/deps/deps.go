// Package deps finds, for tests, what `make deps` installed before the
// suite started: the npm package sets and programs (actionlint) of
// testdata/*/install.sh in ${SIDECAR_CACHE:-<repo>/.cache}. It never
// installs: a test runs inside a timeout, and an npm install on a cold
// cache can take minutes.
package deps

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Repo is the repository's root folder.
func Repo() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// NPM returns what testdata/<set>/install.sh prints (a node_modules folder,
// or for aiplatform the protos.json in it) when the cache holds the set as
// its package.json and package-lock.json pin it. Otherwise the test fails at
// once, saying to run `make deps`. Under -short the test is skipped: the
// quick suite needs no npm packages.
func NPM(t testing.TB, set string) string {
	t.Helper()
	return installed(t, set, "the npm packages")
}

// Tool returns the path of the program testdata/<set>/install.sh installs
// (actionlint), as NPM does for an npm package set: it fails the test at
// once when `make deps` has not installed it, and skips it under -short.
func Tool(t testing.TB, set string) string {
	t.Helper()
	return installed(t, set, "the program")
}

// installed is what testdata/<set>/install.sh --check prints; what names
// what it installs, for the messages.
func installed(t testing.TB, set, what string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s of testdata/%s (make deps)", what, set)
	}
	cmd := exec.Command("bash", filepath.Join(Repo(), "testdata", set, "install.sh"), "--check")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("testdata/%s/install.sh --check: %v: %s not installed (%s): run `make deps` first\n%s", set, err, set, what, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Node runs testdata/<set>/<script> with args, NODE_PATH the set's
// node_modules as `make deps` installed them (NPM), and returns the lines
// it printed; its failure, or two minutes passing, fails the test with
// its output. Without node the test is skipped.
func Node(t testing.TB, set, script string, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: cannot run the clients")
	}
	modules := NPM(t, set)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(Repo(), "testdata", set, script)}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s/%s %v: %v\n%s\n%s", set, script, args, err, out, stderr.String())
	}
	t.Logf("%s/%s %v:\n%s", set, script, args, out)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// MatchLines compares a client's lines with want, each the beginning of
// its line.
func MatchLines(t testing.TB, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the client printed %d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s…", i+1, got[i], want[i])
		}
	}
}

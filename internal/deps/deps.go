// Package deps finds, for tests, what `make deps` installed before the
// suite started: the npm package sets of testdata/*/install.sh in
// ${SIDECAR_CACHE:-<repo>/.cache}. It never installs: a test runs inside a
// timeout, and an npm install on a cold cache can take minutes.
package deps

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
	if testing.Short() {
		t.Skipf("needs the npm packages of testdata/%s (make deps)", set)
	}
	cmd := exec.Command("bash", filepath.Join(Repo(), "testdata", set, "install.sh"), "--check")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("testdata/%s/install.sh --check: %v: the npm packages are not installed: run `make deps` first\n%s", set, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

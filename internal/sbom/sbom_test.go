package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunErrors: bad input gets an exit code and a message saying what is
// wrong, never a panic or a half-written SBOM.
func TestRunErrors(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no binary", nil, 2, "no binary named"},
		{"unknown flag", []string{"-x", self}, 2, "flag provided but not defined"},
		{"not a Go binary", []string{"../../go.mod"}, 1, "is it a Go binary?"},
		{"missing", []string{"no-such-file"}, 1, "no-such-file"},
		{"two programs", []string{self, goBin}, 1, "give the builds of one program"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sbom.json")
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"-o", out}, tt.args...), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.msg) {
				t.Errorf("run(%q) = %d, stderr %q; want %d naming %q", tt.args, code, stderr.String(), tt.code, tt.msg)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("run(%q) wrote %s", tt.args, out)
			}
		})
	}
}

// TestFromBinaries reads a program that links zap (and through it
// multierr) and checks the document's shape: the main module with the
// version given, the linked modules sorted, each a purl, the standard
// library last, and the timestamp from SOURCE_DATE_EPOCH.
func TestFromBinaries(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "linkszap")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/linkszap").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	doc, err := fromBinaries("v1.2.3+meta", []string{bin}, "1700000000")
	if err != nil {
		t.Fatal(err)
	}
	app := doc.Metadata.Component
	if app.Name != "github.com/sidecar-dev/sidecar" || app.PURL != "pkg:golang/github.com/sidecar-dev/sidecar@v1.2.3%2Bmeta" {
		t.Errorf("main component %s %s, want the sidecar at v1.2.3+meta", app.Name, app.PURL)
	}
	if doc.Metadata.Timestamp != "2023-11-14T22:13:20Z" {
		t.Errorf("timestamp %q, want SOURCE_DATE_EPOCH's 2023-11-14T22:13:20Z", doc.Metadata.Timestamp)
	}
	var names []string
	for _, c := range doc.Components {
		names = append(names, c.Name)
		if c.PURL != "pkg:golang/"+c.Name+"@"+c.Version {
			t.Errorf("%s %s: purl %s", c.Name, c.Version, c.PURL)
		}
	}
	if want := []string{"go.uber.org/multierr", "go.uber.org/zap", "stdlib"}; !slices.Equal(names, want) {
		t.Errorf("components %v, want %v", names, want)
	}
	if got := doc.Dependencies[0].DependsOn; len(got) != len(doc.Components) {
		t.Errorf("the sidecar depends on %d components, want all %d", len(got), len(doc.Components))
	}
	if _, err := json.Marshal(doc); err != nil {
		t.Error(err)
	}
	if _, err := fromBinaries("", []string{bin}, "yesterday"); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
		t.Errorf("fromBinaries with SOURCE_DATE_EPOCH=yesterday = %v, want an error naming it", err)
	}
}

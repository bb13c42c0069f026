package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// releaseVersion is the version the test stamps: no tag has it.
const releaseVersion = "v0.0.0-releasetest"

// TestRelease runs `make release` for this machine's platform into a
// temporary folder and checks what a user downloads: an archive holding
// the binary, which runs and reports the stamped version, and README.md;
// SHA256SUMS that verifies every file it lists, and lists every archive
// and the SBOM; an SBOM that names the modules linked into the binary at
// go.mod's versions, and not a module only the tests use.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("make", "-C", repo, "release", "RELEASE_TARGETS="+target, "VERSION="+releaseVersion, "DIST="+dist)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}

	name := fmt.Sprintf("sidecar_%s_%s_%s", releaseVersion, runtime.GOOS, runtime.GOARCH)
	archive := filepath.Join(dist, name+".tar.gz")
	files := untar(t, archive, t.TempDir())
	if want := []string{"README.md", "sidecar"}; !slices.Equal(slices.Sorted(maps.Keys(files)), want) {
		t.Errorf("%s holds %v, want %v", filepath.Base(archive), slices.Sorted(maps.Keys(files)), want)
	}
	if bin, ok := files["sidecar"]; ok {
		out, err := exec.Command(bin, "version").Output()
		if got, want := strings.TrimSpace(string(out)), "sidecar "+releaseVersion; err != nil || got != want {
			t.Errorf("sidecar version = %q, %v; want %q", got, err, want)
		}
	}

	sbomName := "sidecar_" + releaseVersion + ".cdx.json"
	listed, err := verifySums(dist)
	if err != nil {
		t.Error(err)
	}
	if want := []string{sbomName, name + ".tar.gz"}; !slices.Equal(slices.Sorted(slices.Values(listed)), want) {
		t.Errorf("SHA256SUMS lists %v, want %v", listed, want)
	}

	var doc bom
	b, err := os.ReadFile(filepath.Join(dist, sbomName))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the SBOM is not JSON: %v", err)
	}
	if doc.BOMFormat != "CycloneDX" || doc.Metadata.Component.Version != releaseVersion {
		t.Errorf("SBOM %s for %s %s, want CycloneDX for %s", doc.BOMFormat, doc.Metadata.Component.Name, doc.Metadata.Component.Version, releaseVersion)
	}
	versions := map[string]string{}
	for _, c := range doc.Components {
		versions[c.Name] = c.Version
	}
	if got, want := versions["go.uber.org/zap"], goModVersion(t, repo, "go.uber.org/zap"); got != want {
		t.Errorf("SBOM lists go.uber.org/zap at %q, want go.mod's %s", got, want)
	}
	// goleak is in go.mod for the tests; no release binary links it.
	if v, ok := versions["go.uber.org/goleak"]; ok {
		t.Errorf("SBOM lists go.uber.org/goleak %s, which only the tests use", v)
	}
}

// untar extracts the regular files of a .tar.gz into dir and returns
// their paths by name.
func untar(t *testing.T, archive, dir string) map[string]string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(archive), err)
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(archive), err)
		}
		if h.Typeflag != tar.TypeReg || h.Name != filepath.Base(h.Name) {
			t.Errorf("%s: entry %q (type %c): want plain files at the top", filepath.Base(archive), h.Name, h.Typeflag)
			continue
		}
		path := filepath.Join(dir, h.Name)
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, h.FileInfo().Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		files[h.Name] = path
	}
}

// verifySums checks dir/SHA256SUMS as `sha256sum -c` does: each line is a
// hex SHA-256, two spaces (or a space and "*", binary mode) and a file
// name relative to dir, whose content must have that hash. It returns the
// names listed.
func verifySums(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names, problems []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		sum, name, ok := strings.Cut(sc.Text(), " ")
		name, bin := strings.CutPrefix(name, "*")
		if !bin {
			name, ok = strings.CutPrefix(name, " ")
		}
		want, err := hex.DecodeString(sum)
		if !ok || err != nil || len(want) != sha256.Size || name == "" {
			problems = append(problems, fmt.Sprintf("line %d: %q is not `SHA256  NAME`", n, sc.Text()))
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if got := sha256.Sum256(b); !bytes.Equal(got[:], want) {
			problems = append(problems, fmt.Sprintf("%s: FAILED (sha256 %x, SHA256SUMS says %x)", name, got, want))
		}
		names = append(names, name)
	}
	if err := sc.Err(); err != nil {
		return names, err
	}
	if len(problems) > 0 {
		return names, fmt.Errorf("SHA256SUMS does not verify:\n%s", strings.Join(problems, "\n"))
	}
	return names, nil
}

// TestVerifySums makes sure the check TestRelease relies on can fail: a
// file changed after its sum was taken, a missing file and a malformed
// line are each reported.
func TestVerifySums(t *testing.T) {
	dir := t.TempDir()
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "b"), []byte("b"), 0o644)
	tests := []struct {
		name, sums, problem string
	}{
		{"good", sum("a") + "  a\n" + sum("b") + " *b\n", ""},
		{"changed", sum("a") + "  a\n" + sum("x") + "  b\n", "b: FAILED"},
		{"missing", sum("c") + "  c\n", "c: open"},
		{"malformed", sum("a") + " a\n", "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(tt.sums), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := verifySums(dir)
			switch {
			case tt.problem == "" && err != nil:
				t.Errorf("verifySums = %v, want nil", err)
			case tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)):
				t.Errorf("verifySums = %v, want an error naming %q", err, tt.problem)
			}
		})
	}
}

// goModVersion is the version of module the main module requires.
func goModVersion(t *testing.T, repo, module string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}

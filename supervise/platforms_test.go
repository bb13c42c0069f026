package supervise

import (
	"os"
	"os/exec"
	"testing"
)

// TestVetsForMacOS: the package, tests included, type-checks and vets for
// macOS on both Mac architectures, so `sidecar dev` builds there:
// reap_darwin.go stands in for what only Linux has (reap_linux.go). `make
// release` cross-compiles the whole binary for both.
func TestVetsForMacOS(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the package's dependencies")
	}
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			cmd := exec.Command("go", "vet", ".")
			cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH="+arch, "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("GOOS=darwin GOARCH=%s go vet: %v\n%s", arch, err, out)
			}
		})
	}
}

package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// The GitHub Actions workflow file, read as far as the checks need.
type workflow struct {
	On struct {
		Push struct {
			Tags []string `yaml:"tags"`
		} `yaml:"push"`
	} `yaml:"on"`
	Jobs map[string]struct {
		Needs yaml.Node         `yaml:"needs"`
		Env   map[string]string `yaml:"env"`
		Steps []step            `yaml:"steps"`
	} `yaml:"jobs"`
}

type step struct {
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
}

// TestWorkflows lints .github/workflows with actionlint (which also runs
// shellcheck on each run: script when shellcheck is installed).
func TestWorkflows(t *testing.T) {
	actionlint := deps.Tool(t, "actionlint")
	cmd := exec.Command(actionlint, "-no-color")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("actionlint: %v\n%s", err, out)
	}
}

// releaseImage is the image the release workflow pushes, which
// docs/install.md tells users to copy the sidecar from.
const releaseImage = "ghcr.io/sidecar-dev/sidecar"

// TestReleaseWorkflow holds .github/workflows/release.yml to what
// docs/install.md promises: on a tag v*, the tests, then `make release`'s
// files published as a GitHub release, and the root Dockerfile's image
// for linux/amd64 and linux/arm64 pushed as releaseImage:<tag> and :latest.
func TestReleaseWorkflow(t *testing.T) {
	b, err := os.ReadFile("../.github/workflows/release.yml")
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("release.yml: %v", err)
	}
	if !slices.Equal(w.On.Push.Tags, []string{"v*"}) {
		t.Errorf("on.push.tags = %q, want [v*]", w.On.Push.Tags)
	}
	test, release := w.Jobs["test"], w.Jobs["release"]
	if runs := runsOf(test.Steps); !strings.Contains(runs, ".ci/run") {
		t.Errorf("the test job runs %q, want .ci/run (make test)", runs)
	}
	if release.Needs.Value != "test" {
		t.Errorf("the release job needs %q, want test", release.Needs.Value)
	}
	runs := runsOf(release.Steps)
	if release.Env["IMAGE"] != releaseImage {
		t.Errorf("IMAGE=%q, want %s", release.Env["IMAGE"], releaseImage)
	}
	runs = strings.ReplaceAll(runs, "$IMAGE", release.Env["IMAGE"])
	for _, want := range []string{
		`make release VERSION="$VERSION"`,
		"gh release create",
		"dist/*.tar.gz", "dist/*.cdx.json", "dist/SHA256SUMS", // make release's files, as TestRelease checks them
		"docker buildx build --platform linux/amd64,linux/arm64",
		`--build-arg VERSION="$VERSION"`,
		`--tag "` + releaseImage + `:$VERSION"`,
		`--tag "` + releaseImage + `:latest"`,
		"--push .",
	} {
		if !strings.Contains(runs, want) {
			t.Errorf("the release job's scripts lack %q", want)
		}
	}
	// The root Dockerfile, not another: no --file.
	if regexp.MustCompile(`buildx build[^\n]*(\s-f\s|--file)`).MatchString(runs) {
		t.Error("the image is built from a Dockerfile other than the root one")
	}
	var uses []string
	for _, s := range release.Steps {
		uses = append(uses, strings.Split(s.Uses, "@")[0])
	}
	for _, want := range []string{"actions/setup-go", "docker/setup-buildx-action", "docker/login-action"} {
		if !slices.Contains(uses, want) {
			t.Errorf("the release job uses %q, want %s among them", uses, want)
		}
	}
}

// TestInstallImageLine: the line docs/install.md gives for an agent's own
// Dockerfile copies from the image the release workflow pushes, and from
// the path where the root Dockerfile puts the binary.
func TestInstallImageLine(t *testing.T) {
	b, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^COPY --from=(\S+) (\S+) (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/install.md shows no COPY --from=IMAGE SRC DEST line")
	}
	if from := string(m[1]); from != releaseImage+":latest" {
		t.Errorf("docs/install.md copies from %s, want %s:latest", from, releaseImage)
	}
	d := readDockerfile(t, "../Dockerfile")
	var binary string
	for _, c := range copies(d.stages[len(d.stages)-1]) {
		if c.from == "build" {
			binary = c.dest
		}
	}
	if src := string(m[2]); src != binary {
		t.Errorf("docs/install.md copies %s, but the image holds the binary at %q", src, binary)
	}
	if dest := string(m[3]); filepath.Base(dest) != "sidecar" {
		t.Errorf("docs/install.md copies the binary to %s, want a path ending in /sidecar", dest)
	}
}

// runsOf is the steps' run: scripts, one after the other.
func runsOf(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		b.WriteString(s.Run)
		b.WriteByte('\n')
	}
	return b.String()
}

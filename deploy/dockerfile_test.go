package deploy

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/imagetest"
)

// A Dockerfile read just enough to check it (imagetest reads it):
// instructions with their continuation lines joined and comments dropped,
// grouped in stages.
type dockerfile struct {
	args   map[string]string // ARGs before the first FROM, with defaults
	stages []*stage
}

type stage struct {
	base, name string // base with the global ARGs expanded
	platform   string // FROM's --platform, as written
	args       map[string]string
	instrs     []instr
}

type instr struct {
	cmd  string // upper case: RUN, COPY, …
	args string
	line int
}

func readDockerfile(t *testing.T, path string) *dockerfile {
	t.Helper()
	d, err := imagetest.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	out := &dockerfile{args: d.Args}
	for _, s := range d.Stages {
		st := &stage{base: s.Base, name: s.Name, platform: s.Platform, args: s.Args}
		for _, in := range s.Instrs {
			st.instrs = append(st.instrs, instr{cmd: in.Cmd, args: in.Args, line: in.Line})
		}
		out.stages = append(out.stages, st)
	}
	return out
}

func (s *stage) all(cmd string) []instr {
	var out []instr
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// one is the stage's last cmd instruction (the one that counts for
// ENTRYPOINT, CMD and USER).
func (s *stage) one(t *testing.T, cmd string) instr {
	t.Helper()
	all := s.all(cmd)
	if len(all) == 0 {
		t.Fatalf("stage %q (FROM %s) has no %s", s.name, s.base, cmd)
	}
	return all[len(all)-1]
}

func jsonForm(t *testing.T, in instr) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(in.args), &v); err != nil {
		t.Fatalf("line %d: %s %s: want the JSON (exec) form: %v", in.line, in.cmd, in.args, err)
	}
	return v
}

// checkNonRootUser holds USER to a numeric, non-zero uid (and gid): a
// name cannot be checked by Kubernetes' runAsNonRoot.
func checkNonRootUser(t *testing.T, s *stage) {
	t.Helper()
	u := s.one(t, "USER")
	uid, gid, hasGID := strings.Cut(u.args, ":")
	ids := []string{uid}
	if hasGID {
		ids = append(ids, gid)
	}
	for _, id := range ids {
		if n, err := strconv.Atoi(id); err != nil || n == 0 {
			t.Errorf("line %d: USER %s: want a numeric, non-zero uid:gid", u.line, u.args)
		}
	}
}

// copies are the COPY instructions of a stage as (from, sources, dest).
type copyInstr struct {
	from string
	srcs []string
	dest string
	line int
}

func copies(s *stage) []copyInstr {
	var out []copyInstr
	for _, in := range s.all("COPY") {
		var c copyInstr
		var rest []string
		for _, f := range strings.Fields(in.args) {
			if v, ok := strings.CutPrefix(f, "--from="); ok {
				c.from = v
			} else if !strings.HasPrefix(f, "--") {
				rest = append(rest, f)
			}
		}
		if len(rest) >= 2 {
			c.srcs, c.dest = rest[:len(rest)-1], rest[len(rest)-1]
		}
		c.line = in.line
		out = append(out, c)
	}
	return out
}

// sources are the paths of the build context ctx a COPY source names,
// relative to it: src itself, or a pattern's matches (Docker takes
// filepath.Match's syntax: "package*.json"). A source that names nothing
// is an error, as it fails Docker's build.
func sources(ctx, src string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(ctx, src))
	if err != nil {
		return nil, fmt.Errorf("COPY %s: %w", src, err)
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("COPY %s: not in the build context %s", src, ctx)
	}
	for i, m := range matches {
		if matches[i], err = filepath.Rel(ctx, m); err != nil {
			return nil, err
		}
	}
	return matches, nil
}

func defaultListenPort(t *testing.T) string {
	t.Helper()
	cfg := parse(t, "upstream: {url: \"http://127.0.0.1:1\"}\nmethods: {q: {}}\n")
	_, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func goModVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	return m[1]
}

// TestDockerfile holds the image's Dockerfile to what docs/deploy.md and the
// platform need: a Go builder of go.mod's version building ./cmd/sidecar
// with the Makefile's flags and no cgo; a final stage with only the
// binary, a numeric non-root user, ENTRYPOINT ["/sidecar"] and the
// sidecar's port exposed. It also builds for several platforms at once
// without emulation, as the release workflow builds it: the build stage
// runs on BuildKit's $BUILDPLATFORM and cross-compiles for TARGETOS and
// TARGETARCH, and the final stage is the target platform's.
func TestDockerfile(t *testing.T) {
	d := readDockerfile(t, "../Dockerfile")
	if len(d.stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a final one", len(d.stages))
	}
	build, final := d.stages[0], d.stages[len(d.stages)-1]
	if build.name != "build" {
		t.Errorf("first stage is named %q, want build", build.name)
	}
	if want := "golang:" + goModVersion(t); build.base != want {
		t.Errorf("builder FROM %s, want %s (go.mod's go line)", build.base, want)
	}
	if _, ok := build.args["VERSION"]; !ok {
		t.Error("build stage declares no ARG VERSION")
	}
	env := ""
	for _, in := range build.all("ENV") {
		env += " " + in.args
	}
	if !regexp.MustCompile(`(^|\s)CGO_ENABLED=0(\s|$)`).MatchString(env) {
		t.Errorf("build stage ENV %q: want CGO_ENABLED=0", env)
	}
	var goBuild string
	for _, in := range build.all("RUN") {
		if strings.Contains(in.args, "go build") {
			goBuild = in.args
		}
	}
	if goBuild == "" {
		t.Fatal("build stage has no RUN … go build")
	}
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LDFLAGS\s*:=\s*(.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile has no LDFLAGS := line")
	}
	ldflags := strings.ReplaceAll(strings.TrimSpace(string(m[1])), "$(VERSION)", "$VERSION")
	if build.platform != "$BUILDPLATFORM" && build.platform != "${BUILDPLATFORM}" {
		t.Errorf("build stage FROM --platform=%q, want $BUILDPLATFORM: it cross-compiles, with no emulation", build.platform)
	}
	if final.platform != "" {
		t.Errorf("final stage FROM --platform=%q, want none: it is the target platform's", final.platform)
	}
	for _, arg := range []string{"TARGETOS", "TARGETARCH"} {
		if _, ok := build.args[arg]; !ok {
			t.Errorf("build stage declares no ARG %s: BuildKit sets it only when declared", arg)
		}
	}
	for _, want := range []string{"GOOS=$TARGETOS", "GOARCH=$TARGETARCH", "-trimpath", `-ldflags "` + ldflags + `"`, "-o /out/sidecar", "./cmd/sidecar"} {
		if !strings.Contains(goBuild, want) {
			t.Errorf("go build %q lacks %q", goBuild, want)
		}
	}

	if final.base != "gcr.io/distroless/static-debian12:nonroot" && final.base != "scratch" {
		t.Errorf("final FROM %s: want distroless static nonroot or scratch", final.base)
	}
	cs := copies(final)
	if len(cs) != 1 || cs[0].from != "build" || !reflect.DeepEqual(cs[0].srcs, []string{"/out/sidecar"}) || cs[0].dest != "/sidecar" {
		t.Errorf("final stage copies %+v, want only COPY --from=build /out/sidecar /sidecar", cs)
	}
	if len(final.all("RUN")) > 0 {
		t.Error("final stage has RUN: the base has no shell")
	}
	checkNonRootUser(t, final)
	if ep := jsonForm(t, final.one(t, "ENTRYPOINT")); !reflect.DeepEqual(ep, []string{"/sidecar"}) {
		t.Errorf("ENTRYPOINT %q, want [\"/sidecar\"]", ep)
	}
	if port := defaultListenPort(t); final.one(t, "EXPOSE").args != port {
		t.Errorf("EXPOSE %s, want the sidecar's port %s", final.one(t, "EXPOSE").args, port)
	}
	for _, s := range d.stages {
		if strings.Contains(s.base, "$") {
			t.Errorf("FROM %s: an ARG without a default", s.base)
		}
	}
}

// TestExampleDockerfiles holds deploy/examples to the pattern docs/deploy.md
// documents for an existing agent image: the sidecar copied in, the
// sidecar as ENTRYPOINT with the config and "--", the agent as CMD, a
// numeric non-root user; the files they copy exist in the example. An
// agent that builds (node: TypeScript) has a build stage between, named
// build, whose RUNs include `npm ci` and the build; TestNodeExampleImage
// runs it.
func TestExampleDockerfiles(t *testing.T) {
	for _, tt := range []struct {
		lang, agent string
		build       []string // the build stage's RUNs, in order (nil: no build stage)
	}{
		{"python", "agent.py", nil},
		{"node", "dist/agent.js", []string{"npm ci", "npm run build", "npm prune --omit=dev"}},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			ctx := filepath.Join("..", "examples", tt.lang)
			d := readDockerfile(t, filepath.Join("examples", "Dockerfile."+tt.lang))
			stages := 2
			if tt.build != nil {
				stages = 3
			}
			if len(d.stages) != stages || d.stages[0].name != "sidecar" {
				t.Fatalf("%d stages, want %d, the first `FROM ${SIDECAR_IMAGE} AS sidecar`", len(d.stages), stages)
			}
			if d.args["SIDECAR_IMAGE"] == "" {
				t.Error("ARG SIDECAR_IMAGE has no default")
			}
			ignore, err := imagetest.ReadIgnore(filepath.Join(ctx, ".dockerignore"))
			if err != nil {
				t.Fatal(err)
			}
			contextCopy := func(c copyInstr) {
				for _, src := range c.srcs {
					names, err := sources(ctx, src)
					if err != nil {
						t.Errorf("line %d: %v", c.line, err)
					}
					for _, name := range names {
						if imagetest.Ignored(ignore, name) {
							t.Errorf("line %d: COPY %s: the context's .dockerignore leaves %s out", c.line, src, name)
						}
					}
				}
			}
			if tt.build != nil {
				b := d.stages[1]
				if b.name != "build" {
					t.Errorf("the middle stage is named %q, want build", b.name)
				}
				var runs []string
				for _, in := range b.all("RUN") {
					runs = append(runs, in.args)
				}
				for i, w := range tt.build {
					if i >= len(runs) || !strings.HasPrefix(runs[i], w) {
						t.Errorf("build stage RUNs %q, want %q in order", runs, tt.build)
						break
					}
				}
				for _, c := range copies(b) {
					if c.from != "" {
						t.Errorf("line %d: COPY --from=%s in the build stage", c.line, c.from)
					}
					contextCopy(c)
				}
			}
			final := d.stages[len(d.stages)-1]
			var sidecar, conf bool
			for _, c := range copies(final) {
				switch {
				case c.from == "sidecar":
					sidecar = reflect.DeepEqual(c.srcs, []string{"/sidecar"}) && c.dest == "/sidecar"
				case c.from == "build" && tt.build != nil:
				case c.from != "":
					t.Errorf("line %d: COPY --from=%s", c.line, c.from)
				default:
					contextCopy(c)
					if reflect.DeepEqual(c.srcs, []string{"sidecar.yaml"}) && c.dest == "/etc/sidecar.yaml" {
						conf = true
					}
				}
			}
			if !sidecar || !conf {
				t.Errorf("want COPY --from=sidecar /sidecar /sidecar and COPY sidecar.yaml /etc/sidecar.yaml")
			}
			if _, err := config.Load(filepath.Join(ctx, "sidecar.yaml")); err != nil {
				t.Errorf("the copied config: %v", err)
			}
			want := []string{"/sidecar", "--config", "/etc/sidecar.yaml", "--"}
			if ep := jsonForm(t, final.one(t, "ENTRYPOINT")); !reflect.DeepEqual(ep, want) {
				t.Errorf("ENTRYPOINT %q, want %q", ep, want)
			}
			if cmd := jsonForm(t, final.one(t, "CMD")); len(cmd) < 2 || cmd[len(cmd)-1] != tt.agent {
				t.Errorf("CMD %q, want the agent (… %s)", cmd, tt.agent)
			}
			checkNonRootUser(t, final)
			checkUserHome(t, final)
			if u, want := final.one(t, "USER").args, deployGuideUser(t); u != want {
				t.Errorf("USER %s, want %s as docs/deploy.md shows", u, want)
			}
			if port := defaultListenPort(t); final.one(t, "EXPOSE").args != port {
				t.Errorf("EXPOSE %s, want %s", final.one(t, "EXPOSE").args, port)
			}
		})
	}
}

// deployGuideUser is the USER of docs/deploy.md's Dockerfile lines, which
// the examples follow.
func deployGuideUser(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/deploy.md shows no USER line")
	}
	return string(m[1])
}

// baseUserHomes are the non-root users base images bring, by base name and
// uid, with their home directories.
var baseUserHomes = map[string]map[string]string{
	"node":                              {"1000": "/home/node"},
	"gcr.io/distroless/static-debian12": {"65532": "/home/nonroot"},
}

// checkUserHome: the USER an example runs as has a home directory, and
// HOME names it: libraries that keep caches or settings under ~ fail
// without one. The user is the base image's own (baseUserHomes) or one a
// RUN useradd creates with --create-home, its group by the same number.
func checkUserHome(t *testing.T, s *stage) {
	t.Helper()
	uid, gid, _ := strings.Cut(s.one(t, "USER").args, ":")
	var home string
	for _, in := range s.all("ENV") {
		for _, f := range strings.Fields(in.args) {
			if v, ok := strings.CutPrefix(f, "HOME="); ok {
				home = v
			}
		}
	}
	if home == "" {
		t.Errorf("no ENV HOME for USER %s", uid)
	}
	image := strings.SplitN(s.base, ":", 2)[0]
	if h, ok := baseUserHomes[image][uid]; ok {
		if home != h {
			t.Errorf("ENV HOME=%s, want %s, the home of %s's uid %s", home, h, image, uid)
		}
		return
	}
	var created bool
	for _, in := range s.all("RUN") {
		for _, cmd := range regexp.MustCompile(`&&|;`).Split(in.args, -1) {
			f := strings.Fields(cmd)
			if len(f) == 0 || f[0] != "useradd" || !slices.Contains(f, "--uid") && !slices.Contains(f, "-u") {
				continue
			}
			opt := func(long, short string) string {
				for i := 0; i+1 < len(f); i++ {
					if f[i] == long || f[i] == short {
						return f[i+1]
					}
				}
				return ""
			}
			if opt("--uid", "-u") != uid {
				continue
			}
			created = true
			if !slices.Contains(f, "--create-home") && !slices.Contains(f, "-m") || slices.Contains(f, "--no-create-home") || slices.Contains(f, "-M") {
				t.Errorf("line %d: useradd of uid %s without --create-home", in.line, uid)
			}
			if d := opt("--home-dir", "-d"); d != home {
				t.Errorf("line %d: useradd --home-dir %q, but ENV HOME=%s", in.line, d, home)
			}
			if g := opt("--gid", "-g"); gid != "" && g != gid {
				t.Errorf("line %d: useradd --gid %q, but USER's group is %s", in.line, g, gid)
			}
		}
	}
	if !created {
		t.Errorf("USER %s: not created by a RUN useradd, nor a user of the base image %s", uid, s.base)
	}
}

// TestDockerignore: every file the image's build reads survives
// .dockerignore, and the usual bulk does not.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			if strings.HasPrefix(l, "!") {
				t.Fatalf(".dockerignore: exceptions (%s) are not supported by this check", l)
			}
			patterns = append(patterns, l)
		}
	}
	needed := []string{"go.mod", "go.sum"}
	out, err := exec.Command("go", "list", "-e", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{end}}{{end}}`,
		"../cmd/sidecar").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, _ := filepath.Abs("..")
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		rel, _ := filepath.Rel(root, f[0])
		for _, name := range f[1:] {
			needed = append(needed, filepath.ToSlash(filepath.Join(rel, name)))
		}
	}
	if len(needed) < 10 {
		t.Fatalf("go list found only %v", needed)
	}
	for _, p := range needed {
		if imagetest.Ignored(patterns, p) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", p)
		}
	}
	for _, p := range []string{".git/config", ".cache/adk/x", "bin/sidecar", "testdata/agents/a.py",
		"upstream/testdata/x", "examples/node/node_modules/x/index.js", "Dockerfile",
		"dist/sidecar_v1.0.0_linux_amd64.tar.gz"} {
		if !imagetest.Ignored(patterns, p) {
			t.Errorf(".dockerignore lets %s into the context", p)
		}
	}
}

// TestImageBinary checks a binary built as the Dockerfile builds it:
// deploy/image-check.sh sets SIDECAR_IMAGE_CHECK_BINARY and runs this
// test; `go test` alone skips it.
func TestImageBinary(t *testing.T) {
	path := os.Getenv("SIDECAR_IMAGE_CHECK_BINARY")
	if path == "" {
		t.Skip("SIDECAR_IMAGE_CHECK_BINARY not set: run deploy/image-check.sh")
	}
	if err := checkStaticELF(path); err != nil {
		t.Error(err)
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("build info: %v", err)
	}
	if want := "github.com/sidecar-dev/sidecar/cmd/sidecar"; bi.Path != want {
		t.Errorf("build info path %q, want %q", bi.Path, want)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" {
		t.Errorf("built with CGO_ENABLED=%q, want 0", settings["CGO_ENABLED"])
	}
	if settings["-trimpath"] != "true" {
		t.Errorf("built without -trimpath (settings %v)", settings)
	}
	if settings["GOOS"] != "linux" {
		t.Errorf("built for GOOS=%q, want linux", settings["GOOS"])
	}
	// With -trimpath, Go leaves -ldflags out of the build info (they may
	// hold paths), so the stamped version is checked by running
	// `sidecar version`, and -s -w by checkStaticELF (no symbols, no DWARF).
	if _, ok := settings["-ldflags"]; ok {
		t.Errorf("build info records -ldflags %q: not a -trimpath build", settings["-ldflags"])
	}
}

// checkStaticELF: no program interpreter, no dynamic section, no shared
// libraries: the kernel can run it on a base without libc. Also stripped
// (-s -w): no symbol table, no DWARF.
func checkStaticELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not an ELF executable: %w", path, err)
	}
	defer f.Close()
	var problems []string
	if f.Type != elf.ET_EXEC {
		problems = append(problems, fmt.Sprintf("ELF type %v, want ET_EXEC (a position-independent executable needs a loader)", f.Type))
	}
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			problems = append(problems, "has a PT_INTERP program header (a dynamic loader)")
		case elf.PT_DYNAMIC:
			problems = append(problems, "has a PT_DYNAMIC program header")
		}
	}
	for _, name := range []string{".interp", ".dynamic", ".debug_info", ".zdebug_info"} {
		if f.Section(name) != nil {
			problems = append(problems, "has a "+name+" section")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		problems = append(problems, fmt.Sprintf("needs shared libraries %v", libs))
	}
	if _, err := f.Symbols(); !errors.Is(err, elf.ErrNoSymbols) {
		problems = append(problems, "has a symbol table (not built with -s)")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s", path, strings.Join(problems, "; "))
	}
	return nil
}

// TestCheckStaticELF makes sure the check can fail: the test binary itself
// (built with symbols) and a non-ELF file are refused.
func TestCheckStaticELF(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	if err := checkStaticELF(self); err == nil {
		t.Error("the test binary (with symbols) passed the stripped static check")
	}
	if err := checkStaticELF("../go.mod"); err == nil {
		t.Error("go.mod passed as an ELF executable")
	}
	if _, err := os.Stat("/bin/sh"); err == nil {
		if real, err := filepath.EvalSymlinks("/bin/sh"); err == nil {
			if err := checkStaticELF(real); err == nil {
				t.Errorf("%s (dynamically linked) passed", real)
			}
		}
	}
}

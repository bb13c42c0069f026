package imagetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Builder builds Dockerfiles on one build context.
type Builder struct {
	// Context is the build context's folder. Its .dockerignore, if any,
	// leaves files out: a COPY naming one is an error.
	Context string

	// Dir is where the stages' folders go: a t.TempDir().
	Dir string

	// Path is the $PATH of the RUNs and of the image's command. Default:
	// this process's.
	Path string

	// NodeModules is the node_modules folder that stands for `npm ci`,
	// which is not run (a test installs nothing). If empty, a RUN npm ci
	// is an error.
	NodeModules string

	// Images stands in for the images a FROM or a COPY --from names that
	// are not stages of the Dockerfile: by image name, its files (the path
	// in the image to the file on this machine). A stage FROM such an
	// image begins with its files; another base begins empty, its
	// programs this machine's.
	Images map[string]map[string]string
}

// Image is a built Dockerfile's final stage.
type Image struct {
	Root       string   // the folder standing for its /
	Workdir    string   // its WORKDIR, in the image
	Env        []string // the environment its command runs with
	User       string   // its USER, as written
	Entrypoint []string // exec form
	Cmd        []string // exec form
	path       string   // the $PATH of Env
}

// Path is where the image's path p (absolute, or relative to its WORKDIR)
// is on this machine.
func (img *Image) Path(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Join(img.Root, p)
	}
	return filepath.Join(img.Root, img.Workdir, p)
}

// stage is a stage being built.
type stage struct {
	name, root, workdir string
	env                 []string
}

func (s *stage) path(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Join(s.root, p)
	}
	return filepath.Join(s.root, s.workdir, p)
}

// npmCI is the RUN that NodeModules stands for.
var npmCI = regexp.MustCompile(`^npm ci(\s|$)`)

// notRun are the RUNs a build on this machine leaves out: the user's
// creation needs root, and pip's packages stand installed on the machine
// (a test installs nothing).
var notRun = regexp.MustCompile(`^(groupadd|useradd|pip3? install)\s`)

// goBuildOut is a `go build -o` to an absolute path, which is under the
// stage's folder here.
var goBuildOut = regexp.MustCompile(`(\bgo build\b.*\s-o\s+)(/\S*)`)

// Build builds d's stages in folders of b.Dir, in order, and returns the
// last one. Its errors name the Dockerfile's line.
func (b *Builder) Build(ctx context.Context, d *Dockerfile) (*Image, error) {
	ignore, err := ReadIgnore(filepath.Join(b.Context, ".dockerignore"))
	if err != nil {
		return nil, err
	}
	path := b.Path
	if path == "" {
		path = os.Getenv("PATH")
	}
	goenv, err := exec.CommandContext(ctx, "go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	gocache, gomodcache, _ := strings.Cut(strings.TrimSpace(string(goenv)), "\n")
	// What a RUN finds in a build stage on this machine: its programs,
	// npm and Go offline with their caches, a home of its own.
	baseEnv := []string{"PATH=" + path, "HOME=" + filepath.Join(b.Dir, "home"),
		"npm_config_cache=" + filepath.Join(b.Dir, "npm-cache"), "npm_config_offline=true", "npm_config_update_notifier=false",
		"GOCACHE=" + gocache, "GOMODCACHE=" + gomodcache, "GOPROXY=off", "GOTOOLCHAIN=local"}

	built := map[string]*stage{}
	images := map[string]*stage{}
	// source is the stage or the image a COPY --from or a FROM names.
	source := func(name string) (*stage, error) {
		if s := built[name]; s != nil {
			return s, nil
		}
		if s := images[name]; s != nil {
			return s, nil
		}
		files, ok := b.Images[name]
		if !ok {
			return nil, fmt.Errorf("no stage or image %s: an image the test stands in for is in Builder.Images", name)
		}
		s := &stage{root: filepath.Join(b.Dir, fmt.Sprintf("image%d", len(images))), workdir: "/"}
		for p, file := range files {
			if err := os.MkdirAll(filepath.Dir(s.path(p)), 0o755); err != nil {
				return nil, err
			}
			if err := os.Symlink(file, s.path(p)); err != nil {
				return nil, err
			}
		}
		images[name] = s
		return s, nil
	}

	img := &Image{path: path}
	var cur *stage
	for i, st := range d.Stages {
		at := func(in Instr, err error) error {
			return fmt.Errorf("%s:%d: %s %s: %w", d.Name, in.Line, in.Cmd, in.Args, err)
		}
		cur = &stage{name: st.Name, root: filepath.Join(b.Dir, fmt.Sprintf("stage%d", i)), workdir: "/", env: baseEnv}
		if err := os.MkdirAll(cur.root, 0o755); err != nil {
			return nil, err
		}
		if _, ok := b.Images[st.Base]; ok {
			from, err := source(st.Base)
			if err != nil {
				return nil, err
			}
			if err := copyPath(from.root+"/.", cur.root, nil); err != nil {
				return nil, fmt.Errorf("%s:%d: FROM %s: %w", d.Name, st.Line, st.Base, err)
			}
		}
		*img = Image{Root: cur.root, Workdir: "/", path: path}
		for _, in := range st.Instrs {
			switch in.Cmd {
			case "WORKDIR":
				cur.workdir = cur.path(in.Args)[len(cur.root):]
				if err := os.MkdirAll(cur.path("."), 0o755); err != nil { // as Docker's WORKDIR does
					return nil, at(in, err)
				}
			case "ENV":
				for k, v := range envPairs(in.Args) {
					if k == "HOME" { // a home in the image: useradd --create-home makes it
						v = cur.path(v)
						if err := os.MkdirAll(v, 0o755); err != nil {
							return nil, at(in, err)
						}
					}
					cur.env = append(cur.env[:len(cur.env):len(cur.env)], k+"="+v)
				}
			case "COPY":
				if err := b.copy(cur, in.Args, ignore, source); err != nil {
					return nil, at(in, err)
				}
			case "RUN":
				if err := b.run(ctx, cur, in.Args); err != nil {
					return nil, at(in, err)
				}
			case "ENTRYPOINT", "CMD":
				words, err := execForm(d.Name, in)
				if err != nil {
					return nil, err
				}
				if in.Cmd == "ENTRYPOINT" {
					img.Entrypoint = words
				} else {
					img.Cmd = words
				}
			case "USER":
				img.User = in.Args
			case "ARG", "EXPOSE", "LABEL":
			default:
				return nil, at(in, errors.New("imagetest does not build this instruction"))
			}
		}
		if st.Name != "" {
			built[st.Name] = cur
		}
	}
	img.Workdir, img.Env = cur.workdir, cur.env
	for _, kv := range img.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			img.path = v
		}
	}
	return img, nil
}

// envPairs is ENV's variables: KEY=VALUE ones, or the one KEY VALUE.
func envPairs(args string) map[string]string {
	out := map[string]string{}
	if k, v, ok := strings.Cut(args, " "); ok && !strings.Contains(k, "=") {
		out[k] = strings.TrimSpace(v)
		return out
	}
	for _, kv := range strings.Fields(args) {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = strings.Trim(v, `"`)
	}
	return out
}

// run runs a RUN's command in the stage's WORKDIR, but for npm ci
// (NodeModules stands for it) and those notRun leaves out.
func (b *Builder) run(ctx context.Context, s *stage, command string) error {
	switch {
	case notRun.MatchString(command):
		return nil
	case npmCI.MatchString(command):
		if b.NodeModules == "" {
			return errors.New("no node_modules stands for npm ci: set Builder.NodeModules")
		}
		return copyPath(b.NodeModules+"/.", s.path("node_modules"), nil)
	}
	command = goBuildOut.ReplaceAllString(command, "${1}"+s.root+"${2}")
	run := exec.CommandContext(ctx, "sh", "-c", command)
	run.Dir, run.Env = s.path("."), s.env
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return err
	}
	if out, err := run.CombinedOutput(); err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

// copy is a COPY's args into the stage s: sources from the build context,
// or with --from from the stage or image source finds, as Docker copies
// them (a folder's contents; a wildcard may match nothing, a plain name
// must be there).
func (b *Builder) copy(s *stage, args string, ignore []string, source func(string) (*stage, error)) error {
	var from string
	var words []string
	for _, f := range strings.Fields(args) {
		if v, ok := strings.CutPrefix(f, "--from="); ok {
			from = v
		} else if !strings.HasPrefix(f, "--") {
			words = append(words, f)
		}
	}
	if len(words) < 2 {
		return errors.New("want sources and a destination")
	}
	srcs, dest := words[:len(words)-1], words[len(words)-1]
	root, where := b.Context, "the build context"
	if from != "" {
		st, err := source(from)
		if err != nil {
			return err
		}
		root, where = st.root, from
	}
	var names []string // matched, relative to root
	for _, src := range srcs {
		matches, err := filepath.Glob(filepath.Join(root, src))
		if err != nil {
			return err
		}
		if len(matches) == 0 && !strings.ContainsAny(src, "*?[") {
			return fmt.Errorf("no %s in %s", src, where)
		}
		for _, m := range matches {
			rel, err := filepath.Rel(root, m)
			if err != nil {
				return err
			}
			if from == "" && Ignored(ignore, filepath.ToSlash(rel)) {
				return fmt.Errorf("the context's .dockerignore leaves %s out", rel)
			}
			names = append(names, rel)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("no %s in %s", strings.Join(srcs, " "), where)
	}
	to := s.path(dest)
	fi, err := os.Stat(to)
	toDir := strings.HasSuffix(dest, "/") || filepath.Base(dest) == "." || len(names) > 1 || err == nil && fi.IsDir()
	for _, name := range names {
		var skip func(string) bool
		if from == "" && name != "." {
			skip = func(rel string) bool { return Ignored(ignore, filepath.ToSlash(filepath.Join(name, rel))) }
		} else if from == "" {
			skip = func(rel string) bool { return Ignored(ignore, filepath.ToSlash(rel)) }
		}
		src := filepath.Join(root, name)
		fi, err := os.Stat(src)
		switch {
		case err != nil:
			return err
		case fi.IsDir(): // its contents, as COPY copies a folder
			err = copyPath(src+"/.", to, skip)
		case toDir:
			err = copyPath(src, filepath.Join(to, filepath.Base(src)), nil)
		default:
			err = copyPath(src, to, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyPath copies the file, link or folder src to dest; a src ending in
// "/." copies the folder's contents into dest, less the paths (relative to
// it) skip reports.
func copyPath(src, dest string, skip func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel != "." && skip != nil && skip(rel) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dest, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			os.Remove(to)
			return os.Symlink(target, to)
		default:
			return copyFile(p, to, info.Mode().Perm())
		}
	})
}

func copyFile(src, dest string, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ReadIgnore is a .dockerignore's patterns: none when there is no file.
// Exceptions ("!") are an error: Ignored does not take them.
func ReadIgnore(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			if strings.HasPrefix(l, "!") {
				return nil, fmt.Errorf("%s: the exception %s is not supported", path, l)
			}
			patterns = append(patterns, l)
		}
	}
	return patterns, nil
}

// Ignored reports whether .dockerignore's patterns leave path
// (slash-separated, relative to the context) out of the build context: a
// pattern matches the path or one of its parent directories, as Docker's
// do ("**" any number of directories, "*" and "?" within one).
func Ignored(patterns []string, path string) bool {
	for _, p := range patterns {
		re := regexp.QuoteMeta(strings.TrimPrefix(p, "/"))
		re = strings.ReplaceAll(re, `\*\*/`, `(.*/)?`)
		re = strings.ReplaceAll(re, `\*\*`, `.*`)
		re = strings.ReplaceAll(re, `\*`, `[^/]*`)
		re = strings.ReplaceAll(re, `\?`, `[^/]`)
		rx := regexp.MustCompile("^" + re + "$")
		for prefix := path; ; {
			if rx.MatchString(prefix) {
				return true
			}
			i := strings.LastIndex(prefix, "/")
			if i < 0 {
				break
			}
			prefix = prefix[:i]
		}
	}
	return false
}

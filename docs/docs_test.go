package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// binary is the sidecar, built once for the tests that run it.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sidecar-docs")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sidecar")
	build := exec.Command("go", "build", "-o", binary, "../cmd/sidecar")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the sidecar:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// pages are the documentation pages whose examples are run: the README,
// every page here and the deploy guides. Paths are relative to this
// directory.
func pages(t *testing.T) []string {
	t.Helper()
	ps, err := filepath.Glob("*.md")
	if err != nil || len(ps) == 0 {
		t.Fatalf("no pages in docs/: %v", err)
	}
	guides, _ := filepath.Glob("../deploy/*/README.md")
	return append(append([]string{"../README.md"}, ps...), guides...)
}

// linked are the pages whose links are checked: the pages, and the other
// Markdown files of the repository a page may link to.
func linked(t *testing.T) []string {
	t.Helper()
	return append(pages(t), "../BENCHMARKS.md")
}

// block is one fenced code block of a page.
type block struct {
	page string
	line int    // of the opening fence, 1-based
	lang string // the fence's info string: sh, yaml, json…
	text []string
	// skip is the reason given by a `<!-- doctest: skip: REASON -->`
	// line just before the fence, or "".
	skip string
	// mark is any other `<!-- doctest: MARK -->` line just before it.
	mark string
	// config is the last yaml block above it on its page, nil for none.
	config []string
	// agents are the directories (from the repository's root) of the
	// agents the block belongs to: those of the last `<!-- doctest: agent:
	// DIR… -->` line above it on its page, or none for the examples'
	// shared sidecar.
	agents []string
}

func (b block) name() string {
	name := filepath.Base(b.page)
	if name == "README.md" && filepath.Dir(b.page) != ".." {
		name = filepath.Base(filepath.Dir(b.page)) + "/" + name // a deploy guide
	}
	return fmt.Sprintf("%s:%d", name, b.line)
}

var (
	docMark   = regexp.MustCompile(`^<!-- doctest: (.+) -->$`)
	agentMark = regexp.MustCompile(`^<!-- doctest: agent: (.+) -->$`)
)

// blocks are a page's fenced code blocks.
func blocks(t *testing.T, page string) []block {
	t.Helper()
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	var config []string
	var agents []string
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		if cur != nil {
			if strings.HasPrefix(l, "```") {
				out = append(out, *cur)
				if cur.lang == "yaml" {
					config = cur.text
				}
				cur = nil
				continue
			}
			cur.text = append(cur.text, l)
			continue
		}
		if m := agentMark.FindStringSubmatch(l); m != nil {
			agents = strings.Fields(m[1])
			continue
		}
		if lang, ok := strings.CutPrefix(l, "```"); ok {
			cur = &block{page: page, line: i + 1, lang: strings.TrimSpace(lang), config: config, agents: agents}
			if i > 0 {
				if m := docMark.FindStringSubmatch(lines[i-1]); m != nil && !agentMark.MatchString(lines[i-1]) {
					if reason, ok := strings.CutPrefix(m[1], "skip: "); ok {
						cur.skip = reason
					} else {
						cur.mark = m[1]
					}
				}
			}
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a code block never closed", page, cur.line)
	}
	return out
}

// matches reports whether got (output lines) is what want (expected lines)
// describes: line by line, exact but for trailing spaces, where "…" in a
// line matches any text and a line that is only "…" any number of lines.
func matches(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "…" {
		for i := 0; i <= len(got); i++ {
			if matches(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && lineMatches(want[0], got[0]) && matches(want[1:], got[1:])
}

func lineMatches(want, got string) bool {
	parts := strings.Split(strings.TrimRight(want, " "), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(strings.TrimRight(got, " \r"))
}

// TestMatches holds the comparison the examples rely on.
func TestMatches(t *testing.T) {
	tests := []struct {
		want, got string
		ok        bool
	}{
		{"a\nb", "a\nb", true},
		{"a\nb", "a\nb\nc", false},
		{"a\n…", "a\nb\nc", true},
		{"a\n…", "a", true},
		{"…\nc", "a\nb\nc", true},
		{"{\"id\":\"…\"}", "{\"id\":\"x-1\"}", true},
		{"{\"id\":\"…\"}", "{\"id\":1}", false},
		{"a  ", "a", true},
		{"a", "b", false},
	}
	for _, tt := range tests {
		if got := matches(strings.Split(tt.want, "\n"), strings.Split(tt.got, "\n")); got != tt.ok {
			t.Errorf("matches(%q, %q) = %v, want %v", tt.want, tt.got, got, tt.ok)
		}
	}
}

// TestMethodMaps runs every yaml block of the pages through `sidecar
// validate`, written as sidecar.yaml in a directory of its own. A block
// with `# validate: fails: ERROR` lines must exit 1 and print each ERROR
// (matched as a whole line, "…" for any text); any other must be valid.
func TestMethodMaps(t *testing.T) {
	n := 0
	for _, page := range pages(t) {
		for _, b := range blocks(t, page) {
			if b.lang != "yaml" {
				continue
			}
			n++
			t.Run(b.name(), func(t *testing.T) {
				if b.skip != "" {
					t.Skip(b.skip)
				}
				var fails []string
				for _, l := range b.text {
					if e, ok := strings.CutPrefix(l, "# validate: fails: "); ok {
						fails = append(fails, e)
					}
				}
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "sidecar.yaml"), []byte(strings.Join(b.text, "\n")+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, binary, "validate", "--config", "sidecar.yaml")
				cmd.Dir = dir
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				var exit *exec.ExitError
				if err != nil && !errors.As(err, &exit) {
					t.Fatal(err)
				}
				if len(fails) == 0 {
					if err != nil {
						t.Errorf("%s: sidecar validate: %v\n%s(mark an example that must fail with # validate: fails: ERROR)", b.name(), err, stderr.String())
					}
					return
				}
				if exit == nil || exit.ExitCode() != 1 {
					t.Errorf("%s: sidecar validate = %v, want exit 1 (the example is marked # validate: fails)\n%s", b.name(), err, stdout.String())
				}
				got := lines(stderr.String())
				for _, f := range fails {
					found := false
					for _, g := range got {
						found = found || lineMatches(f, g)
					}
					if !found {
						t.Errorf("%s: sidecar validate does not print\n  %s\nit prints\n  %s", b.name(), f, strings.Join(got, "\n  "))
					}
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no yaml blocks in the pages")
	}
}

// lines are s's lines, without a trailing newline and trailing blank lines.
func lines(s string) []string {
	ls := strings.Split(strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n"), "\n")
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6} (.+)$`)
)

// TestLinks: every relative link of the pages (and of the pages they link
// to) names a file that exists, and every #anchor a heading of its page.
func TestLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a := map[string]bool{}
		src, err := os.ReadFile(page)
		if err == nil {
			fence := false
			for _, l := range strings.Split(string(src), "\n") {
				if strings.HasPrefix(l, "```") {
					fence = !fence
				}
				if m := heading.FindStringSubmatch(l); m != nil && !fence {
					a[slug(m[1])] = true
				}
			}
		}
		anchors[page] = a
		return a
	}
	for _, page := range linked(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		fence := false
		for i, l := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(l, "```") {
				fence = !fence
			}
			if fence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %s: %v", page, i+1, target, err)
						continue
					}
				}
				if anchor != "" && !anchorsOf(dest)[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", page, i+1, target, dest, anchor)
				}
			}
		}
	}
}

// slug is GitHub's anchor for a heading: lower case, spaces as hyphens,
// punctuation other than hyphens and underscores dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && r != '…' && r != '—' && r != '→':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestHelpNamesPages: `sidecar help` and each command's --help name the
// pages that document them, and those pages exist.
func TestHelpNamesPages(t *testing.T) {
	page := regexp.MustCompile(`docs/[a-z0-9-]+\.md`)
	for _, args := range [][]string{{"help"}, {"call", "--help"}, {"dev", "--help"}, {"validate", "--help"}, {"deploy-request", "--help"}, {"init", "--help"}} {
		out, err := exec.Command(binary, args...).Output()
		if err != nil {
			t.Fatalf("sidecar %s: %v", strings.Join(args, " "), err)
		}
		named := page.FindAllString(string(out), -1)
		if len(named) == 0 {
			t.Errorf("sidecar %s names no docs page:\n%s", strings.Join(args, " "), out)
		}
		for _, p := range named {
			if _, err := os.Stat(filepath.Join("..", p)); err != nil {
				t.Errorf("sidecar %s names %s: %v", strings.Join(args, " "), p, err)
			}
		}
	}
}

// TestCitedTestsExist: every test the pages cite as holding a behaviour
// (`TestX`, `FuzzX`, `TestX*` for a family) is a test of the repository,
// so a renamed or deleted test leaves no page pointing at nothing.
func TestCitedTestsExist(t *testing.T) {
	var funcs []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == ".cache") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
				funcs = append(funcs, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range linked(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(src), "\n") {
			for _, m := range citedTest.FindAllStringSubmatch(l, -1) {
				name, family := strings.CutSuffix(m[1], "*")
				found := false
				for _, f := range funcs {
					found = found || f == name || family && strings.HasPrefix(f, name)
				}
				if !found {
					t.Errorf("%s:%d: cites %s, which no _test.go defines", page, i+1, m[1])
				}
			}
		}
	}
}

var (
	testFunc  = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)\w+)\(`)
	citedTest = regexp.MustCompile("`((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*\\*?)`")
)

// appendix is the page that says which tests hold what the user pages
// claim; it and development.md are the pages written for contributors.
const appendix = "verification.md"

// TestUserPagesNameNoTests: the pages written for users (the README, the
// deploy guides and every page here but development.md and the appendix)
// name no test in their prose, so a reader meets what the sidecar does, not how it is
// checked; the tests that hold a page's claims are the appendix's rows.
func TestUserPagesNameNoTests(t *testing.T) {
	named := regexp.MustCompile(`\b(?:Test|Fuzz)[A-Z]\w*`)
	for _, page := range pages(t) {
		if page == "development.md" || page == appendix {
			continue
		}
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		fence := false
		for i, l := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(l, "```") {
				fence = !fence
				continue
			}
			if fence {
				continue
			}
			for _, m := range named.FindAllString(l, -1) {
				t.Errorf("%s:%d: names the test %s: a user page says what holds, %s says which test holds it", page, i+1, m, appendix)
			}
		}
	}
}

// TestAppendixRows: every row of the appendix's tables names the claim's
// page and section as a link (TestLinks holds the link to a heading that
// exists) and at least one test (TestCitedTestsExist holds that it exists),
// so a row cannot lose its claim or its test unnoticed.
func TestAppendixRows(t *testing.T) {
	src, err := os.ReadFile(appendix)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	ls := strings.Split(string(src), "\n")
	for i, l := range ls {
		header := i+1 < len(ls) && strings.HasPrefix(ls[i+1], "|---")
		if !strings.HasPrefix(l, "| ") || header {
			continue
		}
		rows++
		if !regexp.MustCompile(`\]\([a-z0-9-]+\.md#[a-z0-9_-]+\)|\]\(\.\./README\.md#[a-z0-9_-]+\)`).MatchString(l) {
			t.Errorf("%s:%d: the row links no page#section", appendix, i+1)
		}
		if !citedTest.MatchString(l) {
			t.Errorf("%s:%d: the row names no test", appendix, i+1)
		}
	}
	if rows == 0 {
		t.Fatalf("%s: no rows", appendix)
	}
}

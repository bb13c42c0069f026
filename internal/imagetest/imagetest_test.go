package imagetest

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	d, err := Parse("Dockerfile", `# syntax=docker/dockerfile:1
ARG BASE=golang:1.26
FROM --platform=$BUILDPLATFORM ${BASE} AS build
ARG TARGETOS VERSION=dev
# a comment between
RUN echo a \
 && echo b

from debian AS final
ENTRYPOINT ["x"]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Stages) != 2 {
		t.Fatalf("Parse: %d stages, want 2", len(d.Stages))
	}
	b := d.Stages[0]
	if b.Base != "golang:1.26" || b.Name != "build" || b.Platform != "$BUILDPLATFORM" || b.Line != 3 {
		t.Errorf("Parse: first stage %+v, want golang:1.26 AS build, --platform=$BUILDPLATFORM, line 3", b)
	}
	if want := map[string]string{"TARGETOS": "", "VERSION": "dev"}; !reflect.DeepEqual(b.Args, want) {
		t.Errorf("Parse: the stage's ARGs %v, want %v", b.Args, want)
	}
	if want := (Instr{Cmd: "RUN", Args: "echo a  && echo b", Line: 6}); !reflect.DeepEqual(b.All("RUN"), []Instr{want}) {
		t.Errorf("Parse: RUNs %+v, want %+v", b.All("RUN"), want)
	}
	if d.Stage("final") != d.Stages[1] || d.Stage("nope") != nil || d.Stage("") != nil {
		t.Error("Stage: want the stage by its AS name, nil for another")
	}

	for _, tt := range []struct{ text, want string }{
		{"RUN x\nFROM y\n", "Dockerfile:1: RUN before the first FROM"},
		{"FROM y\nRUN x \\\n", "Dockerfile:2: the file ends in a continuation line"},
		{"# nothing\n", "Dockerfile: no FROM"},
	} {
		if _, err := Parse("Dockerfile", tt.text); err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) = %v, want %s", tt.text, err, tt.want)
		}
	}
}

// write makes the files (name: text) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// build builds text on a context of files, with a sidecar image whose
// /sidecar is a file of the test.
func build(t *testing.T, files map[string]string, text string) (*Image, error) {
	t.Helper()
	ctxDir, bin := t.TempDir(), filepath.Join(t.TempDir(), "sidecar")
	write(t, ctxDir, files)
	write(t, filepath.Dir(bin), map[string]string{"sidecar": "the sidecar\n"})
	modules := filepath.Join(t.TempDir(), "node_modules")
	write(t, modules, map[string]string{"left-pad/index.js": "module.exports = 1\n"})
	d, err := Parse("Dockerfile", text)
	if err != nil {
		t.Fatal(err)
	}
	b := Builder{Context: ctxDir, Dir: t.TempDir(), NodeModules: modules,
		Images: map[string]map[string]string{"sidecar:latest": {"/sidecar": bin}}}
	return b.Build(context.Background(), d)
}

// TestBuild: COPY as Docker copies (a folder's contents, wildcards, the
// context less .dockerignore, from a stage and from an image), RUN in the
// WORKDIR with npm ci and go build -o substituted, ENV with HOME in the
// image, and the image's command found in it.
func TestBuild(t *testing.T) {
	img, err := build(t, map[string]string{
		".dockerignore":   "node_modules\n**/*.log\n",
		"package.json":    "{}\n",
		"package-a.json":  "{}\n",
		"src/a.ts":        "a\n",
		"src/debug.log":   "left out\n",
		"node_modules/x":  "left out\n",
		"go.mod":          "module example.com/x\n\ngo 1.26\n",
		"cmd/hello/hi.go": "package main\n\nfunc main() { println(\"hi\") }\n",
	}, `ARG SIDECAR_IMAGE=sidecar:latest
FROM ${SIDECAR_IMAGE} AS sidecar

FROM node AS build
WORKDIR /app
COPY package*.json go.mod go.sum* ./
RUN npm ci --no-audit
COPY . ./all
COPY src ./src
COPY cmd ./cmd
RUN ls src > listed && mkdir -p /tmp && echo built > dist.txt
RUN go build -o /out/hello ./cmd/hello

FROM debian
ENV NODE_ENV=production HOME=/home/agent
WORKDIR /srv
COPY --from=build /app/dist.txt /app/listed ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /out/hello /usr/local/bin/hello
COPY --from=sidecar /sidecar /sidecar
RUN groupadd --gid 10001 agent && useradd --uid 10001 agent
USER 10001:10001
ENTRYPOINT ["hello", "--config", "/sidecar"]
CMD ["/nothing"]
`)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"dist.txt":                       "built\n",
		"listed":                         "a.ts\n",
		"node_modules/left-pad/index.js": "module.exports = 1\n",
		"/sidecar":                       "the sidecar\n",
		"/srv/dist.txt":                  "built\n",
	} {
		b, err := os.ReadFile(img.Path(p))
		if err != nil || string(b) != want {
			t.Errorf("the image's %s = %q, %v; want %q", p, b, err, want)
		}
	}
	build := filepath.Join(filepath.Dir(img.Root), "stage1", "app")
	for _, p := range []string{"package-a.json", "all/src/a.ts", "src/a.ts", "all/package.json"} {
		if _, err := os.Stat(filepath.Join(build, p)); err != nil {
			t.Errorf("the build stage's /app/%s: %v", p, err)
		}
	}
	for _, p := range []string{"all/node_modules", "all/src/debug.log", "src/debug.log"} {
		if _, err := os.Stat(filepath.Join(build, p)); err == nil {
			t.Errorf("the build stage has /app/%s, which .dockerignore leaves out", p)
		}
	}
	if fi, err := os.Stat(img.Path("/home/agent")); err != nil || !fi.IsDir() {
		t.Errorf("the image's HOME /home/agent: %v, want a folder", err)
	}
	env := strings.Join(img.Env, "\n")
	for _, want := range []string{"NODE_ENV=production", "HOME=" + img.Path("/home/agent")} {
		if !strings.Contains(env, want+"\n") && !strings.HasSuffix(env, want) {
			t.Errorf("the image's environment lacks %s:\n%s", want, env)
		}
	}
	if img.Workdir != "/srv" || img.User != "10001:10001" {
		t.Errorf("the image's WORKDIR %s, USER %s; want /srv, 10001:10001", img.Workdir, img.User)
	}
	argv, err := img.Argv()
	if want := []string{img.Path("/usr/local/bin/hello"), "--config", img.Path("/sidecar"), "/nothing"}; err != nil || !reflect.DeepEqual(argv, want) {
		t.Errorf("Argv() = %q, %v; want %q", argv, err, want)
	}
}

// TestBuildErrors: what Docker's build would refuse, and what this
// machine cannot stand in for, is an error naming the line.
func TestBuildErrors(t *testing.T) {
	files := map[string]string{".dockerignore": "secret\n", "secret": "x\n", "a.txt": "a\n"}
	for _, tt := range []struct{ text, want string }{
		{"FROM x\nCOPY nope.txt ./\n", "Dockerfile:2: COPY nope.txt ./: no nope.txt in the build context"},
		{"FROM x\nCOPY *.md ./\n", "Dockerfile:2: COPY *.md ./: no *.md in the build context"},
		{"FROM x\nCOPY secret ./\n", "Dockerfile:2: COPY secret ./: the context's .dockerignore leaves secret out"},
		{"FROM x\nCOPY --from=y /a /a\n", "Dockerfile:2: COPY --from=y /a /a: no stage or image y: an image the test stands in for is in Builder.Images"},
		{"FROM x AS one\nFROM x\nCOPY --from=one /a.txt ./\n", "Dockerfile:3: COPY --from=one /a.txt ./: no /a.txt in one"},
		{"FROM x\nRUN exit 3\n", "Dockerfile:2: RUN exit 3: exit status 3\n"},
		{"FROM x\nHEALTHCHECK NONE\n", "Dockerfile:2: HEALTHCHECK NONE: imagetest does not build this instruction"},
		{"FROM x\nCMD node agent.js\n", `Dockerfile:2: CMD node agent.js: want the exec (JSON) form: invalid character 'o' in literal null (expecting 'u')`},
		{"FROM x\nCOPY a.txt\n", "Dockerfile:2: COPY a.txt: want sources and a destination"},
	} {
		if _, err := build(t, files, tt.text); err == nil || err.Error() != tt.want {
			t.Errorf("Build(%q) = %v, want %s", tt.text, err, tt.want)
		}
	}

	d, err := Parse("Dockerfile", "FROM node\nRUN npm ci\n")
	if err != nil {
		t.Fatal(err)
	}
	b := Builder{Context: t.TempDir(), Dir: t.TempDir()}
	if _, err := b.Build(context.Background(), d); err == nil || !strings.Contains(err.Error(), "no node_modules stands for npm ci") {
		t.Errorf("Build of RUN npm ci without NodeModules = %v, want an error naming Builder.NodeModules", err)
	}

	img := &Image{Root: t.TempDir(), Workdir: "/", Entrypoint: []string{"/sidecar"}}
	if _, err := img.Argv(); err == nil || err.Error() != "the image's command /sidecar: not in the image" {
		t.Errorf("Argv() of a missing /sidecar = %v, want it not in the image", err)
	}
	img = &Image{Root: t.TempDir(), Workdir: "/", Cmd: []string{"no-such-program"}, path: t.TempDir()}
	if _, err := img.Argv(); err == nil || !strings.Contains(err.Error(), "nor on its $PATH") {
		t.Errorf("Argv() of a program nowhere = %v, want it on no $PATH", err)
	}
}

func TestIgnored(t *testing.T) {
	patterns := []string{"node_modules", "/dist", "**/*.log", "a?c"}
	for _, tt := range []struct {
		path string
		want bool
	}{
		{"node_modules", true}, {"node_modules/x/index.js", true}, {"dist/agent.js", true},
		{"src/x.log", true}, {"x.log", true}, {"abc", true}, {"abbc", false},
		{"src/agent.ts", false}, {"package.json", false},
	} {
		if got := Ignored(patterns, tt.path); got != tt.want {
			t.Errorf("Ignored(%q, %q) = %v, want %v", patterns, tt.path, got, tt.want)
		}
	}
	dir := t.TempDir()
	if p, err := ReadIgnore(filepath.Join(dir, ".dockerignore")); p != nil || err != nil {
		t.Errorf("ReadIgnore of no file = %q, %v; want none", p, err)
	}
	write(t, dir, map[string]string{".dockerignore": "# comment\n\nnode_modules\n!keep\n"})
	if _, err := ReadIgnore(filepath.Join(dir, ".dockerignore")); err == nil || !strings.Contains(err.Error(), "the exception !keep is not supported") {
		t.Errorf("ReadIgnore of an exception = %v, want it refused", err)
	}
}

// fakeSidecar logs the sidecar's listening line, answers /healthz and
// /hi, and exits with $EXIT_CODE on SIGTERM.
const fakeSidecar = `import http.server, json, os, signal, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok " + os.getcwd().encode())
    def log_message(self, *a):
        print("fake: GET", self.path, flush=True)
s = http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), H)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(int(os.environ["EXIT_CODE"])))
print(json.dumps({"message": "listening", "protocol": "agent_platform", "addr": "[::]:%d" % s.server_address[1]}), flush=True)
s.serve_forever()
`

// TestStart runs an image's command: Start returns once it listens and
// its /healthz answers, in its WORKDIR; Log is its output; Stop is
// SIGTERM, and reports a non-zero exit.
func TestStart(t *testing.T) {
	for _, code := range []string{"0", "3"} {
		t.Run("exit "+code, func(t *testing.T) {
			img, err := build(t, map[string]string{"fake.py": fakeSidecar}, `FROM python
WORKDIR /srv
COPY fake.py /opt/
ENTRYPOINT ["python3", "/opt/fake.py"]
`)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			t.Cleanup(cancel)
			p := Start(ctx, t, img, "EXIT_CODE="+code)
			resp, err := http.Get(p.URL + "/hi")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := "ok " + img.Path("."); string(b) != want {
				t.Errorf("GET /hi = %q, want %q (the command in the WORKDIR)", b, want)
			}
			err = p.Stop()
			if code == "0" && err != nil || code != "0" && (err == nil || err.Error() != "exit status "+code) {
				t.Errorf("Stop() = %v, want exit status %s", err, code)
			}
			if log := p.Log(); !strings.Contains(log, "fake: GET /healthz") || !strings.Contains(log, "fake: GET /hi") {
				t.Errorf("Log() = %q, want the GETs of /healthz and /hi", log)
			}
			if err := p.Stop(); err == nil {
				t.Error("a second Stop() = nil, want an error")
			}
		})
	}
}

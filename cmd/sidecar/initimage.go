package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// sidecar init --docker: the Dockerfile for the agent's language. Every
// one ends the way the repository's own examples do: the sidecar's binary
// copied from its image, the method map as ./sidecar.yaml in the working
// directory (where `sidecar` looks without --config), ENTRYPOINT
// ["sidecar", "--"] and the agent's command as CMD.

// plainName is a file name a Dockerfile line may hold unquoted.
var plainName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// imageData is what the templates/Dockerfile.*.tmpl write.
type imageData struct {
	Agent        string // the agent's command line, for the comments
	Config       string // the method map's file name in the build context
	SidecarImage string // the image the sidecar's binary is copied from
	Cmd          string // the image's CMD, in the exec form
	Requirements bool   // Python: a requirements.txt is there to install
	GoPackage    string // Go: what go build builds, as shell words
	GoBinary     string // Go: the binary's name under /app
}

// dockerfile is the Dockerfile for an agent of lang started by argv, its
// method map configName in dir, the build context.
func dockerfile(lang language, argv []string, configName, dir string) (string, error) {
	if !plainName.MatchString(configName) {
		return "", fmt.Errorf("--config %q: with --docker, the file's name must be plain (letters, digits, . _ -): the Dockerfile copies it", configName)
	}
	image := argv
	data := imageData{Agent: shellJoin(argv), Config: configName, SidecarImage: sidecarImage}
	switch lang {
	case langNode:
		image = nodeImageCommand(argv)
	case langPython:
		_, err := os.Stat(filepath.Join(dir, "requirements.txt"))
		data.Requirements = err == nil
	case langGo:
		pkg, bin, args := goBuild(argv)
		data.GoPackage, data.GoBinary = shellJoin(pkg), bin
		image = append([]string{"./" + bin}, args...)
	}
	// The exec form, spaced as the repository's Dockerfiles write it.
	words := make([]string, len(image))
	for i, w := range image {
		b, _ := json.Marshal(w)
		words[i] = string(b)
	}
	data.Cmd = "[" + strings.Join(words, ", ") + "]"
	var b bytes.Buffer
	if err := initTemplate.ExecuteTemplate(&b, "Dockerfile."+lang.Name+".tmpl", data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// nodeImageCommand is the image's command for the Node agent argv. The
// image holds what `npm run build` made, not the sources nor the
// devDependencies (tsx, ts-node), so a command that runs a source file
// (tsx src/agent.ts) becomes node on its build (dist/agent.js, as tsc
// writes src/ to dist/). A node command, or one with no script named,
// is kept.
func nodeImageCommand(argv []string) []string {
	if path.Base(argv[0]) == "node" {
		return argv
	}
	for i, a := range argv[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		p := strings.TrimPrefix(a, "./")
		switch path.Ext(p) {
		case ".ts", ".mts":
			js := strings.TrimSuffix(strings.TrimPrefix(p, "src/"), path.Ext(p)) + ".js"
			return append([]string{"node", "dist/" + js}, argv[i+2:]...)
		case ".js", ".mjs", ".cjs":
			return append([]string{"node", p}, argv[i+2:]...)
		}
	}
	return argv
}

// goBuild is what the Go agent argv builds: the package (`go run PKG`,
// or its .go files, or the module's root), the binary's name and the
// arguments it runs with.
func goBuild(argv []string) (pkg []string, bin string, args []string) {
	if len(argv) > 1 && path.Base(argv[0]) == "go" && argv[1] == "run" {
		rest := argv[2:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			rest = rest[1:] // go run's build flags
		}
		// The package: one path, or the .go files named one after another.
		var files []string
		for len(rest) > 0 && strings.HasSuffix(rest[0], ".go") {
			files, rest = append(files, rest[0]), rest[1:]
		}
		switch {
		case len(files) > 0:
			pkg = files
		case len(rest) > 0:
			pkg, rest = rest[:1], rest[1:]
		default:
			pkg = []string{"."}
		}
		return pkg, "agent", rest
	}
	bin = path.Base(argv[0])
	if !plainName.MatchString(bin) || bin == "." || bin == ".." {
		bin = "agent"
	}
	return []string{"."}, bin, argv[1:]
}

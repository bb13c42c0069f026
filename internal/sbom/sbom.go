package main

import (
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// options are the command line: sbom [-version V] [-o FILE] BINARY...
type options struct {
	version  string // the sidecar's version; default: the binaries' main module version
	out      string // where the document goes; "" or "-": stdout
	binaries []string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var opts options
	fs := flag.NewFlagSet("sbom", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.version, "version", "", "the sidecar's version (default: the binaries' main module version)")
	fs.StringVar(&opts.out, "o", "", "write the SBOM to this file (default: stdout)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sbom [-version V] [-o FILE] BINARY...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	opts.binaries = fs.Args()
	if len(opts.binaries) == 0 {
		return opts, errors.New("no binary named: give the built sidecar binaries as arguments")
	}
	return opts, nil
}

// The parts of a CycloneDX 1.5 document this command writes
// (https://cyclonedx.org/docs/1.5/json/).
type (
	bom struct {
		BOMFormat    string       `json:"bomFormat"`
		SpecVersion  string       `json:"specVersion"`
		Version      int          `json:"version"`
		Metadata     metadata     `json:"metadata"`
		Components   []component  `json:"components"`
		Dependencies []dependency `json:"dependencies"`
	}
	metadata struct {
		Timestamp string    `json:"timestamp,omitempty"`
		Component component `json:"component"`
	}
	component struct {
		Type       string     `json:"type"` // application, library
		BOMRef     string     `json:"bom-ref"`
		Name       string     `json:"name"`
		Version    string     `json:"version"`
		PURL       string     `json:"purl"`
		Properties []property `json:"properties,omitempty"`
	}
	property struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	dependency struct {
		Ref       string   `json:"ref"`
		DependsOn []string `json:"dependsOn"`
	}
)

// fromBinaries builds the document from the build information of each
// binary, which must all be builds of one main module: the sidecar, then
// every module linked into any of them, sorted by path, and the Go
// standard library. sourceDateEpoch, when not empty, is the timestamp in
// seconds since 1970.
func fromBinaries(version string, binaries []string, sourceDateEpoch string) (*bom, error) {
	var (
		main      string
		goVersion string
		platforms []string
		mods      = map[string]component{}
	)
	for _, path := range binaries {
		bi, err := buildinfo.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the build information of %s (is it a Go binary?): %w", path, err)
		}
		switch {
		case main == "":
			main, goVersion = bi.Main.Path, bi.GoVersion
			if version == "" {
				version = bi.Main.Version
			}
		case bi.Main.Path != main:
			return nil, fmt.Errorf("%s is a build of %s, not of %s like %s: give the builds of one program", path, bi.Main.Path, main, binaries[0])
		case bi.GoVersion != goVersion:
			return nil, fmt.Errorf("%s was built by %s, %s by %s: build every binary with one Go", path, bi.GoVersion, binaries[0], goVersion)
		}
		platforms = append(platforms, setting(bi, "GOOS")+"/"+setting(bi, "GOARCH"))
		for _, d := range bi.Deps {
			c := library(d)
			if prev, ok := mods[c.Name]; ok && prev.Version != c.Version {
				return nil, fmt.Errorf("%s links %s %s, an earlier binary %s: build every binary from one go.mod", path, c.Name, c.Version, prev.Version)
			}
			mods[c.Name] = c
		}
	}
	if main == "" {
		return nil, errors.New("the binaries name no main module: build them with `go build` in module mode")
	}
	slices.Sort(platforms)
	app := component{
		Type: "application", BOMRef: purl(main, version), Name: main, Version: version, PURL: purl(main, version),
		Properties: []property{{Name: "go:platforms", Value: strings.Join(slices.Compact(platforms), " ")}},
	}
	doc := &bom{BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1, Metadata: metadata{Component: app}}
	if sourceDateEpoch != "" {
		sec, err := strconv.ParseInt(sourceDateEpoch, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970, or unset it", sourceDateEpoch)
		}
		doc.Metadata.Timestamp = time.Unix(sec, 0).UTC().Format(time.RFC3339)
	}
	for _, name := range slices.Sorted(maps.Keys(mods)) {
		doc.Components = append(doc.Components, mods[name])
	}
	std := component{Type: "library", Name: "stdlib", Version: goVersion, PURL: purl("stdlib", goVersion)}
	std.BOMRef = std.PURL
	doc.Components = append(doc.Components, std)
	deps := dependency{Ref: app.BOMRef, DependsOn: []string{}}
	for _, c := range doc.Components {
		deps.DependsOn = append(deps.DependsOn, c.BOMRef)
	}
	doc.Dependencies = []dependency{deps}
	return doc, nil
}

// library is the component of a linked module: the replacement's path and
// version when go.mod replaces it, and its go.sum hash as a property (a
// hash of the module's files, not of anything in the binary, so not one of
// CycloneDX's hashes).
func library(d *debug.Module) component {
	m := d
	var props []property
	if d.Replace != nil {
		m = d.Replace
		props = append(props, property{Name: "go:replaces", Value: d.Path + "@" + d.Version})
	}
	if m.Sum != "" {
		props = append(props, property{Name: "go:sum", Value: m.Sum})
	}
	return component{Type: "library", BOMRef: purl(m.Path, m.Version), Name: m.Path, Version: m.Version, PURL: purl(m.Path, m.Version), Properties: props}
}

// purl is a Go module's package URL (https://github.com/package-url/purl-spec):
// pkg:golang/PATH@VERSION, with the characters a version may hold that a
// purl may not escaped.
func purl(path, version string) string {
	return "pkg:golang/" + path + "@" + strings.ReplaceAll(version, "+", "%2B")
}

func setting(bi *buildinfo.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return "unknown"
}

// write writes doc as indented JSON to the file out, or to stdout when out
// is "" or "-".
func write(doc *bom, out string, stdout io.Writer) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if out == "" || out == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("writing the SBOM: %w", err)
	}
	return nil
}

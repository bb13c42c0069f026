package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it returns the exit code, 2 for bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "sbom:", err)
		return 2
	}
	doc, err := fromBinaries(opts.version, opts.binaries, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		fmt.Fprintln(stderr, "sbom:", err)
		return 1
	}
	if err := write(doc, opts.out, stdout); err != nil {
		fmt.Fprintln(stderr, "sbom:", err)
		return 1
	}
	return 0
}

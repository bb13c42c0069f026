package deploy

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
)

// Platform values the request is checked against by Warnings. They are the
// documented ones; the platform may accept more over time, so a value
// outside them is a warning, not an error.
var (
	documentedCPU = []string{"1", "2", "4", "6", "8"}
	memoryRE      = regexp.MustCompile(`^([1-9][0-9]?)Gi$`)
)

// platformConcurrency is containerConcurrency when the request sets none.
const platformConcurrency = 9

// killGraceSeconds is how long a container has between SIGTERM and SIGKILL
// on Cloud Run, which the platform's runtime is assumed to match.
const killGraceSeconds = 10

// Warnings are advice about a request that CreateRequest accepts: values
// outside the documented ones, and settings of cfg that do not fit the
// platform. Each is one sentence.
func Warnings(cfg *config.Config, opts RequestOptions) []string {
	var w []string
	if opts.Image != "" && !strings.Contains(strings.SplitN(opts.Image, "/", 2)[0], "-docker.pkg.dev") {
		w = append(w, fmt.Sprintf("image %q is not in Artifact Registry (REGION-docker.pkg.dev/…), which is what the platform documents", opts.Image))
	}
	if opts.CPU != "" && !slices.Contains(documentedCPU, opts.CPU) {
		w = append(w, fmt.Sprintf("cpu %q: the documented values are %s", opts.CPU, strings.Join(documentedCPU, ", ")))
	}
	if opts.Memory != "" {
		if m := memoryRE.FindStringSubmatch(opts.Memory); m == nil || atoi(m[1]) > 32 {
			w = append(w, fmt.Sprintf("memory %q: the documented values are 1Gi … 32Gi", opts.Memory))
		}
	}
	for _, m := range cfg.Methods {
		if m.Name == "*" && len(opts.Methods) == 0 {
			w = append(w, "the map has a \"*\" method: the names it serves are not declared, so the platform's SDK will not offer them (add --method NAME[:MODE])")
		}
	}
	conc := platformConcurrency
	if opts.Concurrency != nil {
		conc = *opts.Concurrency
	}
	if cfg.Limits.Concurrency > 0 && conc > cfg.Limits.Concurrency {
		w = append(w, fmt.Sprintf("containerConcurrency %d is above limits.concurrency %d: the extra calls wait in the sidecar's queue", conc, cfg.Limits.Concurrency))
	}
	if host, _, err := net.SplitHostPort(cfg.Listen); err == nil && (host == "127.0.0.1" || host == "localhost" || host == "::1") {
		w = append(w, fmt.Sprintf("listen %q is loopback: the platform reaches the sidecar only through $PORT", cfg.Listen))
	}
	if total := cfg.Shutdown.Drain + cfg.Shutdown.AgentGrace; total.Seconds() >= killGraceSeconds {
		w = append(w, fmt.Sprintf("shutdown.drain + shutdown.agent_grace = %s: a container gets %ds between SIGTERM and SIGKILL", total, killGraceSeconds))
	}
	return w
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

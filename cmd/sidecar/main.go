// Command sidecar serves Google's Agent Platform container contract in
// front of an agent written in any language. See the README
// and docs/.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// shutdownSignals start the drain. SIGHUP (a closed terminal) and SIGQUIT
// would otherwise kill the sidecar at once (Go's default for SIGQUIT also
// dumps every goroutine's stack): no drain, streams cut without a final
// line, and the agent's own children left running.
var shutdownSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}

func main() {
	version = buildVersion(version, debug.ReadBuildInfo)
	ctx, stop := signal.NotifyContext(context.Background(), shutdownSignals...)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err and turns it into the process's exit status.
func exitCode(err error, stderr *os.File) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exitError); ok {
		if e.msg != "" {
			fmt.Fprintln(stderr, e.msg)
		}
		return e.code
	}
	fmt.Fprintln(stderr, "sidecar:", err)
	return 1
}

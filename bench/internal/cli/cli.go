// Package cli is what the benchmark's commands share around their own
// work: a main that runs until SIGTERM or SIGINT and exits 1 on an error,
// and an HTTP server that stops when its context ends.
package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Main calls run with the command line's arguments and a context that
// ends at SIGTERM or SIGINT. An error is printed as "name: err" and exits
// the program with status 1.
func Main(name string, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Serve serves h on ln until ctx ends, then shuts the server down, giving
// the calls in flight a second before it closes them. It returns the
// server's error if serving stops by itself.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	return nil
}

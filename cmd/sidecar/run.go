package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/deploy"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/upstream"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

// exitError ends the process with code after printing msg (if any).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

const usage = `sidecar serves Google's Agent Platform container contract in front of an agent.

Usage:
  sidecar [serve] [flags]              serve the platform's calls (the default)
  sidecar validate [flags]             check a config file, report every problem
  sidecar class-methods [flags]        print spec.classMethods for the deploy request
  sidecar version                      print the version
  sidecar help                         print this help

Flags:
  --config FILE     the method map (default $SIDECAR_CONFIG, else sidecar.yaml)
  --listen ADDR     listen address; wins over $PORT and the config's listen
  --log-level LVL   debug, info, warn or error (default info)

The listen address is --listen, else 0.0.0.0:$PORT when PORT is set, else
the config's listen, else :8080.
`

// run is the whole program: main only wires signals and the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("sidecar "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "")
	listen := fs.String("listen", "", "")
	logLevel := fs.String("log-level", "info", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return nil
		}
		return &exitError{code: 2, msg: fmt.Sprintf("sidecar: %v\n\n%s", err, usage)}
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("sidecar: unexpected argument %q\n\n%s", fs.Arg(0), usage)}
	}
	if *configPath == "" {
		*configPath = getenv("SIDECAR_CONFIG")
	}
	if *configPath == "" {
		*configPath = "sidecar.yaml"
	}

	switch cmd {
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "version":
		fmt.Fprintln(stdout, "sidecar", version)
		return nil
	case "validate":
		cfg, err := config.Load(*configPath)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		fmt.Fprintln(stdout, cfg.Summary(*configPath))
		return nil
	case "class-methods":
		cfg, err := config.Load(*configPath)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		b, _ := json.MarshalIndent(deploy.ClassMethods(cfg), "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	case "serve":
		cfg, err := config.Load(*configPath)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		logger, err := newLogger(*logLevel, stderr)
		if err != nil {
			return &exitError{code: 2, msg: "sidecar: " + err.Error()}
		}
		defer logger.Sync()
		addr := listenAddr(*listen, getenv("PORT"), cfg.Listen)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
		return serve(ctx, cfg, ln, logger)
	default:
		return &exitError{code: 2, msg: fmt.Sprintf("sidecar: unknown command %q\n\n%s", cmd, usage)}
	}
}

func listenAddr(flagValue, port, configured string) string {
	switch {
	case flagValue != "":
		return flagValue
	case port != "":
		return "0.0.0.0:" + port
	case configured != "":
		return configured
	default:
		return ":8080"
	}
}

func newLogger(level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "time"
	enc.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	enc.EncodeDuration = zapcore.MillisDurationEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), lvl)
	return zap.New(core), nil
}

// drainBudget is how long calls in flight may finish after SIGTERM; it
// fits inside Cloud Run's 10-second kill grace.
const drainBudget = 8 * time.Second

// readyWait bounds how long a call waits for an agent that is not ready.
const readyWait = 30 * time.Second

// serve runs the sidecar on ln until ctx ends, then drains.
func serve(ctx context.Context, cfg *config.Config, ln net.Listener, logger *zap.Logger) error {
	client, err := upstream.New(cfg, logger)
	if err != nil {
		return err
	}
	defer client.Close()
	prober := upstream.NewProber(cfg, client)
	s := &proxy.Server{Config: cfg, Client: client, Prober: prober, ReadyWait: readyWait, Logger: logger}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// Reading the request body and writing a reply have deadlines that
		// each call clears once its request is read: streams run for
		// minutes.
		ReadTimeout:    60 * time.Second,
		WriteTimeout:   60 * time.Second,
		IdleTimeout:    620 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       zap.NewStdLog(logger.Named("http")),
	}

	probeCtx, stopProbe := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { prober.Run(probeCtx) })
	defer func() { stopProbe(); wg.Wait() }()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("listening", zap.String("addr", ln.Addr().String()),
		zap.String("upstream", cfg.Upstream.URL), zap.Int("methods", len(cfg.Methods)), zap.String("version", version))

	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	logger.Info("draining", zap.Duration("budget", drainBudget))
	s.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), drainBudget)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		<-errc
		return fmt.Errorf("draining: %w", err)
	}
	<-errc
	logger.Info("stopped")
	return nil
}

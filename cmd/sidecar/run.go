package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/deploy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
// main falls back on the module version (buildVersion) when it is not.
var version = "dev"

// buildVersion is the version the binary reports: the one stamped with
// -ldflags, else the main module's version as the go command recorded it
// (`go install …/cmd/sidecar@v1.2.3` records v1.2.3, a build in a git
// checkout a pseudo-version of its commit), else stamped ("dev").
func buildVersion(stamped string, info func() (*debug.BuildInfo, bool)) string {
	if stamped != "dev" {
		return stamped
	}
	if bi, ok := info(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return stamped
}

// exitError ends the process with code after printing msg (if any).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usage is the help text: the doors' own commands (A2A's a2a-card) are
// listed between the program's, as their registrations describe them.
var usage = usageHead + doorCommandsUsage(doors.Commands(doors.All)) + usageTail

const usageHead = `sidecar serves Google's Agent Platform container contract in front of an agent.

Usage:
  sidecar [serve] [flags] [-- CMD ARGS...]
                                       serve the platform's calls (the default);
                                       with a command, start and supervise the agent
  sidecar dev [flags] [-- CMD ARGS...] serve, plus the platform's REST API and a
                                       playground page on 127.0.0.1:8081
  sidecar init --agent CMD [flags]     write a commented sidecar.yaml for the agent
                                       (--docker: and its Dockerfile); never over a file
  sidecar validate [flags] [--print]   check a config file, report every problem;
                                       --print writes the expanded method map
  sidecar class-methods [flags]        print spec.classMethods for the deploy request
`

const usageTail = `  sidecar deploy-request [flags]       print the Agent Platform create request
                                       (deploy/agent-platform/deploy.sh sends it)
  sidecar call [--stream] METHOD k=v…  call a running sidecar as the platform does
                                       (sidecar call --help for its flags)
  sidecar version                      print the version
  sidecar help                         print this help

Flags:
  --config FILE     the method map (default $SIDECAR_CONFIG, else sidecar.yaml)
  --listen ADDR     listen address; wins over $PORT and the config's listen
  --log-level LVL   debug, info, warn or error (default info)

The listen address is --listen, else 0.0.0.0:$PORT when PORT is set, else
the config's listen, else :8080. Under dev, without --listen, its host and
every other protocol's listen host are 127.0.0.1: the routes have no
authentication.

deploy-request flags (besides --config):
` + requestUsage + "\n" + devUsage + "\n" + initUsage + `
Docs, in the source's docs/ (github.com/sidecar-dev/sidecar):
  docs/cli.md          these commands and flags, exit codes, sidecar init and
                       sidecar call
  docs/config.md       the method map: every key, its default (validate)
  docs/dev.md          sidecar dev: the platform's REST API, the playground
  docs/deploy.md       deploy-request, class-methods and the deploy scripts
  docs/a2a.md          the A2A door and a2a-card
  docs/operations.md   serve in production: the agent supervised, signals,
                       the shutdown budget, probes, logs, metrics
  docs/errors.md       what a caller gets when a call fails
`

// commandDocs is the page that documents each command, named by its
// --help.
var commandDocs = map[string]string{
	"serve":          "docs/operations.md",
	"dev":            "docs/dev.md",
	"init":           "docs/cli.md",
	"validate":       "docs/config.md",
	"class-methods":  "docs/deploy.md",
	"deploy-request": "docs/deploy.md",
	"version":        "docs/cli.md",
	"help":           "docs/cli.md",
}

// run is the whole program: main only wires signals and the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd, named := "serve", false
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args, named = args[0], args[1:], true
	}
	if cmd == "call" {
		return runCall(ctx, args, getenv, stdout, stderr)
	}
	if cmd == "init" {
		return runInit(args, os.Stdin, isTerminal(os.Stdin), stdout, stderr)
	}
	fs := flag.NewFlagSet("sidecar "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "")
	listen := fs.String("listen", "", "")
	logLevel := fs.String("log-level", "info", "")
	print := fs.Bool("print", false, "")
	// A door's command registers its own flags.
	var runDoor func(*config.Config, func(string) string, io.Writer) error
	doorCmd, isDoor := doorCommand(cmd)
	if isDoor {
		runDoor = doorCmd.Flags(fs)
	}
	var request requestFlags
	if cmd == "deploy-request" {
		request.register(fs)
	}
	var dev devFlags
	if cmd == "dev" {
		dev.register(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			page, ok := commandDocs[cmd]
			if isDoor {
				page, ok = doorCmd.Doc, doorCmd.Doc != ""
			}
			if ok && named {
				fmt.Fprintf(stdout, "\nsidecar %s: %s\n", cmd, page)
			}
			return nil
		}
		return &exitError{code: 2, msg: fmt.Sprintf("sidecar: %v\n\n%s", err, usage)}
	}
	// Only serve and dev take arguments: the agent's command, after "--".
	command := fs.Args()
	if len(command) > 0 && cmd != "serve" && cmd != "dev" {
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
		cfg, err := config.Load(*configPath, doors.Kinds(doors.All)...)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		// As serve would listen: $PORT wins over the file's listen.
		if addr, from := listenAddr(*listen, getenv("PORT"), cfg.Listen); from != "" {
			if err := cfg.CheckListen(addr, from); err != nil {
				return &exitError{code: 1, msg: *configPath + ": " + err.Error()}
			}
		}
		if *print {
			stdout.Write(cfg.Expanded())
			return nil
		}
		fmt.Fprintln(stdout, cfg.Summary(*configPath))
		return nil
	case "class-methods":
		cfg, err := config.Load(*configPath, doors.Kinds(doors.All)...)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		b, _ := json.MarshalIndent(deploy.ClassMethods(cfg), "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	case "deploy-request":
		cfg, err := config.Load(*configPath, doors.Kinds(doors.All)...)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		if err := request.write(cfg, stdout, stderr); err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		return nil
	case "serve", "dev":
		if cmd == "dev" {
			if err := dev.check(); err != nil {
				return &exitError{code: 2, msg: "sidecar: " + err.Error()}
			}
		}
		cfg, err := config.Load(*configPath, doors.Kinds(doors.All)...)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		logger, err := newLogger(*logLevel, stderr)
		if err != nil {
			return &exitError{code: 2, msg: "sidecar: " + err.Error()}
		}
		defer logger.Sync()
		addr, from := listenAddr(*listen, getenv("PORT"), cfg.Listen)
		if cmd == "dev" && *listen == "" {
			// The other protocols' listeners too: none of them has
			// authentication either.
			addr = loopback(addr)
			for _, d := range cfg.Protocols.Doors {
				d.Listen = loopback(d.Listen)
			}
		}
		ln, err := listenPlatform(cfg, addr, from, cmd == "dev")
		if err != nil {
			return err
		}
		if len(command) > 0 {
			cfg.Upstream.Command = command
		}
		aio := agentIO{env: os.Environ(), stdout: stdout, stderr: stderr}
		if cmd == "dev" {
			return serveDev(ctx, dev, cfg, ln, logger, aio, defaultServerLimits, stderr)
		}
		return serve(ctx, cfg, ln, logger, aio, defaultServerLimits)
	default:
		if !isDoor {
			return &exitError{code: 2, msg: fmt.Sprintf("sidecar: unknown command %q\n\n%s", cmd, usage)}
		}
		cfg, err := config.Load(*configPath, doors.Kinds(doors.All)...)
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		if err := runDoor(cfg, getenv, stdout); err != nil {
			return &exitError{code: 1, msg: "sidecar " + cmd + ": " + err.Error()}
		}
		return nil
	}
}

// doorCommand is the command name a door brings, if any.
func doorCommand(name string) (core.Command, bool) {
	for _, c := range doors.Commands(doors.All) {
		if c.Name == name {
			return c, true
		}
	}
	return core.Command{}, false
}

// doorCommandsUsage is the help's usage lines of the doors' commands,
// aligned as the others: the name and flags, then the help's lines in
// the description column.
func doorCommandsUsage(cmds []core.Command) string {
	const column = 39 // where the descriptions start
	var b strings.Builder
	for _, c := range cmds {
		head := "  sidecar " + c.Name
		if c.Args != "" {
			head += " " + c.Args
		}
		for i, line := range c.Help {
			if i == 0 && len(head) < column {
				b.WriteString(head + strings.Repeat(" ", column-len(head)) + line + "\n")
				continue
			}
			if i == 0 {
				b.WriteString(head + "\n")
			}
			b.WriteString(strings.Repeat(" ", column) + line + "\n")
		}
	}
	return b.String()
}

// listenPlatform opens the Agent Platform contract's listener on addr, or
// none (nil) when protocols.agent_platform is off, which sidecar dev
// cannot do without.
func listenPlatform(cfg *config.Config, addr, from string, dev bool) (net.Listener, error) {
	if !cfg.Protocols.AgentPlatform {
		if dev {
			return nil, &exitError{code: 2, msg: "sidecar: sidecar dev serves the Agent Platform contract: protocols.agent_platform must be on"}
		}
		return nil, nil
	}
	if err := cfg.CheckListen(addr, from); err != nil {
		return nil, &exitError{code: 1, msg: "sidecar: " + err.Error()}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if from != "" {
			return nil, fmt.Errorf("listening on %s (from %s): %w", addr, from, err)
		}
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return ln, nil
}

// listenAddr is the platform listener's address, and where it came from
// for messages: --listen, else 0.0.0.0:$PORT, else the config's listen
// (from ""), else :8080.
func listenAddr(flagValue, port, configured string) (addr, from string) {
	switch {
	case flagValue != "":
		return flagValue, "--listen"
	case port != "":
		return "0.0.0.0:" + port, "$PORT=" + port
	case configured != "":
		return configured, ""
	default:
		return ":8080", ""
	}
}

func newLogger(level string, w io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	// The JSON shape Cloud Logging reads from a container's output:
	// severity, message, time (and, per call, the trace fields).
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "time"
	enc.MessageKey = "message"
	enc.LevelKey = "severity"
	enc.EncodeLevel = severity
	enc.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	enc.EncodeDuration = zapcore.MillisDurationEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), lvl)
	return zap.New(core), nil
}

// severity writes zap's levels as Cloud Logging's LogSeverity names.
func severity(l zapcore.Level, enc zapcore.PrimitiveArrayEncoder) {
	switch l {
	case zapcore.DebugLevel:
		enc.AppendString("DEBUG")
	case zapcore.InfoLevel:
		enc.AppendString("INFO")
	case zapcore.WarnLevel:
		enc.AppendString("WARNING")
	case zapcore.ErrorLevel:
		enc.AppendString("ERROR")
	default:
		enc.AppendString("CRITICAL")
	}
}

package supervise

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Policy says whether the agent is started again after it exits.
type Policy string

const (
	// Never makes the agent's first exit final.
	Never Policy = "never"
	// OnFailure restarts the agent after a non-zero exit or a death by
	// signal; an exit 0 is final.
	OnFailure Policy = "on-failure"
)

// Options configure Start. Every field but Command has a working zero value.
type Options struct {
	// Command is the agent's argv. Command[0] is looked up in the sidecar's
	// PATH when it has no slash; a relative path with a slash is taken
	// relative to Dir. Required.
	Command []string
	// Env is the child's whole environment. Default (nil): the sidecar's.
	Env []string
	// Dir is the child's working directory. Default: the sidecar's.
	Dir string
	// Stdout and Stderr are where the child's output goes. An *os.File is
	// handed to the child as it is; any other writer is fed from a pipe by
	// a goroutine, which keeps reading (and discards) if the writer fails,
	// so the agent never blocks on a full pipe. The same writer in both
	// gets one pipe. Once the agent has exited for good, output still held
	// open by its leftover children is cut after a second. Default (nil):
	// discarded (/dev/null). The child's stdin is always /dev/null.
	Stdout, Stderr io.Writer
	// Restart is the restart policy. Default: Never.
	Restart Policy
	// MaxRestarts is how many times OnFailure restarts the agent before
	// giving up. Default: 0, no limit.
	MaxRestarts int
	// Backoff is the delay before the first restart; it doubles on every
	// restart up to MaxBackoff, and starts over after a run that lasted
	// ten seconds or more. Default: 500ms.
	Backoff time.Duration
	// MaxBackoff caps the delay between restarts. Default: 30s.
	MaxBackoff time.Duration
	// ReapOrphans makes the process a child subreaper that reaps every
	// child that exits, not only the agent, until Done: set it when the
	// sidecar is the container's entrypoint. See the package documentation
	// for what it asks of the rest of the process.
	ReapOrphans bool
	// Logger receives the agent's lifecycle. Default (nil): no logs.
	Logger *zap.Logger
}

// Defaults for Options.
const (
	defaultBackoff    = 500 * time.Millisecond
	defaultMaxBackoff = 30 * time.Second
)

func withDefaults(opts Options) (Options, error) {
	if len(opts.Command) == 0 || opts.Command[0] == "" {
		return opts, errors.New("supervise: no command to start")
	}
	switch opts.Restart {
	case "":
		opts.Restart = Never
	case Never, OnFailure:
	default:
		return opts, fmt.Errorf("supervise: unknown restart policy %q (want %q or %q)", opts.Restart, Never, OnFailure)
	}
	if opts.MaxRestarts < 0 {
		return opts, fmt.Errorf("supervise: negative max restarts %d", opts.MaxRestarts)
	}
	if opts.Backoff <= 0 {
		opts.Backoff = defaultBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = defaultMaxBackoff
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.Backoff)
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return opts, nil
}

// lookPath resolves name as the child will see it: in PATH without a slash,
// relative to dir with one.
func lookPath(name, dir string) (string, error) {
	if strings.Contains(name, "/") && !filepath.IsAbs(name) && dir != "" {
		name = filepath.Join(dir, name)
	}
	path, err := exec.LookPath(name)
	var execErr *exec.Error
	if errors.As(err, &execErr) {
		err = execErr.Err // its message repeats the name
	}
	return path, err
}

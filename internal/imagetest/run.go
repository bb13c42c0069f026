package imagetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Argv is the image's ENTRYPOINT and CMD as this machine runs them: a
// command the image holds (absolute, relative to the WORKDIR, or found in
// its /usr/local/bin, /usr/bin, /bin) is its file here, another one is the
// machine's on the image's $PATH; an absolute argument naming a file of
// the image is that file.
func (img *Image) Argv() ([]string, error) {
	words := append(append([]string(nil), img.Entrypoint...), img.Cmd...)
	if len(words) == 0 {
		return nil, errors.New("the image has no ENTRYPOINT or CMD")
	}
	argv := []string{""}
	switch name := words[0]; {
	case strings.Contains(name, "/"):
		if _, err := os.Stat(img.Path(name)); err != nil {
			return nil, fmt.Errorf("the image's command %s: not in the image", name)
		}
		argv[0] = img.Path(name)
	default:
		for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
			if _, err := os.Stat(img.Path(filepath.Join(dir, name))); err == nil {
				argv[0] = img.Path(filepath.Join(dir, name))
				break
			}
		}
		for _, dir := range filepath.SplitList(img.path) {
			if argv[0] != "" {
				break
			}
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				argv[0] = filepath.Join(dir, name)
			}
		}
		if argv[0] == "" {
			return nil, fmt.Errorf("the image's command %s: not in the image, nor on its $PATH", name)
		}
	}
	for _, a := range words[1:] {
		if filepath.IsAbs(a) {
			if _, err := os.Lstat(img.Path(a)); err == nil {
				a = img.Path(a)
			}
		}
		argv = append(argv, a)
	}
	return argv, nil
}

// Process is a sidecar image's command running.
type Process struct {
	// URL is the sidecar's, on 127.0.0.1.
	URL string

	cmd    *exec.Cmd
	ctx    context.Context
	read   chan struct{} // closed when the output has ended
	exited chan error
	mu     sync.Mutex
	log    strings.Builder
}

// Start runs the image's Argv in its WORKDIR with its environment, $PORT=0
// as a platform sets it, and env, and returns once the sidecar it starts
// logs that it listens and its /healthz answers 200 (its agent ready). It
// fails the test if the image exits first, or ctx ends first. ctx also
// bounds Stop. The test's cleanup kills a process not stopped, and logs
// the output of a failed test's image.
func Start(ctx context.Context, t testing.TB, img *Image, env ...string) *Process {
	t.Helper()
	argv, err := img.Argv()
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{ctx: ctx, read: make(chan struct{}), exited: make(chan error, 1)}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Dir = img.Path(".")
	p.cmd.Env = append(append(append([]string(nil), img.Env...), "PORT=0"), env...)
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	err = p.cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		t.Fatalf("starting the image's %q: %v", argv, err)
	}
	addr := make(chan string, 1)
	go func() {
		defer close(p.read)
		defer out.Close()
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			var e struct{ Message, Protocol, Addr string }
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Message == "listening" && e.Protocol == "agent_platform" {
				select {
				case addr <- e.Addr:
				default:
				}
			}
		}
	}()
	go func() { <-p.read; p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.exited != nil { // not stopped: killed, and waited for
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("the image's output:\n%s", p.Log())
		}
	})

	select {
	case a := <-addr: // [::]:N: every interface, as $PORT has it
		p.URL = "http://127.0.0.1:" + a[strings.LastIndex(a, ":")+1:]
	case <-p.read:
		t.Fatalf("the image %q exited before listening", argv)
	case <-ctx.Done():
		t.Fatalf("the image %q is not listening at the test's deadline", argv)
	}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.read:
			t.Fatalf("the image %q exited before its agent was ready", argv)
		case <-ctx.Done():
			t.Fatalf("the image's /healthz is not 200 at the test's deadline (last: %v)", errOrStatus(resp, err))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func errOrStatus(resp *http.Response, err error) any {
	if err != nil {
		return err
	}
	return resp.Status
}

// Log is what the image wrote so far, stdout and stderr.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Stop sends the image SIGTERM, as a platform stops a container, and
// returns how it exited: nil for 0.
func (p *Process) Stop() error {
	if p.exited == nil {
		return errors.New("the image was stopped already")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	var err error
	select {
	case err = <-p.exited:
	case <-p.ctx.Done():
		p.cmd.Process.Kill()
		<-p.exited
		err = errors.New("still running at the test's deadline, after SIGTERM")
	}
	p.exited = nil
	return err
}

package devapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sidecar-dev/sidecar/config"
)

// The helpers of the browser test: a real sidecar process, the dev
// listener in front of it, and headless Chromium.

// devListener serves the dev listener's handler (New) for a sidecar at
// contractURL and returns its base URL.
func devListener(t *testing.T, cfg *config.Config, contractURL string) string {
	t.Helper()
	return devListenerWith(t, cfg, contractURL, Options{})
}

// devListenerWith is devListener with opts.
func devListenerWith(t *testing.T, cfg *config.Config, contractURL string, opts Options) string {
	t.Helper()
	srv := httptest.NewServer(New(cfg, contractURL, opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

// buildSidecar builds cmd/sidecar into the test's temporary directory
// (a link from the build cache after the first time).
func buildSidecar(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sidecar")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/sidecar").CombinedOutput()
	if err != nil {
		t.Fatalf("building the sidecar: %v\n%s", err, out)
	}
	return bin
}

// startSidecar runs the sidecar binary with the method map yaml on a
// loopback port of its choosing, as `sidecar --config F --listen
// 127.0.0.1:0` (the agent is already running), waits until /healthz is
// 200 and returns its contract URL and the parsed map.
func startSidecar(t *testing.T, yaml string) (string, *config.Config) {
	t.Helper()
	bin := buildSidecar(t)
	cfg, err := config.Parse("sidecar.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	file := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, done := startProcess(t, nil, listeningLine, bin, "--config", file, "--listen", "127.0.0.1:0")
	base := "http://" + addr
	waitHealthy(t, base+"/healthz", done)
	return base, cfg
}

// listeningLine is the address in the sidecar's "listening" log line.
func listeningLine(line string) string {
	var e struct{ Message, Addr string }
	if json.Unmarshal([]byte(line), &e) == nil && e.Message == "listening" {
		return e.Addr
	}
	return ""
}

// waitHealthy polls url until it answers 200, failing after 20 s or when
// exited closes first.
func waitHealthy(t *testing.T, url string, exited <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("%s: the process exited before it was ready", url)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not 200 after 20 s (last error %v)", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startProcess runs argv (env added) until the test ends, then SIGTERMs
// it, and returns the address addrOf reads from a line of its output:
// the process binds port 0 and says which port it got, so no other bind
// can take the port between the test's choice and the process's. It
// fails the test when the process exits first, or after 20 s.
func startProcess(t *testing.T, env []string, addrOf func(line string) string, argv ...string) (string, <-chan struct{}) {
	t.Helper()
	var out lockedBuffer
	found := make(chan string, 1)
	out.onLine = func(line string) {
		if a := addrOf(line); a != "" {
			select {
			case found <- a:
			default:
			}
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%v output:\n%s", argv, out.String())
		}
	})
	select {
	case a := <-found:
		return a, done
	case <-done:
		t.Fatalf("%v exited before saying its address:\n%s", argv, out.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("%v did not say its address after 20 s:\n%s", argv, out.String())
	}
	return "", nil
}

// lockedBuffer is a process's output, its stdout and stderr together,
// written by exec's copiers; each whole line goes to onLine too.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	rest   []byte
	onLine func(string)
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	l.rest = append(l.rest, p...)
	for {
		i := bytes.IndexByte(l.rest, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.onLine(string(l.rest[:i]))
		l.rest = l.rest[i+1:]
	}
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// chromiumPath finds Debian's chromium (or another Chrome). Without one
// the browser tests fail when CI is set (make deps installs chromium) and
// are skipped otherwise, saying how to get it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium binary on PATH: apt-get install -y chromium (make deps installs it)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; skipped because CI is not set")
	return ""
}

// browser opens headless Chromium, 1200 px wide, with the extra options,
// and returns a tab's context; closing it at the end of the test ends the
// browser.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	)
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// run runs browser actions with a deadline, failing the test with what
// it was doing.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// evalString evaluates a JavaScript expression that yields a string.
func evalString(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	return eval[string](t, ctx, js)
}

// eval evaluates a JavaScript expression into a T, failing the test on an
// error.
func eval[T any](t *testing.T, ctx context.Context, js string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// waitJS waits until the JavaScript expression is true.
func waitJS(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if eval[bool](t, ctx, "Boolean("+js+")") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %s still false after 15 s; page: %s", what, js,
				evalString(t, ctx, `document.getElementById("calls").innerText`))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// setInput replaces the editor's text and tells the page it changed.
func setInput(text string) chromedp.Action[chromedp.Void] {
	return script(fmt.Sprintf(`(() => { const i = document.getElementById("input"); i.value = %q;
		i.dispatchEvent(new Event("input")); })()`, text))
}

// script is an action that runs JavaScript for its effect.
func script(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](js)(ctx, t)
		return err
	})
}

// lastCall is a JS expression for the newest call card.
const lastCall = `[...document.querySelectorAll("#calls > article.call")].pop()`

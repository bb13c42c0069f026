package doortest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The doors' memory tests run the real sidecar binary as a process in
// front of testdata/agents/bigreply.py, and read the process's peak
// resident memory (VmHWM): a fresh process per measured call, so the
// high-water mark is that call's.

// moduleRoot is the repository's root: where go.mod is.
func moduleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		t.Fatalf("go env GOMOD: %q (%v): not inside the module", mod, err)
	}
	return filepath.Dir(mod)
}

// BuildSidecar builds cmd/sidecar into the test's temporary directory (a
// link from the build cache after the first time) and returns its path.
func BuildSidecar(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sidecar")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/sidecar")
	cmd.Dir = moduleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the sidecar: %v\n%s", err, out)
	}
	return bin
}

// BigReplySpecial is what every piece of bigreply.py's answer carries
// after its number: characters a JSON writer must escape or keep whole.
const BigReplySpecial = "é \"q\" \\ \n\t<a>&"

// BigReply is the answer bigreply.py's POST /answer/<total>/<size>
// streams: total/size pieces of size bytes, piece i its number as 8
// digits, BigReplySpecial, then x's.
func BigReply(total, size int) string {
	var b strings.Builder
	b.Grow(total)
	for i := range total / size {
		head := fmt.Sprintf("%08d", i) + BigReplySpecial
		b.WriteString(head)
		b.WriteString(strings.Repeat("x", size-len(head)))
	}
	return b.String()
}

// StartBigReply runs testdata/agents/bigreply.py and returns its URL; the
// process is killed when the test ends.
func StartBigReply(t testing.TB) string {
	t.Helper()
	return StartPython(t, "testdata/agents/bigreply.py")
}

// StartPython runs script (a path from the repository's root), a python3
// agent that prints "READY <port>" once it listens on that loopback port
// (PORT=0: one the system picks), and returns its URL; the test's end
// kills it (by its pid).
func StartPython(t testing.TB, script string) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: cannot run the test agent")
	}
	cmd := exec.Command("python3", filepath.Join(moduleRoot(t), script))
	cmd.Env = []string{"PORT=0", "PATH=/usr/bin:/bin:/usr/local/bin"}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &tail{max: 16 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s, the end of its stderr:\n%s", script, stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(line), "READY ")
	if err != nil || !ok {
		t.Fatalf("%s said %q (%v), want READY <port>", script, line, err)
	}
	return "http://127.0.0.1:" + port
}

// Process is the sidecar binary running as a process.
type Process struct {
	Pid int
	// Addr is each listener's address by its protocol, from the
	// sidecar's "listening" lines.
	Addr map[string]string
	out  *lines
}

// StartSidecar runs bin with the config yaml and --listen 127.0.0.1:0
// (each door's listen in yaml should be 127.0.0.1:0 too), and waits until
// it logged listening for every protocol of want. GOGC and GOMEMLIMIT
// are not passed on: the process runs as deployed. It is ended (SIGTERM,
// then killed) when the test ends.
func StartSidecar(t testing.TB, bin, yaml string, want ...string) *Process {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &lines{listening: make(chan [2]string, 16)}
	cmd := exec.Command(bin, "--config", file, "--listen", "127.0.0.1:0")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the sidecar: %v", err)
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
			t.Logf("sidecar output:\n%s", out.String())
		}
	})
	p := &Process{Pid: cmd.Process.Pid, Addr: map[string]string{}, out: out}
	deadline := time.After(30 * time.Second)
	for _, proto := range want {
		for p.Addr[proto] == "" {
			select {
			case l := <-out.listening:
				p.Addr[l[0]] = l[1]
			case <-done:
				t.Fatalf("the sidecar exited before it listened for %s:\n%s", proto, out.String())
			case <-deadline:
				t.Fatalf("the sidecar did not log listening for %s within 30s:\n%s", proto, out.String())
			}
		}
	}
	return p
}

// PeakRSS is the process's peak resident memory so far, in bytes: VmHWM
// of /proc/<pid>/status.
func (p *Process) PeakRSS(t testing.TB) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid))
	if err != nil {
		t.Skipf("reading the sidecar's peak memory: %v (needs Linux's /proc)", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/<pid>/status")
	return 0
}

// lines is the sidecar's output: kept for a failure's log, its
// "listening" lines' protocol and address sent on listening.
type lines struct {
	mu        sync.Mutex
	all       bytes.Buffer
	partial   []byte
	listening chan [2]string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		var e struct{ Message, Protocol, Addr string }
		if json.Unmarshal(l.partial[:i], &e) == nil && e.Message == "listening" {
			select {
			case l.listening <- [2]string{e.Protocol, e.Addr}:
			default:
			}
		}
		l.partial = l.partial[i+1:]
	}
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// The answer of the doors' memory tests: 30 MB (under the default
// limits.reply_bytes, 32 MiB) in pieces of 1,000 bytes, and what a
// sidecar process may hold besides the answers it keeps.
const (
	BigAnswer = 30_000_000
	BigPiece  = 1000
	BigSlack  = 30 << 20
)

// CheckPeakPerAnswer makes calls calls of call at once against p (a
// fresh process, so its high-water mark is theirs), checks that each
// answers want byte for byte, and that p's peak resident memory is at
// most calls × 2 × BigAnswer + BigSlack: a door that repeats the answer
// keeps one copy of it.
func (p *Process) CheckPeakPerAnswer(t *testing.T, calls int, want string, call func() (string, error)) {
	t.Helper()
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			got, err := call()
			if err != nil {
				t.Error(err)
				return
			}
			if got != want {
				t.Errorf("the answer is %d bytes and differs from the agent's (%d bytes) at byte %d", len(got), len(want), firstDiff(got, want))
			}
		})
	}
	wg.Wait()
	peak := p.PeakRSS(t)
	limit := int64(calls)*2*BigAnswer + BigSlack
	t.Logf("peak RSS %d MB for %d call(s) of a %d MB answer (limit %d MB)", peak>>20, calls, BigAnswer/1_000_000, limit>>20)
	if peak > limit {
		t.Errorf("the sidecar's peak RSS is %d MB, want at most %d MB (%d × 2 × the answer + %d MB)", peak>>20, limit>>20, calls, BigSlack>>20)
	}
}

// firstDiff is the index of the first byte where a and b differ.
func firstDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// tail keeps the last max bytes written to it (an agent's stderr, shown
// when its test fails).
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if over := len(w.b) - w.max; over > 0 {
		w.b = append(w.b[:0], w.b[over:]...)
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

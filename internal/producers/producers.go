// Package producers runs the real dialect producers of testdata/dialects
// (node servers built on the Vercel AI SDK, AG-UI, @a2a-js/sdk, LangGraph,
// the OpenAI Agents SDK, and the OpenAI fixture server) for tests, names the requests that make
// each one stream a given variant, and reads the captures those replies
// were saved as.
//
// A capture (testdata/dialects/captures/<dialect>/<variant>.txt) is an
// HTTP/1.1 response as the producer sent it: the status line, the headers
// that describe the stream (Date, Connection, Keep-Alive, Transfer-Encoding
// and ETag left out), a blank line, then the body bytes exactly as they
// arrived, de-chunked. ReadCapture parses one with net/http.
package producers

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/deps"
)

// A Variant is one request to one producer and what its reply must show.
type Variant struct {
	Dialect string // as `dialect:` names it: vercel-ui, ag-ui, a2a, langgraph, openai-chat, openai-responses, openai-agents
	Name    string // the capture's file name, without .txt
	Path    string // the request path
	Header  map[string]string
	Body    string

	// What TestProducersCapture checks of the reply.
	ContentType string            // the Content-Type's media type
	WantHeader  map[string]string // headers that identify the dialect
	Want        []string          // frame kinds that must appear (see the test's kinds)
	Last        string            // the last frame's kind
}

// Script is the node server of a dialect, in testdata/dialects.
var Script = map[string]string{
	"vercel-ui":        "vercel.mjs",
	"ag-ui":            "agui.mjs",
	"a2a":              "a2a.mjs",
	"langgraph":        "langgraph.mjs",
	"openai-chat":      "openai.mjs",
	"openai-responses": "openai.mjs",
	"openai-agents":    "openai-agents.mjs",
}

// Dir is the testdata/dialects folder.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "dialects")
}

// CapturePath is where a variant's capture lives.
func CapturePath(v Variant) string {
	return filepath.Join(Dir(), "captures", v.Dialect, v.Name+".txt")
}

// ReadCapture parses a capture file into a response whose Body reads the
// stream's bytes.
func ReadCapture(path string) (*http.Response, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
}

// dropped are the headers a capture leaves out: per connection or per run.
var dropped = map[string]bool{"Date": true, "Connection": true, "Keep-Alive": true, "Transfer-Encoding": true, "Etag": true}

// Capture is a reply in the capture format.
func Capture(resp *http.Response, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %s\r\n", resp.Status)
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		if !dropped[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range resp.Header[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// Start runs a producer's node server and returns its base URL. The server
// stops when the test ends. Skips the test when node is missing; fails it
// at once when `make deps` has not installed the npm packages.
func Start(t testing.TB, script string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found: the dialect producers are node servers")
	}
	deps.NPM(t, "dialects")
	// freePort's port may be taken before node binds it (freed, any bind
	// on the machine may get it): then node exits saying so, and another
	// is tried.
	for try := 1; ; try++ {
		if base := start(t, script, try < 5); base != "" {
			return base
		}
	}
}

// start is Start on one free port: "" when node found it taken and retry
// is set.
func start(t testing.TB, script string, retry bool) string {
	t.Helper()
	port := freePort(t)
	var out syncBuffer
	cmd := exec.Command("node", script, fmt.Sprint(port))
	cmd.Dir = Dir()
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting node %s: %v", script, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("node %s output:\n%s", script, out.String())
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		if err == nil && resp.StatusCode == http.StatusOK {
			return base
		}
		select {
		case <-done:
			if retry && strings.Contains(out.String(), "EADDRINUSE") {
				return ""
			}
			t.Fatalf("node %s exited: %s", script, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s did not answer /health: %s", script, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Do sends a variant's request to a producer at base and returns the reply
// with its whole body.
func Do(t testing.TB, base string, v Variant) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+v.Path, strings.NewReader(v.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, val := range v.Header {
		req.Header.Set(k, val)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", v.Dialect, v.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the reply: %v", v.Dialect, v.Name, err)
	}
	return resp, body
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer: the process's output, written by exec's copier, read at the end.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

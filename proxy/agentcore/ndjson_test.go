package agentcore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/proxy"
)

// ndjsonAgent is an agent with no WebSocket server: its bidi methods are
// each one POST whose body and response stay open, a line per frame.
//
//   - /live answers every line read with {"n":…,"got":…}, until the body
//     ends;
//   - /end answers one line, then ends its response;
//   - /die answers one line, then drops its connection;
//   - /big writes a line of size bytes;
//   - /flood writes lines of size bytes, never reading, until one fails;
//   - /refuse answers 500; /never never answers.
type ndjsonAgent struct {
	URL    string
	size   int
	mu     sync.Mutex
	header http.Header
	eof    chan time.Time // when /live's body ended
	sent   chan int       // the lines /flood wrote
}

func newNDJSONAgent(t testing.TB, unix bool) *ndjsonAgent {
	a := &ndjsonAgent{eof: make(chan time.Time, 10), sent: make(chan int, 1), size: 16 << 10}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	if unix {
		sock := filepath.Join(t.TempDir(), "agent.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = ln
		a.URL = "unix://" + sock
	}
	srv.Start()
	t.Cleanup(srv.Close)
	if !unix {
		a.URL = srv.URL
	}
	return a
}

func (a *ndjsonAgent) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	a.mu.Lock()
	a.header = r.Header.Clone()
	a.mu.Unlock()
	if r.URL.Path == "/refuse" {
		// Closing: else net/http's server reads the body to its end
		// before writing the headers of a handler that did not.
		w.Header().Set("Connection", "close")
		http.Error(w, "no", http.StatusInternalServerError)
		return
	}
	rc := http.NewResponseController(w)
	rc.EnableFullDuplex() // the response written while the body is read
	switch r.URL.Path {
	case "/never":
		io.Copy(io.Discard, r.Body) // until the sidecar gives up and closes
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc.Flush() // the headers, before the body is read
	in := bufio.NewScanner(r.Body)
	switch r.URL.Path {
	case "/live", "/end", "/die":
		for n := 1; in.Scan(); n++ {
			b, _ := json.Marshal(map[string]any{"n": n, "got": json.RawMessage(in.Bytes())})
			w.Write(append(b, '\n'))
			rc.Flush()
			switch r.URL.Path {
			case "/end":
				return
			case "/die":
				c, _, err := rc.Hijack()
				if err == nil {
					c.Close()
				}
				return
			}
		}
		a.eof <- time.Now()
	case "/big":
		w.Write([]byte(`"` + strings.Repeat("x", a.size) + "\"\n"))
		rc.Flush()
		io.Copy(io.Discard, r.Body)
	case "/flood":
		line := []byte(`"` + strings.Repeat("x", a.size-3) + "\"\n")
		n := 0
		for ; n < 10_000; n++ {
			if _, err := w.Write(line); err != nil {
				break
			}
			if rc.Flush() != nil {
				break
			}
		}
		a.sent <- n
	}
}

// ndjsonSidecar is a Server in front of agent whose AgentCore /ws
// converses with its bidi method ws; head goes before the methods.
func ndjsonSidecar(t testing.TB, agent *ndjsonAgent, head, ws string) string {
	url, _ := ndjsonLogged(t, agent, head, ws)
	return url
}

// ndjsonLogged is ndjsonSidecar with its logs.
func ndjsonLogged(t testing.TB, agent *ndjsonAgent, head, ws string) (string, *observer.ObservedLogs) {
	t.Helper()
	yaml := "upstream: {url: \"" + agent.URL + "\"}\n" + head + "methods:\n  query: {}\n"
	for _, m := range []string{"live", "end", "die", "big", "flood", "refuse"} {
		yaml += fmt.Sprintf("  %s: {mode: bidi, call: POST /%s, reply: ndjson}\n", m, m)
	}
	yaml += "  never: {mode: bidi, call: POST /never, reply: ndjson, timeouts: {connect: 1s, first_byte: 300ms}}\n"
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	s := &proxy.Server{Config: cfg, Logger: zap.New(observed), Protocols: []string{Name}}
	srv := httptest.NewServer(s.HandlerFor(newDoor(t, Options{Method: "query", WS: ws, InFlight: s.InFlight})))
	t.Cleanup(srv.Close)
	return srv.URL, logs
}

// readText reads the caller's next frame, failing the test after a
// generous bound rather than hanging when a line was held back.
func readText(t *testing.T, c *websocket.Conn) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err == nil && typ != websocket.MessageText {
		t.Errorf("frame of type %v, want text", typ)
	}
	return string(b), err
}

// TestNDJSONFrames: through one POST to a Go agent over TCP and over a
// Unix socket, each caller frame is one line of the body (a JSON value
// spanning lines sent compact) and each line of the response one text
// frame, each in turn before the next is sent: nothing holds a line
// back. The request carries the headers an upgrade would.
func TestNDJSONFrames(t *testing.T) {
	for _, unix := range []bool{false, true} {
		t.Run(fmt.Sprintf("unix=%v", unix), func(t *testing.T) {
			agent := newNDJSONAgent(t, unix)
			url := ndjsonSidecar(t, agent, "headers: {set: {X-Deployment: blue}}\n", "live")
			c, _, err := dialWS(t, url, http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range []struct{ in, want string }{
				{`{"text":"hi"}`, `{"got":{"text":"hi"},"n":1}`},
				{"{\n  \"text\": \"two\",\n  \"k\": [1, 2]\n}", `{"got":{"text":"two","k":[1,2]},"n":2}`},
				{`"three"`, `{"got":"three","n":3}`},
			} {
				c.Write(context.Background(), websocket.MessageText, []byte(f.in))
				if got, err := readText(t, c); err != nil || got != f.want {
					t.Fatalf("frame %d: answer %q, %v; want %q", i, got, err, f.want)
				}
			}
			c.Close(websocket.StatusNormalClosure, "")
			agent.mu.Lock()
			h := agent.header
			agent.mu.Unlock()
			if h.Get("Content-Type") != "application/x-ndjson" || h.Get("X-Sidecar-Hop") != "1" || h.Get("X-Deployment") != "blue" || !strings.Contains(h.Get("Traceparent"), "0af7651916cd43dd8448eb211c80319c") {
				t.Errorf("the agent's request had headers %v, want Content-Type application/x-ndjson, the hop header, headers.set and the trace", h)
			}
		})
	}
}

// TestNDJSONFramesRefused: a caller frame that is not one JSON value is
// refused 1007, a binary one 1003, and the agent's body ends.
func TestNDJSONFramesRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		typ  websocket.MessageType
		data string
		want websocket.StatusCode
	}{
		{"not json", websocket.MessageText, "hello there", websocket.StatusInvalidFramePayloadData},
		{"two values", websocket.MessageText, "{}\n{}", websocket.StatusInvalidFramePayloadData},
		{"binary", websocket.MessageBinary, "\x00\x01", websocket.StatusUnsupportedData},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agent := newNDJSONAgent(t, false)
			c, _, err := dialWS(t, ndjsonSidecar(t, agent, "", "live"), nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Write(context.Background(), tt.typ, []byte(tt.data))
			if _, err := readText(t, c); websocket.CloseStatus(err) != tt.want {
				t.Errorf("after a %s frame the caller read %v, want close %d", tt.name, err, tt.want)
			}
			select {
			case <-agent.eof:
			case <-time.After(10 * time.Second):
				t.Error("the agent's body did not end")
			}
		})
	}
}

// TestNDJSONEndings: the agent ending its response ends the conversation
// with 1000, after the lines it wrote; the agent dropping its connection
// is 1011 (the lines it wrote may be lost with it, as a WebSocket
// agent's frames are when it goes without a close); a line over
// limits.live.frame_bytes is 1011.
func TestNDJSONEndings(t *testing.T) {
	for _, tt := range []struct {
		method, first string
		want          websocket.StatusCode
	}{
		{"end", `{"got":{},"n":1}`, websocket.StatusNormalClosure},
		{"die", "", websocket.StatusInternalError},
		{"big", "", websocket.StatusInternalError},
	} {
		t.Run(tt.method, func(t *testing.T) {
			agent := newNDJSONAgent(t, false)
			agent.size = 64 << 10
			c, _, err := dialWS(t, ndjsonSidecar(t, agent, "limits: {live: {frame_bytes: 32KiB}}\n", tt.method), nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Write(context.Background(), websocket.MessageText, []byte(`{}`))
			if tt.first != "" {
				if got, err := readText(t, c); err != nil || got != tt.first {
					t.Fatalf("first frame %q, %v; want %q", got, err, tt.first)
				}
			}
			_, err = readText(t, c)
			for tt.method == "die" && err == nil { // a line that came before the drop
				_, err = readText(t, c)
			}
			if websocket.CloseStatus(err) != tt.want {
				t.Errorf("then the caller read %v, want close %d", err, tt.want)
			}
		})
	}
}

// TestNDJSONCallerLeaves: a caller gone without a close ends the agent's
// body at once: its reader sees EOF.
func TestNDJSONCallerLeaves(t *testing.T) {
	agent := newNDJSONAgent(t, false)
	c, _, err := dialWS(t, ndjsonSidecar(t, agent, "", "live"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Write(context.Background(), websocket.MessageText, []byte(`{}`))
	if _, err := readText(t, c); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	c.CloseNow()
	select {
	case at := <-agent.eof:
		// The behaviour is "at once"; the bound is generous for a busy
		// machine.
		if d := at.Sub(left); d > 2*time.Second {
			t.Errorf("the agent's body ended %v after the caller left, want at once", d)
		}
	case <-time.After(10 * time.Second):
		t.Error("the agent's body did not end after the caller left")
	}
}

// TestNDJSONSlowCaller: an agent writing 10,000 lines toward a caller
// that never reads gets the caller closed with 1008 once the backlog
// reaches its cap, with the sidecar's heap bounded by that cap.
func TestNDJSONSlowCaller(t *testing.T) {
	agent := newNDJSONAgent(t, false) // 10,000 lines of 16 KiB: more than sockets hold
	url, logs := ndjsonLogged(t, agent, "limits: {live: {frame_bytes: 16KiB, queue_frames: 16, queue_bytes: 256KiB}}\n", "flood")
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := make(chan uint64)
	stop := make(chan struct{})
	go func() { // the heap in use at its highest while the conversation runs
		var most uint64
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			most = max(most, m.HeapInuse)
			select {
			case <-stop:
				peak <- most
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	c, _, err := dialWS(t, url, nil) // and never reads, until the agent has stopped
	if err != nil {
		t.Fatal(err)
	}
	var sent int
	select {
	case sent = <-agent.sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's writes were never cut")
	}
	close(stop)
	highest := <-peak
	if sent >= 10_000 {
		t.Errorf("the agent wrote all %d lines toward a caller that never reads", sent)
	}
	// The close frame cannot reach a caller whose socket is full: the
	// log line says what it was sent.
	var line observer.LoggedEntry
	waitFor(t, func() bool {
		l := logs.FilterMessage("call").All()
		if len(l) > 0 {
			line = l[0]
		}
		return len(l) > 0
	})
	if f := line.ContextMap(); f["close_code"] != int64(1008) || f["ended_by"] != "sidecar" {
		t.Errorf("call log line = %v, want the sidecar's 1008 to the slow caller", f)
	}
	c.CloseNow()
	// A small multiple of the queue, with room for the garbage of lines
	// written and not yet collected (the agent is in this process):
	// nothing like the 160 MiB the agent sends.
	if grew := int64(highest) - int64(before.HeapInuse); grew > 16*(256<<10)+8<<20 {
		t.Errorf("heap grew %d bytes relaying to a caller that never reads, want at most a small multiple of the 256 KiB queue", grew)
	}
}

// TestNDJSONRefused: an agent answering other than 2xx refuses the
// caller's upgrade 502; one that never answers, 504 once the method's
// connect and first_byte ran out.
func TestNDJSONRefused(t *testing.T) {
	agent := newNDJSONAgent(t, false)
	for _, tt := range []struct {
		method string
		want   int
	}{{"refuse", http.StatusBadGateway}, {"never", http.StatusGatewayTimeout}} {
		_, resp, err := dialWS(t, ndjsonSidecar(t, agent, "", tt.method), nil)
		if err == nil || resp == nil || resp.StatusCode != tt.want {
			t.Errorf("%s: upgrade answered %v, %v; want %d", tt.method, status(resp), err, tt.want)
		}
	}
}

// TestNDJSONPython: examples/live-ndjson/agent.py, a standard-library
// Python agent reading the chunked body line by line, converses through
// /ws with a Go caller: each frame answered in turn, and its ending the
// response on {"bye":true} is the caller's 1000; the `ws` npm package's
// caller too.
func TestNDJSONPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	cmd := exec.Command("python3", filepath.Join(deps.Repo(), "examples", "live-ndjson", "agent.py"), "0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	l, err := bufio.NewReader(out).ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(l), "listening ")
	if err != nil || !ok {
		t.Fatalf("agent.py said %q, %v; want listening <port>", l, err)
	}
	agent := &ndjsonAgent{URL: "http://127.0.0.1:" + port}
	url, _ := ndjsonLogged(t, agent, "", "live")
	c, _, err := dialWS(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []struct{ in, want string }{
		{`{"say":"héllo"}`, `{"turn":1,"echo":{"say":"héllo"}}`},
		{"[1,\n 2]", `{"turn":2,"echo":[1,2]}`},
		{`{"bye":true}`, `{"turn":3,"bye":true}`},
	} {
		c.Write(context.Background(), websocket.MessageText, []byte(f.in))
		if got, err := readText(t, c); err != nil || got != f.want {
			t.Fatalf("frame %d: answer %q, %v; want %q", i, got, err, f.want)
		}
	}
	if _, err := readText(t, c); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after bye the caller read %v, want close 1000", err)
	}

	// The `ws` npm package as the caller.
	got := deps.Node(t, "ws", "ndjson-client.mjs", wsURL(url))
	want := []string{`text {"turn":1,"echo":{"say":"héllo"}}`, `text {"turn":2,"bye":true}`, "close 1000 the agent ended its response"}
	if !slices.Equal(got, want) {
		t.Errorf("ndjson-client.mjs printed %q, want %q", got, want)
	}
}

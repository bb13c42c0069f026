package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/deps"
	"github.com/sidecar-dev/sidecar/proxy/devapi"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// echoAgent is an agent's WebSocket server at GET /live: it echoes every
// frame as it came (text as text, binary as binary) until the text "bye",
// which it answers by closing with 4000 "agent done". Each text frame it
// read goes to got, and the close the caller's side sent it to closed
// ("4001 caller done"), both as they come.
func echoAgent(t *testing.T) (url string, got, closed <-chan string) {
	t.Helper()
	frames, closes := make(chan string, 64), make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/live" {
			http.NotFound(w, r)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, data, err := c.Read(r.Context())
			if err != nil {
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					closes <- fmt.Sprintf("%d %s", ce.Code, ce.Reason)
				}
				return
			}
			if typ == websocket.MessageText {
				frames <- string(data)
				if string(data) == "bye" {
					c.Close(4000, "agent done")
					return
				}
			}
			if c.Write(r.Context(), typ, data) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, frames, closes
}

// startDev runs the built binary's `sidecar dev` with the method map yaml
// (AGENT replaced by agent), both listeners on loopback ports of its
// choosing, until the test ends; it returns the dev listener's URL once
// the contract listener answers /healthz 200.
func startDev(t *testing.T, yaml, agent string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "sidecar.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(yaml, "AGENT", agent)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "dev", "--config", cfg, "--listen", "127.0.0.1:0", "--dev-listen", "127.0.0.1:0")
	out := &devOutput{dev: make(chan string, 1)}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Error("sidecar dev still running 15s after SIGINT")
		}
	})
	var dev string
	select {
	case dev = <-out.dev:
	case err := <-exited:
		exited <- err
		t.Fatalf("sidecar dev exited: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("no dev: line after 15s")
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := testClient.Get("http://" + out.contractAddr() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return dev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the contract listener's /healthz not 200 after 15s: %v", err)
		}
	}
}

// devLiveMap has a bidi method reached by two doors mounted on the
// platform's port: AgentCore's /ws (frames as they are) and the live door
// at /live (the platform's framing).
const devLiveMap = `upstream: {url: "AGENT"}
shutdown: {drain: 1s}
methods:
  query: {call: POST /q}
  bidi_stream_query: {mode: bidi, call: GET /live}
protocols:
  agentcore: {mount: /, method: query, ws: bidi_stream_query}
  live: {mount: /live, method: bidi_stream_query}
`

// engineWS is the WebSocket passthrough's path for the container path p
// under version.
func engineWS(version, p string) string {
	return "/reasoningEngines/ws/" + version + "/projects/my-project/locations/us-central1/reasoningEngines/123/api" + p
}

// dialWS opens a WebSocket at url, failing the test on an error.
func dialWS(t *testing.T, ctx context.Context, url string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dialling %s: HTTP %d: %v", url, status, err)
	}
	return c
}

// TestDevWebSocketPassthrough: sidecar dev's WebSocket passthrough
// (/reasoningEngines/ws/{v1beta1|v1}/…/api/{path}) reaches the contract
// listener's /{path} as a WebSocket: a Go caller's text and binary frames
// reach the echo agent behind AgentCore's /ws and come back, the agent's
// close reaches the caller with its code and reason, and the caller's
// reaches the agent; the live door's mount is reached the same way, in
// its framing.
func TestDevWebSocketPassthrough(t *testing.T) {
	agent, got, closed := echoAgent(t)
	dev := startDev(t, devLiveMap, agent)
	ws := "ws" + strings.TrimPrefix(dev, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	for _, version := range []string{"v1beta1", "v1"} {
		c := dialWS(t, ctx, ws+engineWS(version, "/ws"))
		for _, f := range []struct {
			typ  websocket.MessageType
			data string
		}{{websocket.MessageText, `{"text":"hi"}`}, {websocket.MessageBinary, "\x00\x01\x02"}, {websocket.MessageText, "again"}} {
			if err := c.Write(ctx, f.typ, []byte(f.data)); err != nil {
				t.Fatalf("%s: writing %q: %v", version, f.data, err)
			}
			typ, data, err := c.Read(ctx)
			if err != nil || typ != f.typ || string(data) != f.data {
				t.Fatalf("%s: the echo of %v %q = %v %q, %v", version, f.typ, f.data, typ, data, err)
			}
		}
		if err := c.Write(ctx, websocket.MessageText, []byte("bye")); err != nil {
			t.Fatal(err)
		}
		_, _, err := c.Read(ctx)
		if code, reason := websocket.CloseStatus(err), closeReason(err); code != 4000 || reason != "agent done" {
			t.Errorf("%s: after bye the caller read %v (close %d %q), want the agent's close 4000 \"agent done\"", version, err, code, reason)
		}
		c.CloseNow()
	}
	drainFrames(got)

	// The caller's close reaches the agent with its code and reason.
	c := dialWS(t, ctx, ws+engineWS("v1beta1", "/ws"))
	if err := c.Write(ctx, websocket.MessageText, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close(4001, "caller done")
	select {
	case cl := <-closed:
		if cl != "4001 caller done" {
			t.Errorf("the agent got the close %q, want the caller's 4001 caller done", cl)
		}
	case <-ctx.Done():
		t.Fatal("the agent never got the caller's close")
	}
	drainFrames(got)

	// A cross-site page's upgrade is the dev listener's 403, in its
	// shape, before the sidecar is reached.
	_, resp, err := websocket.Dial(ctx, ws+engineWS("v1beta1", "/ws"), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("an upgrade with a cross-site Origin: %v, %v; want 403", resp, err)
	}
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), `"status":"PERMISSION_DENIED"`) {
		t.Errorf("an upgrade with a cross-site Origin: %s, want the dev API's PERMISSION_DENIED", b)
	}

	// The live door's mount, in the platform's framing.
	c = dialWS(t, ctx, ws+engineWS("v1beta1", "/live"))
	defer c.CloseNow()
	sendRead(t, ctx, c, `{"setup": {"class_method": "bidi_stream_query"}}`, "")
	sendRead(t, ctx, c, `{"bidi_stream_input": {"n": 1}}`, `{"bidiStreamOutput":{"n": 1}}`)
	c.Close(websocket.StatusNormalClosure, "")
}

// sendRead writes frame to c, then, unless want is "", reads a frame and
// checks it is want, byte for byte.
func sendRead(t *testing.T, ctx context.Context, c *websocket.Conn, frame, want string) {
	t.Helper()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatalf("writing %s: %v", frame, err)
	}
	if want == "" {
		return
	}
	typ, data, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageText || string(data) != want {
		t.Fatalf("after %s read %v %s, %v; want %s", frame, typ, data, err, want)
	}
}

// closeReason is the reason of the close err carries, "" if none.
func closeReason(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return ""
}

// drainFrames empties a channel of frames the agent got.
func drainFrames(ch <-chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestDevBidiEndpoint: sidecar dev's public bidi endpoint, as Agent
// Platform's Python SDK dials it (…/ws/google.cloud.aiplatform.v1beta1.ReasoningEngineExecutionService/BidiQueryReasoningEngine),
// reaches the live door's mount: the SDK's setup frame and its
// bidi_stream_input frame, as json.dumps writes them, reach the agent as
// the setup's input and the input, byte for byte, and the agent's
// frames come back as {"bidiStreamOutput": …}.
func TestDevBidiEndpoint(t *testing.T) {
	agent, got, _ := echoAgent(t)
	dev := startDev(t, devLiveMap, agent)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, version := range []string{"v1beta1", "v1"} {
		c := dialWS(t, ctx, "ws"+strings.TrimPrefix(dev, "http")+"/ws/google.cloud.aiplatform."+version+".ReasoningEngineExecutionService/BidiQueryReasoningEngine")
		sendRead(t, ctx, c, `{"setup": {"name": "projects/P/locations/L/reasoningEngines/ID", "class_method": "bidi_stream_query", "input": {"query": "hello"}}}`,
			`{"bidiStreamOutput":{"query": "hello"}}`)
		sendRead(t, ctx, c, `{"bidi_stream_input": {"query": "world"}}`, `{"bidiStreamOutput":{"query": "world"}}`)
		for _, want := range []string{`{"query": "hello"}`, `{"query": "world"}`} {
			if f := <-got; f != want {
				t.Errorf("%s: the agent got %s, want %s", version, f, want)
			}
		}
		c.Close(websocket.StatusNormalClosure, "")
	}
}

// TestDevLiveListed: sidecar dev gives each door's conversations to the
// dev listener with their URL on the door's listener and, for a door
// mounted on the platform's port, their path on the WebSocket
// passthrough: the live door at its mount (under the platform's framing
// every bidi method, the section's first; raw, the section's only) and
// AgentCore's /ws, mounted at "/" or on its own listener.
func TestDevLiveListed(t *testing.T) {
	const methods = "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  query: {}\n  a: {mode: bidi, call: GET /a}\n  b: {mode: bidi, call: GET /b}\nprotocols:\n"
	for _, tt := range []struct {
		doors string
		want  []devapi.Live
	}{
		{"  live: {mount: /live, method: b}\n  agentcore: {mount: /, method: query, ws: a}\n", []devapi.Live{
			{URL: "http://127.0.0.1:8080/ws", Passthrough: devapi.WSPassthroughPath("/ws")},
			{URL: "http://127.0.0.1:8080/live", Passthrough: devapi.WSPassthroughPath("/live")},
		}},
		{"  live: {listen: \"127.0.0.1:8082\", method: b, framing: raw}\n  agentcore: {listen: \"127.0.0.1:9000\", method: query, ws: a}\n", []devapi.Live{
			{URL: "http://127.0.0.1:9000/ws"},
			{URL: "http://127.0.0.1:8082/"},
		}},
	} {
		cfg, err := config.Parse("sidecar.yaml", []byte(methods+tt.doors), doors.Kinds(doors.All)...)
		if err != nil {
			t.Fatal(err)
		}
		var got []devapi.Live
		var summary []string
		for _, d := range devDoors(cfg, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8081", noEnv) {
			for _, l := range d.Live {
				got = append(got, devapi.Live{URL: l.URL, Passthrough: l.Passthrough})
				summary = append(summary, fmt.Sprintf("%s %s %v %v", d.Protocol, l.Path, l.Methods, l.Platform))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: conversations at %+v\nwant %+v", tt.doors, got, tt.want)
		}
		wantSummary := "agentcore /ws [a] false|live / [b a] true"
		if strings.Contains(tt.doors, "raw") {
			wantSummary = "agentcore /ws [a] false|live / [b] false"
		}
		if s := strings.Join(summary, "|"); s != wantSummary {
			t.Errorf("%s: conversations %s, want %s", tt.doors, s, wantSummary)
		}
	}
}

// TestDevWebSocketNode: the `ws` npm package as the caller through sidecar
// dev: client.mjs through the WebSocket passthrough to AgentCore's /ws
// (text and binary echoed, the agent's close 4000 relayed), and
// platform.mjs, the SDK's frames as json.dumps writes them, through the
// bidi endpoint and through the passthrough to the live door's mount.
func TestDevWebSocketNode(t *testing.T) {
	agent, _, _ := echoAgent(t)
	ws := "ws" + strings.TrimPrefix(startDev(t, devLiveMap, agent), "http")
	got := deps.Node(t, "ws", "client.mjs", ws+engineWS("v1beta1", "/ws"))
	if want := []string{`text {"say":"héllo"}`, "binary 000102ff", "close 4000 agent done"}; !slices.Equal(got, want) {
		t.Errorf("client.mjs through the passthrough printed %q, want %q", got, want)
	}
	want := []string{
		`text {"bidiStreamOutput":{"query": "hello"}}`,
		`text {"bidiStreamOutput":{"query": "héllo again", "n": [1, 2]}}`,
		`close 1000 caller done`,
	}
	for _, url := range []string{ws + "/ws/google.cloud.aiplatform.v1beta1.ReasoningEngineExecutionService/BidiQueryReasoningEngine",
		ws + engineWS("v1beta1", "/live")} {
		if got := deps.Node(t, "ws", "platform.mjs", url, "bidi_stream_query"); !slices.Equal(got, want) {
			t.Errorf("platform.mjs at %s printed %q, want %q", url, got, want)
		}
	}
}

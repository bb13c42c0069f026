package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/config"
)

// wide is room for the big frames of these tests.
var wide = config.Live{FrameBytes: 1 << 20, QueueFrames: 64, QueueBytes: 4 << 20, Idle: time.Minute, MaxDuration: time.Minute}

// wireRead is one frame as a raw peer read it.
type wireRead struct {
	fin     bool
	op      byte
	payload []byte
}

// rawAgent is an agent speaking WebSocket by hand: the frames the relay
// sends it (each checked masked) come on frames, and the test writes its
// own frames to conn as they are.
type rawAgent struct {
	conn   chan net.Conn
	frames chan wireRead
}

// newRawRelay serves a rawAgent and a front relaying to it under lim; the
// conversation's Result comes on results. The agent's frames in opening
// are sent in the same write as its upgrade's response.
func newRawRelay(t *testing.T, lim config.Live, opening ...[]byte) (*rawAgent, string, chan Result) {
	t.Helper()
	ag := &rawAgent{conn: make(chan net.Conn, 1), frames: make(chan wireRead, 64)}
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, br, ok := upgradeByHand(w, r, opening...)
		if !ok {
			return
		}
		defer conn.Close()
		ag.conn <- conn
		defer close(ag.frames)
		for {
			fin, op, p, err := readMasked(br)
			if err != nil {
				return
			}
			ag.frames <- wireRead{fin, op, p}
			if op == opClose {
				return
			}
		}
	}))
	t.Cleanup(as.Close)
	p := relayFront(t, as, lim)
	return ag, p.url, p.results
}

// next is the next frame the agent read.
func (ag *rawAgent) next(t *testing.T) wireRead {
	t.Helper()
	select {
	case f, ok := <-ag.frames:
		if !ok {
			t.Fatal("the agent's connection ended")
		}
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no frame reached the agent")
		return wireRead{}
	}
}

// TestRelayPassesFramesAsSent: between two WebSockets the relay passes
// frames on as they came, both ways: a message's fragments stay
// fragments, a frame bigger than the relay's read buffer arrives whole,
// and one written a byte at a time arrives as one frame; masked toward
// the agent, unmasked toward the caller. A ping among the fragments is
// the sidecar's to answer, not relayed; the counts are messages and their
// payload bytes.
func TestRelayPassesFramesAsSent(t *testing.T) {
	ag, url, results := newRawRelay(t, wide)
	rc := dialRaw(t, url)
	agent := <-ag.conn

	big := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16) // 100 KiB
	rc.send(
		wireFrame(false, opText, []byte("hel"), true),
		wireFrame(true, opPing, []byte("ping"), true),
		wireFrame(false, opContinuation, []byte("lo"), true),
		wireFrame(true, opContinuation, []byte("!"), true),
	)
	rc.send(wireFrame(true, opBinary, big, true))
	for _, b := range wireFrame(true, opText, []byte("slow"), true) {
		rc.send([]byte{b})
		time.Sleep(time.Millisecond)
	}
	for i, want := range []wireRead{
		{false, opText, []byte("hel")}, {false, opContinuation, []byte("lo")}, {true, opContinuation, []byte("!")},
		{true, opBinary, big}, {true, opText, []byte("slow")},
	} {
		if got := ag.next(t); got.fin != want.fin || got.op != want.op || !bytes.Equal(got.payload, want.payload) {
			t.Fatalf("agent's frame %d: fin %v op %d %d bytes, want fin %v op %d %d bytes", i, got.fin, got.op, len(got.payload), want.fin, want.op, len(want.payload))
		}
	}
	if fin, op, b := rc.read(); !fin || op != opPong || string(b) != "ping" {
		t.Fatalf("caller's first frame back: fin %v op %d %q, want the sidecar's pong", fin, op, b)
	}

	huge := bytes.Repeat([]byte{7}, 200<<10)
	var out bytes.Buffer
	out.Write(wireFrame(false, opText, []byte("ab"), false))
	out.Write(wireFrame(true, opContinuation, []byte("cd"), false))
	out.Write(wireFrame(true, opBinary, huge, false))
	if _, err := agent.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	for i, want := range []wireRead{{false, opText, []byte("ab")}, {true, opContinuation, []byte("cd")}, {true, opBinary, huge}} {
		if fin, op, b := rc.read(); fin != want.fin || op != want.op || !bytes.Equal(b, want.payload) {
			t.Fatalf("caller's frame %d: fin %v op %d %d bytes, want fin %v op %d %d bytes", i, fin, op, len(b), want.fin, want.op, len(want.payload))
		}
	}
	rc.send(wireFrame(true, opClose, []byte{0x03, 0xe8}, true))
	rc.wantClose(websocket.StatusNormalClosure)
	r := <-results
	if want := (Count{3, 6 + int64(len(big)) + 4}); r.In != want {
		t.Errorf("Result in %+v, want %+v", r.In, want)
	}
	if want := (Count{2, 4 + int64(len(huge))}); r.Out != want {
		t.Errorf("Result out %+v, want %+v", r.Out, want)
	}
}

// TestRelayCloseWithHandshake: frames and a close the agent sends in the
// same write as its upgrade's response (read along with the handshake)
// are relayed at once, the close too: the caller reads the frames, then
// the agent's 4000, and the agent gets the close answered.
func TestRelayCloseWithHandshake(t *testing.T) {
	ag, url, results := newRawRelay(t, wide,
		wireFrame(true, opText, []byte("one"), false), wireFrame(true, opText, []byte("two"), false),
		wireFrame(true, opClose, []byte{0x0f, 0xa0, 'b', 'y', 'e'}, false))
	rc := dialRaw(t, url)
	<-ag.conn
	for _, want := range []string{"one", "two"} {
		if _, op, b := rc.read(); op != opText || string(b) != want {
			t.Fatalf("caller read op %d %q, want %q", op, b, want)
		}
	}
	rc.wantClose(4000)
	rc.send(wireFrame(true, opClose, []byte{0x0f, 0xa0}, true))
	if f := ag.next(t); f.op != opClose || len(f.payload) < 2 || binary.BigEndian.Uint16(f.payload) != 4000 {
		t.Fatalf("agent read op %d %q, want its close answered with 4000", f.op, f.payload)
	}
	if r := <-results; r.EndedBy != Agent || r.Code != 4000 || r.Reason != "bye" || r.Out.Frames != 2 {
		t.Errorf("Result = %+v, want ended by the agent with 4000 bye, two frames out", r)
	}
}

// TestRelayAgentMasks: a frame the agent masks breaks the protocol (a
// server's frames are not masked, and the caller's library would refuse
// it): the agent is closed 1002, the caller 1011, and the frame is not
// relayed.
func TestRelayAgentMasks(t *testing.T) {
	ag, url, results := newRawRelay(t, wide)
	rc := dialRaw(t, url)
	agent := <-ag.conn
	agent.Write(wireFrame(true, opText, []byte("masked"), true))
	rc.wantClose(websocket.StatusInternalError)
	rc.send(wireFrame(true, opClose, []byte{0x03, 0xe8}, true))
	for {
		f := ag.next(t)
		if f.op != opClose {
			continue
		}
		if len(f.payload) < 2 || websocket.StatusCode(binary.BigEndian.Uint16(f.payload)) != websocket.StatusProtocolError {
			t.Fatalf("agent's close %q, want 1002", f.payload)
		}
		break
	}
	if r := <-results; r.Out.Frames != 0 || r.EndedBy != Agent {
		t.Errorf("Result = %+v, want nothing relayed out, ended by the agent", r)
	}
}

// TestWSHeldPong: a pong the WS owes its peer while a chunk is half
// written (the socket took only part of it) waits for the chunk's end:
// the peer reads the whole frame, then the pong. The peer reads nothing
// until then, so that the socket takes only what its buffers hold.
func TestWSHeldPong(t *testing.T) {
	c, rc := acceptedWS(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	defer rc.c.Close() // first: c's Close then finds the peer gone
	nc, br := rc.c, rc.br
	// Buffers of a set size on both ends, whatever the machine's
	// defaults: together they hold far less than the frame, and are
	// still large enough for the frame to flow once the peer reads.
	nc.(*net.TCPConn).SetReadBuffer(256 << 10)
	c.conn.(*net.TCPConn).SetWriteBuffer(256 << 10)

	payload := bytes.Repeat([]byte("x"), 4<<20)
	frame := wireFrame(true, opBinary, payload, false)
	ctx := context.Background()
	n, err := c.TryWriteChunk(ctx, frame)
	if err != nil || n == 0 || n == len(frame) {
		t.Fatalf("TryWriteChunk = %d, %v; want part of the %d bytes taken", n, err, len(frame))
	}
	// Written now, the pong would wait on the full socket: the deadline
	// makes that an error rather than a hang.
	c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	if err := c.control(opPong, []byte("held")); err != nil {
		t.Fatalf("the pong mid-frame: %v, want it held", err)
	}
	c.conn.SetWriteDeadline(time.Time{})
	done := make(chan error, 1)
	go func() { done <- c.WriteChunk(ctx, frame[n:]) }()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if fin, op, b, err := readFrame(br); err != nil || !fin || op != opBinary || !bytes.Equal(b, payload) {
		t.Fatalf("first frame: fin %v op %d %d bytes, %v; want the whole binary frame", fin, op, len(b), err)
	}
	if fin, op, b, err := readFrame(br); err != nil || !fin || op != opPong || string(b) != "held" {
		t.Fatalf("second frame: fin %v op %d %q, %v; want the held pong", fin, op, b, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRelayFramesWithUpgrade: frames the caller sends in the same write
// as its upgrade request (read along with the request) reach the agent,
// in order, before the ones it sends later.
func TestRelayFramesWithUpgrade(t *testing.T) {
	ag, url, results := newRawRelay(t, wide)
	host := strings.TrimPrefix(url, "http://")
	nc, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := "GET / HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	nc.Write(append(append([]byte(req), wireFrame(true, opText, []byte("early"), true)...), wireFrame(false, opBinary, []byte("frag"), true)...))
	br := bufio.NewReader(nc)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	<-ag.conn
	nc.Write(wireFrame(true, opContinuation, []byte("ment"), true))
	for i, want := range []wireRead{{true, opText, []byte("early")}, {false, opBinary, []byte("frag")}, {true, opContinuation, []byte("ment")}} {
		if got := ag.next(t); got.fin != want.fin || got.op != want.op || !bytes.Equal(got.payload, want.payload) {
			t.Fatalf("agent's frame %d: fin %v op %d %q, want fin %v op %d %q", i, got.fin, got.op, got.payload, want.fin, want.op, want.payload)
		}
	}
	nc.Write(wireFrame(true, opClose, []byte{0x03, 0xe8}, true))
	if r := <-results; r.In != (Count{2, 13}) || r.EndedBy != Caller {
		t.Errorf("Result = %+v, want two messages of 13 bytes in, ended by the caller", r)
	}
}

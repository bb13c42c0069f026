package live

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/metrics"
)

// rawClient is a caller speaking WebSocket by hand, frame by frame, so
// that a test can send what a library would not (fragments, pings between
// them, several frames in one segment).
type rawClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

// dialRaw upgrades a connection to the server at url (http://) by hand.
func dialRaw(t *testing.T, url string) *rawClient {
	t.Helper()
	host := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", host)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %s", resp.Status)
	}
	return &rawClient{t: t, c: c, br: br}
}

// wireFrame is a frame's bytes: masked with key when mask is set (a
// client's), else not (a server's).
func wireFrame(fin bool, op byte, payload []byte, mask bool) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	var m byte
	if mask {
		m = 0x80
	}
	h := []byte{b0}
	switch l := len(payload); {
	case l < 126:
		h = append(h, m|byte(l))
	case l <= 0xffff:
		h = append(h, m|126)
		h = binary.BigEndian.AppendUint16(h, uint16(l))
	default:
		h = append(h, m|127)
		h = binary.BigEndian.AppendUint64(h, uint64(l))
	}
	p := bytes.Clone(payload)
	if mask {
		key := [4]byte{0x12, 0x34, 0x56, 0x78}
		h = append(h, key[:]...)
		for i := range p {
			p[i] ^= key[i%4]
		}
	}
	return append(h, p...)
}

// send writes frames in one write: one TCP segment, for small ones.
func (rc *rawClient) send(frames ...[]byte) {
	rc.t.Helper()
	if _, err := rc.c.Write(bytes.Join(frames, nil)); err != nil {
		rc.t.Fatal(err)
	}
}

// readFrame reads one frame the server sent (unmasked).
func readFrame(br *bufio.Reader) (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(br, h[:]); err != nil {
		return
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[1]&0x80 != 0 {
		return fin, op, nil, errors.New("a masked frame from the server")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		_, err = io.ReadFull(br, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		_, err = io.ReadFull(br, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	if err != nil {
		return
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(br, payload)
	return
}

func (rc *rawClient) read() (fin bool, op byte, payload []byte) {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	fin, op, payload, err := readFrame(rc.br)
	if err != nil {
		rc.t.Fatalf("reading a frame: %v", err)
	}
	return fin, op, payload
}

// wantClose reads frames up to a close frame and checks its code.
func (rc *rawClient) wantClose(code websocket.StatusCode) {
	rc.t.Helper()
	for {
		_, op, p := rc.read()
		if op != opClose {
			continue
		}
		if len(p) < 2 || websocket.StatusCode(binary.BigEndian.Uint16(p)) != code {
			rc.t.Fatalf("close frame %q, want code %d", p, code)
		}
		return
	}
}

// TestWSFragmentedMessage: a text message the caller sends in three
// fragments, a ping between them, reaches the agent as one message; the
// ping is answered by the sidecar at once (a pong with its payload),
// a pong the caller sends is dropped, and neither is relayed.
func TestWSFragmentedMessage(t *testing.T) {
	p := newPair(t, small, echo)
	rc := dialRaw(t, p.url)
	rc.send(
		wireFrame(false, opText, []byte("hel"), true),
		wireFrame(true, opPing, []byte("are you there"), true),
		wireFrame(false, opContinuation, []byte("lo, "), true),
		wireFrame(true, opPong, []byte("unasked"), true),
		wireFrame(true, opContinuation, []byte("wörld"), true),
	)
	if fin, op, b := rc.read(); !fin || op != opPong || string(b) != "are you there" {
		t.Fatalf("first frame back: fin %v op %d %q, want the pong to the ping", fin, op, b)
	}
	if fin, op, b := rc.read(); !fin || op != opText || string(b) != "hello, wörld" {
		t.Fatalf("echo: fin %v op %d %q, want one text frame \"hello, wörld\"", fin, op, b)
	}
	rc.send(wireFrame(true, opClose, []byte{0x03, 0xe8}, true))
	rc.wantClose(websocket.StatusNormalClosure)
	if r := p.result(t); r.In != (Count{1, 13}) || r.Out != (Count{1, 13}) || r.Code != websocket.StatusNormalClosure {
		t.Errorf("Result = %+v, want one frame of 13 bytes each way and 1000", r)
	}
}

// TestWSFramesInOneSegment: frames that arrive together, in one TCP
// segment, are each relayed, in order, both ways: the caller's, and the
// agent's sent in the same write as its upgrade's response (read along
// with the handshake).
func TestWSFramesInOneSegment(t *testing.T) {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var opening [][]byte
		for _, s := range []string{"one", "two", "three"} {
			opening = append(opening, wireFrame(true, opText, []byte(s), false))
		}
		conn, br, ok := upgradeByHand(w, r, opening...) // the response and three frames in one write
		if !ok {
			return
		}
		defer conn.Close()
		// Then echo what comes, frame for frame, until the close.
		for {
			fin, op, p, err := readMasked(br)
			if err != nil {
				return
			}
			conn.Write(wireFrame(fin, op, p, false))
			if op == opClose {
				return
			}
		}
	}))
	t.Cleanup(as.Close)
	p := relayFront(t, as, small)
	rc := dialRaw(t, p.url)
	var got []string
	for range 3 {
		_, _, b := rc.read()
		got = append(got, string(b))
	}
	if strings.Join(got, " ") != "one two three" {
		t.Fatalf("caller read %q, want the agent's three frames", got)
	}
	rc.send(wireFrame(true, opText, []byte("a"), true), wireFrame(true, opBinary, []byte("bb"), true), wireFrame(true, opText, []byte("ccc"), true))
	for _, want := range []struct {
		op byte
		s  string
	}{{opText, "a"}, {opBinary, "bb"}, {opText, "ccc"}} {
		if _, op, b := rc.read(); op != want.op || string(b) != want.s {
			t.Fatalf("echo: op %d %q, want op %d %q", op, b, want.op, want.s)
		}
	}
	rc.send(wireFrame(true, opClose, []byte{0x0f, 0xa0, 'o', 'k'}, true)) // 4000 "ok"
	rc.wantClose(4000)
	if r := <-p.results; r.In.Frames != 3 || r.Out.Frames != 6 || r.Code != 4000 || r.Reason != "ok" || r.EndedBy != Caller {
		t.Errorf("Result = %+v, want 3 frames in, 6 out, ended by the caller with 4000 ok", r)
	}
}

// upgradeByHand answers r's upgrade with 101 by hand, followed in the
// same write by the frames in opening: the agent's connection and what it
// reads it through; false when it cannot be taken over.
func upgradeByHand(w http.ResponseWriter, r *http.Request, opening ...[]byte) (net.Conn, *bufio.Reader, bool) {
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, false
	}
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n"
	conn.Write(append([]byte(resp), bytes.Join(opening, nil)...))
	return conn, brw.Reader, true
}

// readMasked reads a frame a client sent and unmasks it.
func readMasked(br *bufio.Reader) (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(br, h[:]); err != nil {
		return
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[1]&0x80 == 0 {
		return fin, op, nil, errors.New("an unmasked frame from the client")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		_, err = io.ReadFull(br, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		_, err = io.ReadFull(br, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	var key [4]byte
	if err == nil {
		_, err = io.ReadFull(br, key[:])
	}
	if err != nil {
		return
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(br, payload); err != nil {
		return
	}
	for i := range payload {
		payload[i] ^= key[i%4]
	}
	return
}

// TestWSReadLimit: a message over limits.live.frame_bytes is refused
// with 1009 and not relayed, whether it comes in one frame or in
// fragments each under the cap; one of exactly the cap passes.
func TestWSReadLimit(t *testing.T) {
	at := make([]byte, small.FrameBytes)
	half := make([]byte, small.FrameBytes/2+1)
	tests := []struct {
		name   string
		frames [][]byte
	}{
		{"one frame", [][]byte{wireFrame(true, opBinary, append(bytes.Clone(at), 0), true)}},
		{"fragments", [][]byte{wireFrame(false, opBinary, half, true), wireFrame(true, opContinuation, half, true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, small, echo)
			rc := dialRaw(t, p.url)
			rc.send(wireFrame(true, opBinary, at, true))
			if _, op, b := rc.read(); op != opBinary || len(b) != len(at) {
				t.Fatalf("echo of a frame at the cap: op %d, %d bytes", op, len(b))
			}
			rc.send(tt.frames...)
			rc.wantClose(websocket.StatusMessageTooBig)
			rc.send(wireFrame(true, opClose, []byte{0x03, 0xf1}, true)) // the client's answer: 1009
			if r := p.result(t); r.Code != websocket.StatusMessageTooBig || r.In.Frames != 1 || r.Outcome != metrics.BadRequest {
				t.Errorf("Result = %+v, want 1009, bad_request, only the frame at the cap relayed", r)
			}
		})
	}
}

// TestWSProtocolErrors: a client frame not masked, or a continuation with
// no message, is a protocol error: the caller gets 1002.
func TestWSProtocolErrors(t *testing.T) {
	for name, f := range map[string][]byte{
		"unmasked":          wireFrame(true, opText, []byte("hi"), false),
		"lone continuation": wireFrame(true, opContinuation, []byte("hi"), true),
		"reserved bits":     append([]byte{0x80 | 0x40 | opText}, wireFrame(true, opText, []byte("hi"), true)[1:]...),
	} {
		t.Run(name, func(t *testing.T) {
			p := newPair(t, small, echo)
			rc := dialRaw(t, p.url)
			rc.send(f)
			rc.wantClose(websocket.StatusProtocolError)
			if r := p.result(t); r.EndedBy != Caller || r.In.Frames != 0 {
				t.Errorf("Result = %+v, want ended by the caller, nothing relayed", r)
			}
		})
	}
}

// TestWSAgentPings: the agent's pings are answered by the sidecar (the
// agent's Ping returns), and the conversation goes on.
func TestWSAgentPings(t *testing.T) {
	pinged := make(chan error, 1)
	p := newPair(t, small, func(c *websocket.Conn) {
		ctx := context.Background()
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			pinged <- c.Ping(ctx)
		}()
		echo(c)
	})
	c := p.dial(t)
	ctx := context.Background()
	if err := <-pinged; err != nil {
		t.Fatalf("agent's ping: %v", err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(ctx); err != nil || string(b) != "still here" {
		t.Fatalf("echo after the ping: %q, %v", b, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	p.result(t)
}

// TestDialUpgradeError: an agent that answers the upgrade with an HTTP
// response is an *UpgradeError with its status.
func TestDialUpgradeError(t *testing.T) {
	as := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(as.Close)
	_, err := Dial(context.Background(), "ws"+strings.TrimPrefix(as.URL, "http")+"/run_live", as.Client(), nil, nil)
	var ue *UpgradeError
	if !errors.As(err, &ue) || ue.Status != http.StatusNotFound || ue.Text != "404 Not Found" {
		t.Fatalf("Dial error = %v, want an *UpgradeError 404 Not Found", err)
	}
}

// TestWSSubprotocol: the caller is offered the subprotocol the agent
// chose of the caller's, and the agent sees the request's headers.
func TestWSSubprotocol(t *testing.T) {
	gotHeader := make(chan string, 1)
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader <- r.Header.Get("X-Test")
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"chat.v2"}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		echo(c)
	}))
	t.Cleanup(as.Close)
	results := make(chan Result, 1)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var protocols []string
		for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
			for p := range strings.SplitSeq(v, ",") {
				protocols = append(protocols, strings.TrimSpace(p))
			}
		}
		a, err := Dial(r.Context(), "ws"+strings.TrimPrefix(as.URL, "http"), as.Client(), http.Header{"X-Test": {"yes"}}, protocols)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		rl, err := Accept(w, r, a, small)
		if err != nil {
			return
		}
		results <- rl.Run()
	}))
	t.Cleanup(front.Close)
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(front.URL, "http"), &websocket.DialOptions{Subprotocols: []string{"chat.v1", "chat.v2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if c.Subprotocol() != "chat.v2" {
		t.Errorf("caller's subprotocol = %q, want the agent's choice chat.v2", c.Subprotocol())
	}
	if h := <-gotHeader; h != "yes" {
		t.Errorf("agent's X-Test = %q, want the dial's header", h)
	}
	c.Close(websocket.StatusNormalClosure, "")
	<-results
}

// TestWSWriteNoFlush: a frame written with WriteNoFlush stays in the
// connection's buffer until Flush.
func TestWSWriteNoFlush(t *testing.T) {
	conns := make(chan *WS, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := acceptWS(w, r, "")
		if err != nil {
			return
		}
		conns <- c
	}))
	t.Cleanup(srv.Close)
	rc := dialRaw(t, srv.URL)
	c := <-conns
	defer c.Close(websocket.StatusNormalClosure, "")
	defer rc.c.Close() // first: Close then has no peer to wait for
	ctx := context.Background()
	if err := c.WriteNoFlush(ctx, websocket.MessageText, []byte("held")); err != nil {
		t.Fatal(err)
	}
	rc.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, _, _, err := readFrame(rc.br); !isTimeout(err) {
		t.Fatalf("read before Flush: %v, want nothing sent", err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, op, b := rc.read(); op != opText || string(b) != "held" {
		t.Fatalf("after Flush: op %d %q, want the frame", op, b)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fakeConn is a side of a conversation for the relay's own tests: Read
// returns what reads sends (a frame, or an error to end), writes are
// recorded in events ("w:data" per frame, "flush" per Flush), and the
// first write waits for gate when one is set.
type fakeConn struct {
	reads  chan any
	events chan string
	gate   chan struct{}
	once   sync.Once
	closed chan struct{}
	cl     sync.Once
}

func newFake() *fakeConn {
	return &fakeConn{reads: make(chan any, 16), events: make(chan string, 64), closed: make(chan struct{})}
}

func (f *fakeConn) Read(context.Context) (websocket.MessageType, []byte, error) {
	select {
	case v := <-f.reads:
		if err, ok := v.(error); ok {
			return 0, nil, err
		}
		return websocket.MessageText, []byte(v.(string)), nil
	case <-f.closed:
		return 0, nil, net.ErrClosed
	}
}

func (f *fakeConn) Write(ctx context.Context, typ websocket.MessageType, data []byte) error {
	panic("a Batcher is written with WriteNoFlush")
}

func (f *fakeConn) WriteNoFlush(ctx context.Context, typ websocket.MessageType, data []byte) error {
	if f.gate != nil {
		f.once.Do(func() { <-f.gate })
	}
	f.events <- "w:" + string(data)
	return nil
}

func (f *fakeConn) Flush(context.Context) error {
	f.events <- "flush"
	return nil
}

func (f *fakeConn) Close(websocket.StatusCode, string) error {
	f.cl.Do(func() { close(f.closed) })
	return nil
}

func (f *fakeConn) next(t *testing.T) string {
	t.Helper()
	select {
	case e := <-f.events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no write")
		return ""
	}
}

// TestRelayBatches: the relay writes a backlog to a Batcher frame by
// frame unflushed and flushes once its queue is empty; a lone frame is
// flushed at once, with no frame after it to push it out.
func TestRelayBatches(t *testing.T) {
	caller, agent := newFake(), newFake()
	agent.gate = make(chan struct{})
	rl := New(caller, agent, small)
	done := make(chan Result, 1)
	go func() { done <- rl.Run() }()

	caller.reads <- "1"
	// The writer holds frame 1 at the gate while 2, 3 and 4 queue.
	for _, s := range []string{"2", "3", "4"} {
		caller.reads <- s
	}
	deadline := time.Now().Add(5 * time.Second)
	for rl.in.q.len() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(agent.gate)
	var got []string
	for range 5 {
		got = append(got, agent.next(t))
	}
	if want := "w:1 w:2 w:3 w:4 flush"; strings.Join(got, " ") != want {
		t.Errorf("writes of a backlog = %q, want %q: one flush, once the queue is empty", strings.Join(got, " "), want)
	}

	caller.reads <- "lone"
	if e := agent.next(t); e != "w:lone" {
		t.Fatalf("write = %q, want the lone frame", e)
	}
	if e := agent.next(t); e != "flush" {
		t.Fatalf("after a lone frame: %q, want its flush, with no other frame", e)
	}

	caller.reads <- websocket.CloseError{Code: websocket.StatusNormalClosure}
	if r := <-done; r.In.Frames != 5 || r.EndedBy != Caller {
		t.Errorf("Result = %+v, want 5 frames in, ended by the caller", r)
	}
}

// acceptedWS is a WS as the caller's side (acceptWS) and the raw client
// that dialled it.
func acceptedWS(t *testing.T) (*WS, *rawClient) {
	t.Helper()
	conns := make(chan *WS, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := acceptWS(w, r, "")
		if err != nil {
			return
		}
		conns <- c
	}))
	t.Cleanup(srv.Close)
	rc := dialRaw(t, srv.URL)
	return <-conns, rc
}

// TestWSPending: Pending reports a whole message already read, behind
// control frames or fragments, and not a frame cut short or a message
// whose last fragment has not come.
func TestWSPending(t *testing.T) {
	c, rc := acceptedWS(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	defer rc.c.Close()
	ctx := context.Background()
	whole := wireFrame(true, opText, []byte("three"), true)
	rc.send(
		wireFrame(true, opText, []byte("one"), true),
		wireFrame(true, opPing, []byte("p"), true),
		wireFrame(false, opText, []byte("t"), true),
		wireFrame(true, opContinuation, []byte("wo"), true),
		whole[:len(whole)-2], // the third cut short
	)
	want := []struct {
		msg     string
		pending bool
	}{{"one", true}, {"two", false}}
	for _, w := range want {
		if _, b, err := c.Read(ctx); err != nil || string(b) != w.msg {
			t.Fatalf("Read = %q, %v; want %q", b, err, w.msg)
		}
		if got := c.Pending(); got != w.pending {
			t.Errorf("Pending after %q = %v, want %v", w.msg, got, w.pending)
		}
	}
	rc.send(whole[len(whole)-2:], wireFrame(false, opBinary, []byte("x"), true))
	if _, b, err := c.Read(ctx); err != nil || string(b) != "three" {
		t.Fatalf("Read = %q, %v; want three", b, err)
	}
	if c.Pending() {
		t.Error("Pending with only a message's first fragment read, want false")
	}
}

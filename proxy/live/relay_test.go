package live

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
)

// pair is a relay under test: a front server relaying each caller to an
// agent, each conversation's Relay as it starts (the latest, if the test
// takes none) and its Result.
type pair struct {
	url     string // the front's
	results chan Result
	relays  chan *Relay
}

// newPair serves agent as the agent's WebSocket handler and a front that
// relays to it under lim.
func newPair(t *testing.T, lim config.Live, agent func(c *websocket.Conn)) *pair {
	t.Helper()
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		agent(c)
	}))
	t.Cleanup(as.Close)
	return relayFront(t, as, lim)
}

// relayFront serves a front relaying each caller to the agent served by
// as under lim.
func relayFront(t *testing.T, as *httptest.Server, lim config.Live) *pair {
	t.Helper()
	p := &pair{results: make(chan Result, 1), relays: make(chan *Relay, 1)}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := Dial(r.Context(), "ws"+strings.TrimPrefix(as.URL, "http"), as.Client(), nil, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		rl, err := Accept(w, r, a, lim)
		if err != nil {
			return
		}
		select {
		case p.relays <- rl:
		default:
		}
		p.results <- rl.Run()
	}))
	t.Cleanup(front.Close)
	p.url = front.URL
	return p
}

// dial is a caller's connection to the front.
func (p *pair) dial(t *testing.T) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(p.url, "http"), nil)
	if err != nil {
		t.Fatalf("dialing the front: %v", err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// result waits for the conversation's Result.
func (p *pair) result(t *testing.T) Result {
	t.Helper()
	select {
	case r := <-p.results:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the relay did not end")
		return Result{}
	}
}

// echo answers every frame with itself, until the conversation ends.
func echo(c *websocket.Conn) {
	for {
		typ, b, err := c.Read(context.Background())
		if err != nil {
			return
		}
		if c.Write(context.Background(), typ, b) != nil {
			return
		}
	}
}

var small = config.Live{FrameBytes: 1 << 10, QueueFrames: 8, QueueBytes: 4 << 10, Idle: time.Minute, MaxDuration: time.Minute}

func TestRelayFrames(t *testing.T) {
	p := newPair(t, small, echo)
	c := p.dial(t)
	ctx := context.Background()
	sent := []struct {
		typ  websocket.MessageType
		data []byte
	}{{websocket.MessageText, []byte(`{"text":"héllo"}`)}, {websocket.MessageBinary, []byte{0, 1, 2, 255}}, {websocket.MessageText, nil}}
	for _, f := range sent {
		if err := c.Write(ctx, f.typ, f.data); err != nil {
			t.Fatal(err)
		}
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if typ != f.typ || !bytes.Equal(b, f.data) {
			t.Errorf("echo of %v %q = %v %q", f.typ, f.data, typ, b)
		}
	}
	c.Close(4001, "done here")
	r := p.result(t)
	if r.EndedBy != Caller || r.Code != 4001 || r.Reason != "done here" || r.Outcome != metrics.OK {
		t.Errorf("Result = %+v, want ended by the caller with 4001 %q", r, "done here")
	}
	if want := (Count{3, 21}); r.In != want || r.Out != want {
		t.Errorf("Result in %+v, out %+v, want %+v each way", r.In, r.Out, want)
	}
}

func TestRelayCloseRelayedAfterFrames(t *testing.T) {
	p := newPair(t, small, func(c *websocket.Conn) {
		ctx := context.Background()
		for _, s := range []string{"one", "two", "three"} {
			c.Write(ctx, websocket.MessageText, []byte(s))
		}
		c.Close(4000, "bye")
	})
	c := p.dial(t)
	var got []string
	for {
		_, b, err := c.Read(context.Background())
		if err != nil {
			if code := websocket.CloseStatus(err); code != 4000 {
				t.Errorf("caller's close = %v, want the agent's 4000", err)
			}
			break
		}
		got = append(got, string(b))
	}
	if strings.Join(got, " ") != "one two three" {
		t.Errorf("caller read %q before the close, want every frame the agent sent before it", got)
	}
	if r := p.result(t); r.EndedBy != Agent || r.Code != 4000 {
		t.Errorf("Result = %+v, want ended by the agent with 4000", r)
	}
}

func TestRelayCallerLeaves(t *testing.T) {
	closed := make(chan time.Time, 1)
	p := newPair(t, small, func(c *websocket.Conn) {
		for {
			if _, _, err := c.Read(context.Background()); err != nil {
				break
			}
		}
		closed <- time.Now()
	})
	c := p.dial(t)
	c.Write(context.Background(), websocket.MessageText, []byte("hi"))
	time.Sleep(50 * time.Millisecond) // the frame is on its way; then the caller vanishes
	left := time.Now()
	c.CloseNow() // no close frame
	select {
	case at := <-closed:
		// The bound is the behaviour: the agent learns at once.
		if d := at.Sub(left); d > 100*time.Millisecond {
			t.Errorf("agent's side closed %v after the caller left, want within 100ms", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent's side not closed after the caller left")
	}
	if r := p.result(t); r.EndedBy != Caller || r.Outcome != metrics.CallerLeft {
		t.Errorf("Result = %+v, want ended by the caller, caller_left", r)
	}
}

func TestRelayAgentDies(t *testing.T) {
	p := newPair(t, small, func(c *websocket.Conn) {
		c.Read(context.Background())
		c.CloseNow() // mid-conversation, no close frame
	})
	c := p.dial(t)
	c.Write(context.Background(), websocket.MessageText, []byte("hi"))
	_, _, err := c.Read(context.Background())
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusInternalError || !strings.Contains(ce.Reason, "agent") {
		t.Errorf("caller's read = %v, want a 1011 close naming the agent", err)
	}
	if r := p.result(t); r.EndedBy != Agent || r.Outcome != metrics.AgentDisconnected {
		t.Errorf("Result = %+v, want ended by the agent, agent_disconnected", r)
	}
}

func TestRelayFrameOverCap(t *testing.T) {
	p := newPair(t, small, echo)
	c := p.dial(t)
	ctx := context.Background()
	c.Write(ctx, websocket.MessageBinary, make([]byte, small.FrameBytes+1))
	_, _, err := c.Read(ctx)
	if code := websocket.CloseStatus(err); code != websocket.StatusMessageTooBig {
		t.Errorf("caller's read after a frame over the cap = %v, want 1009", err)
	}
	if r := p.result(t); r.Code != websocket.StatusMessageTooBig || r.In.Frames != 0 {
		t.Errorf("Result = %+v, want 1009 and no frame relayed", r)
	}
}

func TestRelaySlowCaller(t *testing.T) {
	const frames, size = 10_000, 16 << 10 // 160 MiB: more than the kernel's socket buffers hold
	lim := config.Live{FrameBytes: size, QueueFrames: 16, QueueBytes: 16 * size, Idle: time.Minute, MaxDuration: time.Minute}
	sentAll := make(chan int, 1)
	p := newPair(t, lim, func(c *websocket.Conn) {
		n := 0
		for ; n < frames; n++ {
			if c.Write(context.Background(), websocket.MessageBinary, make([]byte, size)) != nil {
				break
			}
		}
		sentAll <- n
	})
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
	c := p.dial(t) // and never reads
	r := p.result(t)
	close(stop)
	highest := <-peak
	if r.EndedBy != Sidecar || r.Code != websocket.StatusPolicyViolation {
		t.Errorf("Result = %+v, want the sidecar's 1008 to the slow caller", r)
	}
	if r.Out.Frames >= frames {
		t.Errorf("Result out %+v: every frame reached a caller that never reads", r.Out)
	}
	<-sentAll
	// The queue's cap plus the connections' buffers and the garbage of
	// frames written and not yet collected (the agent allocates each one,
	// in this process): a small multiple of it, nothing like the 160 MiB
	// the agent sends. How much garbage a collection leaves at the peak
	// depends on the machine's load, hence the room.
	if grew := int64(highest) - int64(before.HeapInuse); grew > 16*lim.QueueBytes+8<<20 {
		t.Errorf("heap grew %d bytes relaying to a caller that never reads, want at most a small multiple of the %d-byte queue", grew, lim.QueueBytes)
	}
	_ = c
}

func TestRelayClocks(t *testing.T) {
	tests := []struct {
		name string
		lim  config.Live
		want string
	}{
		{"idle", config.Live{FrameBytes: 1024, QueueFrames: 4, QueueBytes: 4096, Idle: 100 * time.Millisecond, MaxDuration: time.Minute}, "limits.live.idle"},
		{"max duration", config.Live{FrameBytes: 1024, QueueFrames: 4, QueueBytes: 4096, Idle: time.Minute, MaxDuration: 200 * time.Millisecond}, "limits.live.max_duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, tt.lim, echo)
			c := p.dial(t)
			_, _, err := c.Read(context.Background())
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || !strings.Contains(ce.Reason, tt.want) {
				t.Errorf("caller's read = %v, want 1001 naming %s", err, tt.want)
			}
			if r := p.result(t); r.Outcome != metrics.Timeout || r.EndedBy != Sidecar {
				t.Errorf("Result = %+v, want a timeout by the sidecar", r)
			}
		})
	}
}

func TestRelayShutdown(t *testing.T) {
	p := newPair(t, small, echo)
	c := p.dial(t)
	(<-p.relays).Shutdown()
	_, _, err := c.Read(context.Background())
	if code := websocket.CloseStatus(err); code != websocket.StatusGoingAway {
		t.Errorf("caller's read after Shutdown = %v, want 1001", err)
	}
	if r := p.result(t); r.Outcome != metrics.ShuttingDown {
		t.Errorf("Result = %+v, want shutting_down", r)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", 100)
	if got := Clip(long); len(got) > 123 || !strings.HasPrefix(long, got) || !utf8Valid(got) {
		t.Errorf("Clip(200 bytes of é) = %d bytes %q, want ≤ 123 bytes of whole characters", len(got), got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// upper is a door's framing around the caller's side: frames read are
// upper-cased, and a frame "bad" cannot be carried.
type upper struct{ *websocket.Conn }

func (u upper) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	typ, b, err := u.Conn.Read(ctx)
	if err == nil && string(b) == "bad" {
		return 0, nil, &FrameError{Code: websocket.StatusInvalidFramePayloadData, Reason: "bad is not a frame of this door"}
	}
	return typ, bytes.ToUpper(b), err
}

// TestRelayFraming: a side wrapped by a door's framing (Upgrade, then
// New) has its frames reshaped on the way, and a frame its framing
// cannot carry ends the conversation: the sender gets the FrameError's
// code and reason, the agent 1001.
func TestRelayFraming(t *testing.T) {
	agentGot := make(chan error, 1)
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				agentGot <- err
				return
			}
			c.Write(context.Background(), typ, b)
		}
	}))
	t.Cleanup(as.Close)
	results := make(chan Result, 1)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, err := Upgrade(w, r, small, "")
		if err != nil {
			return
		}
		a, err := Dial(r.Context(), "ws"+strings.TrimPrefix(as.URL, "http"), as.Client(), nil, nil)
		if err != nil {
			caller.Close(websocket.StatusInternalError, err.Error())
			return
		}
		results <- New(upper{caller}, a, small).Run()
	}))
	t.Cleanup(front.Close)
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(front.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	ctx := context.Background()
	if err := c.Write(ctx, websocket.MessageText, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(ctx); err != nil || string(b) != "HELLO" {
		t.Fatalf("echo through the framing: %q, %v; want HELLO", b, err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("bad")); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(ctx)
	if s := websocket.CloseStatus(err); s != websocket.StatusInvalidFramePayloadData || !strings.Contains(err.Error(), "bad is not a frame") {
		t.Fatalf("caller got %v (status %d), want 1007 with the framing's reason", err, s)
	}
	if s := websocket.CloseStatus(<-agentGot); s != websocket.StatusGoingAway {
		t.Errorf("agent got close %d, want 1001", s)
	}
	res := <-results
	if res.EndedBy != Caller || res.Outcome != metrics.BadRequest || res.Code != websocket.StatusInvalidFramePayloadData {
		t.Errorf("result %+v, want ended by the caller, bad_request, 1007", res)
	}
}

// TestRelayAgentClosesMidFrame: an agent whose connection ends inside a
// frame (its header promised more bytes than came) is an agent gone: the
// caller gets 1011, and nothing of the partial frame.
func TestRelayAgentClosesMidFrame(t *testing.T) {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The upgrade by hand, so that the frame can be cut short.
		conn, _, ok := upgradeByHand(w, r, []byte{0x81, 100}, []byte("only ten b")) // a final text frame of 100 bytes, of which ten come
		if !ok {
			return
		}
		defer conn.Close()
	}))
	t.Cleanup(as.Close)
	p := relayFront(t, as, small)
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(p.url, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	typ, b, err := c.Read(context.Background())
	if s := websocket.CloseStatus(err); s != websocket.StatusInternalError {
		t.Errorf("caller's read = %v %q, %v; want a 1011 close", typ, b, err)
	}
	if r := <-p.results; r.EndedBy != Agent || r.Outcome != metrics.AgentDisconnected || r.Out.Frames != 0 {
		t.Errorf("Result = %+v, want ended by the agent, agent_disconnected, no frame out", r)
	}
}

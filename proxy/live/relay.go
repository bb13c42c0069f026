package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
)

// Side names who ended a conversation: a Result's EndedBy.
type Side string

// The sides.
const (
	Caller  Side = "caller"
	Agent   Side = "agent"
	Sidecar Side = "sidecar" // a cap, a clock or the shutdown
)

// Count is what crossed in one direction.
type Count struct {
	Frames int64
	Bytes  int64
}

// Result is how a conversation went, for its log line and metrics.
type Result struct {
	// In is caller to agent, Out agent to caller.
	In, Out Count
	// EndedBy is who ended it; Code and Reason are the close the caller
	// got (or sent, when it ended it), Outcome the metrics' word for it.
	EndedBy Side
	Code    websocket.StatusCode
	Reason  string
	Outcome metrics.Outcome
}

// UpgradeError is an agent that answered the upgrade of its WebSocket at
// URL with an HTTP response, not 101 Switching Protocols: it serves no
// WebSocket there (a 404), or refused this one.
type UpgradeError struct {
	URL    string
	Status int    // its status code
	Text   string // its status line's code and text, "404 Not Found"
}

func (e *UpgradeError) Error() string {
	return fmt.Sprintf("upgrading the agent's %s: it answered %s, not 101 Switching Protocols", e.URL, e.Text)
}

// Conn is one side of a conversation as the relay sees it: a WebSocket
// (*WS, or a *websocket.Conn), or a door's framing around one (frames
// unwrapped as they are read and wrapped as they are written), or an
// agent side that is no WebSocket at all. Read returns a *FrameError for
// a frame the side sent that cannot be carried; Close is called once,
// when the conversation ends, with the code and reason that side gets.
type Conn interface {
	Read(ctx context.Context) (websocket.MessageType, []byte, error)
	Write(ctx context.Context, typ websocket.MessageType, data []byte) error
	Close(code websocket.StatusCode, reason string) error
}

// FrameError is a frame a side sent that its framing cannot carry (a
// door's framing it does not follow): the conversation ends, the side
// that sent it is closed with Code and Reason.
type FrameError struct {
	Code   websocket.StatusCode
	Reason string
}

func (e *FrameError) Error() string { return e.Reason }

// Relay is one conversation: the caller's connection and the agent's.
// Build it with Accept (or Upgrade and New), then Run it.
//
// An idle conversation costs two goroutines: Run's caller, which reads
// the caller's frames, and one that reads the agent's. A direction's
// writer exists only while frames wait in its queue, and the goroutine
// that closes both sides only once the conversation ends.
type Relay struct {
	caller, agent Conn
	lim           config.Live

	in, out pipe // in: caller to agent; out: agent to caller

	done     chan struct{} // closed by end
	finished chan struct{} // closed once both sides are closed
	once     sync.Once
	ending   ending
	// writes bounds every write: cancelled when the conversation ends,
	// once the frames a closing side sent are written (or flushWait
	// passed), so that no writer outlives it however slow its reader.
	writes context.Context
	stop   context.CancelFunc
	// wg counts the goroutines Run started: the agent's reader and the
	// writers.
	wg sync.WaitGroup
	// last is when a frame last crossed, in nanoseconds since start, for
	// the idle clock.
	start time.Time
	last  atomic.Int64
}

// ending is why a conversation ended and the close each side gets.
type ending struct {
	by                        Side
	callerCode, agentCode     websocket.StatusCode
	callerReason, agentReason string
	outcome                   metrics.Outcome
	// flush is set when a side ended it with its close frame: the frames
	// it sent before are written to the other side before that closes.
	flush bool
}

// pipe is one direction: frames read from src, queued, written to dst by
// a writer started when the queue stops being empty.
type pipe struct {
	src, dst Side
	q        queue
	queued   atomic.Int64 // bytes in q
	waiting  atomic.Int64 // frames in q (a message's fragments each)
	count    struct{ frames, bytes atomic.Int64 }
	// writing is set while a writer runs (or is about to); held holds
	// the writer's place for its whole run, so that the end's flush
	// starts only once the writer is gone.
	writing atomic.Bool
	held    sync.Mutex
}

// frame is a message to write, or a Chunk of whole frames as a peer sent
// them: its messages and payload bytes are what it counts for.
type frame struct {
	typ           websocket.MessageType
	data          []byte
	chunk         bool
	frames, bytes int64
	wire          int64 // frames on the wire: 1, or a chunk's Wire
}

// queue is a direction's frames read and not yet written, first in first
// out. It holds room only for the backlog it has had lately (an idle
// conversation's holds none); the reader caps it (limits.live).
type queue struct {
	mu     sync.Mutex
	frames []frame
	head   int
}

func (q *queue) push(f frame) {
	q.mu.Lock()
	q.frames = append(q.frames, f)
	q.mu.Unlock()
}

// pop takes the oldest frame; false when there is none.
func (q *queue) pop() (frame, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.frames) {
		return frame{}, false
	}
	f := q.frames[q.head]
	q.frames[q.head] = frame{}
	q.head++
	if q.head == len(q.frames) { // empty: start over, keeping little room
		q.head = 0
		q.frames = q.frames[:0]
		if cap(q.frames) > 4 {
			q.frames = nil
		}
	}
	return f, true
}

// peek is the oldest frame, left in q; false when there is none.
func (q *queue) peek() (frame, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.frames) {
		return frame{}, false
	}
	return q.frames[q.head], true
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames) - q.head
}

// Accept upgrades r, the caller's request, and pairs its connection with
// agent's under lim. The caller is offered the subprotocol the agent
// chose, if any. The Origin is not checked here: the proxy's guard did,
// before (an upgrade is held to the rule of a request that changes
// something). On an error the upgrade was answered with an HTTP error and
// agent is closed.
func Accept(w http.ResponseWriter, r *http.Request, agent Conn, lim config.Live) (*Relay, error) {
	var chosen string
	if p, ok := agent.(interface{ Subprotocol() string }); ok {
		chosen = p.Subprotocol()
	}
	caller, err := acceptWS(w, r, chosen)
	if err != nil {
		agent.Close(websocket.StatusInternalError, "the caller's upgrade failed")
		return nil, err
	}
	return New(caller, agent, lim), nil
}

// Upgrade upgrades r, the caller's request, to a WebSocket whose frames
// are capped at lim.FrameBytes, offering subprotocol ("": none), for a
// door whose framing reads it before the relay does (coder/websocket's
// Conn; Accept's is a *WS). As in Accept, the Origin was the proxy's to
// check. On an error the upgrade was answered with an HTTP error.
func Upgrade(w http.ResponseWriter, r *http.Request, lim config.Live, subprotocol string) (*websocket.Conn, error) {
	opts := &websocket.AcceptOptions{InsecureSkipVerify: true}
	if subprotocol != "" {
		opts.Subprotocols = []string{subprotocol}
	}
	c, err := websocket.Accept(w, r, opts)
	if err != nil {
		return nil, fmt.Errorf("upgrading the caller: %w", err)
	}
	c.SetReadLimit(lim.FrameBytes)
	return c, nil
}

// New pairs the caller's side with the agent's under lim: a side that
// can cap what it reads (a WebSocket) is capped at lim.FrameBytes.
func New(caller, agent Conn, lim config.Live) *Relay {
	for _, c := range []Conn{caller, agent} {
		if l, ok := c.(interface{ SetReadLimit(int64) }); ok {
			l.SetReadLimit(lim.FrameBytes)
		}
	}
	rl := &Relay{caller: caller, agent: agent, lim: lim, done: make(chan struct{}), finished: make(chan struct{}), start: time.Now()}
	rl.writes, rl.stop = context.WithCancel(context.Background())
	rl.in = pipe{src: Caller, dst: Agent}
	rl.out = pipe{src: Agent, dst: Caller}
	return rl
}

// Shutdown ends the conversation for the sidecar's shutdown: both sides
// get 1001. Run returns once they are closed.
func (rl *Relay) Shutdown() {
	rl.end(ending{by: Sidecar, outcome: metrics.ShuttingDown,
		callerCode: websocket.StatusGoingAway, callerReason: "the sidecar is shutting down",
		agentCode: websocket.StatusGoingAway, agentReason: "the sidecar is shutting down"})
}

// Run relays until the conversation ends, closes both sides and returns
// how it went. It reads the caller's frames itself.
func (rl *Relay) Run() Result {
	rl.wg.Go(func() { rl.read(&rl.out) })
	idle := rl.idleClock()
	most := time.AfterFunc(rl.lim.MaxDuration, func() {
		reason := "the conversation reached limits.live.max_duration (" + rl.lim.MaxDuration.String() + ")"
		rl.end(ending{by: Sidecar, outcome: metrics.Timeout,
			callerCode: websocket.StatusGoingAway, callerReason: reason, agentCode: websocket.StatusGoingAway, agentReason: reason})
	})
	rl.read(&rl.in)
	<-rl.finished
	idle.Stop()
	most.Stop()
	rl.wg.Wait()
	e := rl.ending
	return Result{
		In:      Count{rl.in.count.frames.Load(), rl.in.count.bytes.Load()},
		Out:     Count{rl.out.count.frames.Load(), rl.out.count.bytes.Load()},
		EndedBy: e.by, Code: e.callerCode, Reason: e.callerReason, Outcome: e.outcome,
	}
}

// idleClock ends the conversation once no frame crossed for lim.Idle. It
// re-arms itself for what is left rather than being reset on every frame.
func (rl *Relay) idleClock() *stopper {
	s := &stopper{}
	var check func()
	check = func() {
		left := rl.lim.Idle - (time.Since(rl.start) - time.Duration(rl.last.Load()))
		if left > 0 {
			s.rearm(left, check)
			return
		}
		reason := "no frame either way for limits.live.idle (" + rl.lim.Idle.String() + ")"
		rl.end(ending{by: Sidecar, outcome: metrics.Timeout,
			callerCode: websocket.StatusGoingAway, callerReason: reason, agentCode: websocket.StatusGoingAway, agentReason: reason})
	}
	s.rearm(rl.lim.Idle, check)
	return s
}

// stopper is a timer that re-arms itself until stopped.
type stopper struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func (s *stopper) rearm(d time.Duration, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.t = time.AfterFunc(d, f)
	}
}

func (s *stopper) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.t != nil {
		s.t.Stop()
	}
}

// end ends the conversation for e's reason; only the first call counts.
// The goroutine it starts closes both sides: the readers return once
// their side is closed.
func (rl *Relay) end(e ending) {
	rl.once.Do(func() {
		rl.ending = e
		close(rl.done)
		go rl.finish()
	})
}

// finish closes both sides once the conversation ended: first, when a
// side ended it with its close frame, the frames it sent before are
// written to the other (within flushWait in all), then every write still
// blocked is cancelled and both sides get their close.
//
// A writer that is not blocked returns of itself once it sees the end:
// it is given settleWait to, before the writes are cancelled, so that
// only a write stuck on a reader that does not read is cut.
// (coder/websocket closes a connection, with no close frame, whose
// write's context ends while the write is under way, even as it
// returns.)
func (rl *Relay) finish() {
	defer close(rl.finished)
	defer rl.stop()
	if e := rl.ending; e.flush {
		p := &rl.in
		if e.by == Agent {
			p = &rl.out
		}
		t := time.AfterFunc(flushWait, rl.stop)
		p.held.Lock() // the writer, if one runs, finishes its frame and returns
		rl.flush(p)
		p.held.Unlock()
		t.Stop()
	}
	settle := time.Now().Add(settleWait)
	for _, p := range []*pipe{&rl.in, &rl.out} {
		for !time.Now().After(settle) {
			if p.held.TryLock() { // no writer runs
				p.held.Unlock()
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	rl.stop()
	rl.close()
}

// settleWait bounds finish's wait for the writers to return of
// themselves.
const settleWait = 100 * time.Millisecond

// conn is side's connection.
func (rl *Relay) conn(s Side) Conn {
	if s == Caller {
		return rl.caller
	}
	return rl.agent
}

// read reads p.src's frames into p.q until it fails or the conversation
// ends, starting p's writer when none runs; a full queue ends it (the
// reader at p.dst is too slow). Between two WebSockets it passes frames
// on as they came (readChunks).
func (rl *Relay) read(p *pipe) {
	src := rl.conn(p.src)
	if s, ok := src.(*WS); ok {
		if d, ok := rl.conn(p.dst).(*WS); ok {
			rl.readChunks(p, s, d)
			return
		}
	}
	for {
		typ, data, err := src.Read(context.Background())
		if err != nil {
			rl.end(readEnding(p.src, err))
			return
		}
		if !rl.enqueue(p, frame{typ: typ, data: data, frames: 1, bytes: int64(len(data)), wire: 1}) {
			return
		}
		// A message already read behind this one (a burst read at
		// once) is queued too before a writer is woken, up to half the
		// caps: the writer then sends the burst in one batch, not one
		// write and one wake-up a frame.
		if pending(src) && p.waiting.Load() < int64(rl.lim.QueueFrames/2) && p.queued.Load() < rl.lim.QueueBytes/2 {
			continue
		}
		if p.writing.CompareAndSwap(false, true) && !rl.writeNow(p) {
			rl.wg.Go(func() { rl.write(p) })
		}
	}
}

// enqueue queues f for p's writer; false when that would take p past
// limits.live's caps, which ends the conversation (the reader at p.dst
// is too slow).
func (rl *Relay) enqueue(p *pipe, f frame) bool {
	n := int64(len(f.data))
	if p.waiting.Load()+f.wire > int64(rl.lim.QueueFrames) || p.queued.Load()+n > rl.lim.QueueBytes {
		rl.end(slowEnding(p.dst, p.waiting.Load(), p.queued.Load()))
		return false
	}
	rl.last.Store(int64(time.Since(rl.start)))
	p.queued.Add(n)
	p.waiting.Add(f.wire)
	p.q.push(f)
	return true
}

// readChunks is read between two WebSockets: the frames src's peer sent
// are passed on to dst's as they are (Chunks), not taken apart and made
// again. With nothing queued, the reader writes a chunk itself with one
// write(2) that does not wait, straight from src's read buffer; what the
// socket does not take then is queued, copied, for a writer, as a slow
// reader's frames are.
func (rl *Relay) readChunks(p *pipe, src, dst *WS) {
	err := src.Pump(func(ch Chunk) error {
		f := frame{data: ch.Data, chunk: true, frames: ch.Frames, bytes: ch.Bytes, wire: ch.Wire}
		if p.q.len() == 0 && p.writing.CompareAndSwap(false, true) {
			n, done := rl.writeChunkNow(p, dst, f)
			if done {
				return nil
			}
			f.data = f.data[n:]
			if !ch.Owned || n > 0 {
				f.data = slices.Clone(f.data)
			}
			if !rl.enqueue(p, f) {
				p.writing.Store(false)
				return errEnded
			}
			rl.wg.Go(func() { rl.write(p) })
			return nil
		}
		if !ch.Owned {
			f.data = slices.Clone(f.data)
		}
		if !rl.enqueue(p, f) {
			return errEnded
		}
		if p.writing.CompareAndSwap(false, true) {
			rl.wg.Go(func() { rl.write(p) })
		}
		return nil
	})
	if err != errEnded {
		rl.end(readEnding(p.src, err))
	}
}

// errEnded stops a Pump whose conversation ended.
var errEnded = errors.New("the conversation ended")

// writeChunkNow writes f, a chunk, to dst from p's reader, which holds
// p's writing place, with one write(2) that does not wait: the bytes the
// socket took, and true when nothing is left for a writer (the place
// handed back: all of f went, or the conversation ended).
func (rl *Relay) writeChunkNow(p *pipe, dst *WS, f frame) (int, bool) {
	if !p.held.TryLock() {
		return 0, false
	}
	defer p.held.Unlock()
	select {
	case <-rl.done:
		return 0, false
	default:
	}
	n, err := dst.TryWriteChunk(rl.writes, f.data)
	switch {
	case err != nil:
		rl.end(writeEnding(p.dst, err))
	case n < len(f.data):
		return n, false
	default:
		p.count.frames.Add(f.frames)
		p.count.bytes.Add(f.bytes)
		rl.last.Store(int64(time.Since(rl.start)))
	}
	p.writing.Store(false)
	return n, true
}

// A nowWriter is a Batcher that can also send without waiting: the
// relay's reader writes a burst to it itself, rather than waking a
// writer, when the socket takes it at once (a *WS).
type nowWriter interface {
	Conn
	Batcher
	// Fits reports whether a message of size bytes can be written
	// without sending what is buffered first.
	Fits(size int) bool
	// TryFlush sends as much of the buffer as the socket takes now;
	// true when all of it went.
	TryFlush(ctx context.Context) (bool, error)
}

// writeNow writes p's queue from p's reader, which holds p's writing
// place: the frames that fit in p.dst's write buffer, then one write(2)
// that does not wait. True when nothing is left for a writer (the place
// handed back, or the conversation ended); false when a writer must take
// over the rest: a socket that did not take it all (a slow reader), a
// frame too big for the buffer, or the end under way.
func (rl *Relay) writeNow(p *pipe) bool {
	dst, ok := rl.conn(p.dst).(nowWriter)
	if !ok || !p.held.TryLock() {
		return false
	}
	defer p.held.Unlock()
	select {
	case <-rl.done:
		return false
	default:
	}
	for {
		f, ok := p.q.peek()
		if !ok || !dst.Fits(len(f.data)) {
			break
		}
		p.q.pop()
		if !rl.send(p, dst, f) {
			p.writing.Store(false)
			return true
		}
	}
	sent, err := dst.TryFlush(rl.writes)
	if err != nil {
		rl.end(writeEnding(p.dst, err))
		p.writing.Store(false)
		return true
	}
	if !sent || p.q.len() > 0 {
		return false
	}
	p.writing.Store(false)
	return true
}

// pending reports whether c has a whole message read already, which its
// next Read returns without waiting (a *WS's Pending).
func pending(c Conn) bool {
	p, ok := c.(interface{ Pending() bool })
	return ok && p.Pending()
}

// write writes p.q's frames to p.dst until the queue is empty, the
// conversation ends or a write fails. Only one runs at a time for p: the
// reader starts one when none is writing, and one that finds the queue
// empty hands back its place before it returns (taking it again if a
// frame came in meanwhile).
//
// A dst that batches (a Batcher) is written each frame without sending
// it, and flushed whenever the queue is found empty: a backlog goes out
// in as few writes as its buffer allows, and a lone frame at once.
func (rl *Relay) write(p *pipe) {
	p.held.Lock()
	defer p.held.Unlock()
	dst := rl.conn(p.dst)
	for {
		select {
		case <-rl.done:
			rl.sendBatch(p, dst) // finish writes what a closing side sent
			return
		default:
		}
		if f, ok := p.q.pop(); ok {
			if !rl.send(p, dst, f) {
				return
			}
			continue
		}
		if !rl.sendBatch(p, dst) {
			return
		}
		p.writing.Store(false)
		if p.q.len() == 0 || !p.writing.CompareAndSwap(false, true) {
			return
		}
	}
}

// send writes f to dst for p (into its batch, when it batches) and counts
// it; false when the write failed, which ends the conversation (dst is
// gone) unless it already ended.
func (rl *Relay) send(p *pipe, dst Conn, f frame) bool {
	p.queued.Add(-int64(len(f.data)))
	p.waiting.Add(-f.wire)
	var err error
	if d, ok := dst.(*WS); ok && f.chunk {
		err = d.WriteChunk(rl.writes, f.data)
	} else if b, ok := dst.(Batcher); ok {
		err = b.WriteNoFlush(rl.writes, f.typ, f.data)
	} else {
		err = dst.Write(rl.writes, f.typ, f.data)
	}
	if err != nil {
		rl.end(writeEnding(p.dst, err))
		return false
	}
	p.count.frames.Add(f.frames)
	p.count.bytes.Add(f.bytes)
	rl.last.Store(int64(time.Since(rl.start)))
	return true
}

// sendBatch sends what send batched for dst, if it batches; false when
// that failed, as send.
func (rl *Relay) sendBatch(p *pipe, dst Conn) bool {
	b, ok := dst.(Batcher)
	if !ok {
		return true
	}
	if err := b.Flush(rl.writes); err != nil {
		rl.end(writeEnding(p.dst, err))
		return false
	}
	return true
}

// flush writes the frames left in p.q: what a side sent before its close
// frame. finish bounds it with flushWait.
func (rl *Relay) flush(p *pipe) {
	dst := rl.conn(p.dst)
	for {
		f, ok := p.q.pop()
		if !ok {
			rl.sendBatch(p, dst)
			return
		}
		if !rl.send(p, dst, f) {
			return
		}
	}
}

// flushWait bounds writing the frames left over when a side closed, as
// the library bounds its close handshake.
const flushWait = 5 * time.Second

// close closes both sides at once, each with its close frame: the
// handshake waits for the peer's at most 5 s (the library's bound), and
// a side that is already gone is closed at once.
func (rl *Relay) close() {
	e := rl.ending
	var wg sync.WaitGroup
	wg.Go(func() { rl.caller.Close(e.callerCode, Clip(e.callerReason)) })
	wg.Go(func() { rl.agent.Close(e.agentCode, Clip(e.agentReason)) })
	wg.Wait()
}

// readEnding is the end of a conversation whose read from side failed
// with err: the side closed (its code relayed to the other), sent a frame
// over the cap or one its framing cannot carry, or went away without a
// close.
func readEnding(side Side, err error) ending {
	var ce websocket.CloseError
	var fe *FrameError
	switch {
	case errors.As(err, &fe):
		if side == Caller {
			return ending{by: Caller, outcome: metrics.BadRequest,
				callerCode: fe.Code, callerReason: fe.Reason,
				agentCode: websocket.StatusGoingAway, agentReason: "the caller sent a frame that could not be carried"}
		}
		return ending{by: Agent, outcome: metrics.AgentError,
			callerCode: websocket.StatusInternalError, callerReason: "the agent sent a frame that could not be carried: " + fe.Reason,
			agentCode: fe.Code, agentReason: fe.Reason}
	case errors.As(err, &ce):
		code := ce.Code
		if !sendable(code) {
			code = websocket.StatusNormalClosure
		}
		return relayed(side, code, ce.Reason)
	case errors.Is(err, websocket.ErrMessageTooBig):
		if side == Caller {
			return ending{by: Caller, outcome: metrics.BadRequest,
				callerCode: websocket.StatusMessageTooBig, callerReason: "a frame over limits.live.frame_bytes",
				agentCode: websocket.StatusGoingAway, agentReason: "the caller sent a frame over limits.live.frame_bytes"}
		}
		return ending{by: Agent, outcome: metrics.AgentError,
			callerCode: websocket.StatusInternalError, callerReason: "the agent sent a frame over limits.live.frame_bytes",
			agentCode: websocket.StatusMessageTooBig, agentReason: "a frame over limits.live.frame_bytes"}
	}
	return lost(side)
}

// writeEnding is the end of a conversation whose write to side failed:
// it is gone, or its framing cannot carry the frame (a *FrameError), which
// ends it as that frame's sender, the other side, sending one it could not
// carry.
func writeEnding(side Side, err error) ending {
	var fe *FrameError
	if errors.As(err, &fe) {
		if side == Agent {
			return readEnding(Caller, err)
		}
		return readEnding(Agent, err)
	}
	return lost(side)
}

// relayed is the end by side's close frame, code and reason passed on.
func relayed(side Side, code websocket.StatusCode, reason string) ending {
	return ending{by: side, outcome: metrics.OK, flush: true, callerCode: code, callerReason: reason, agentCode: code, agentReason: reason}
}

// lost is the end by side's connection ending without a close frame.
func lost(side Side) ending {
	if side == Caller {
		return ending{by: Caller, outcome: metrics.CallerLeft,
			callerCode: websocket.StatusGoingAway, callerReason: "the connection ended without a close frame",
			agentCode: websocket.StatusGoingAway, agentReason: "the caller went away"}
	}
	return ending{by: Agent, outcome: metrics.AgentDisconnected,
		callerCode: websocket.StatusInternalError, callerReason: "the agent's connection ended without a close frame",
		agentCode: websocket.StatusGoingAway, agentReason: "the connection ended without a close frame"}
}

// slowEnding is the end of a conversation whose reader at side let
// frames frames, queued bytes, pile up to the cap.
func slowEnding(side Side, frames, queued int64) ending {
	why := fmt.Sprintf("too slow a reader: %d frames (%d bytes) waiting, the most limits.live allows", frames, queued)
	if side == Caller {
		return ending{by: Sidecar, outcome: metrics.CallerLeft,
			callerCode: websocket.StatusPolicyViolation, callerReason: why,
			agentCode: websocket.StatusGoingAway, agentReason: "the caller reads too slowly"}
	}
	return ending{by: Sidecar, outcome: metrics.AgentError,
		callerCode: websocket.StatusInternalError, callerReason: "the agent reads too slowly",
		agentCode: websocket.StatusPolicyViolation, agentReason: why}
}

// sendable reports whether code may be sent in a close frame: 1005, 1006
// and 1015 only say what a receiver saw (RFC 6455 §7.4.1).
func sendable(code websocket.StatusCode) bool {
	switch code {
	case websocket.StatusNoStatusRcvd, websocket.StatusAbnormalClosure, websocket.StatusTLSHandshake:
		return false
	}
	return code >= 1000 && code < 5000
}

// Clip is reason cut to the 123 bytes a close frame carries (RFC 6455
// §5.5: 125 with the code), on a character boundary.
func Clip(reason string) string {
	if len(reason) <= 123 {
		return reason
	}
	n := 123
	for n > 0 && !utf8.RuneStart(reason[n]) {
		n--
	}
	return reason[:n]
}

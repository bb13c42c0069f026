package live

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/gobwas/ws"
)

// WS is a WebSocket as the relay needs it, on the relay's own frame code
// (github.com/gobwas/ws for the handshakes and the masking): the caller's,
// as Accept upgrades it, and the agent's, as Dial opens it. It is read
// one of two ways. Read reads whole messages (fragments joined, pings
// answered, pongs dropped, the peer's close answered and returned as a
// websocket.CloseError, a message over the read limit an error wrapping
// websocket.ErrMessageTooBig), for a door's framing. Pump hands on data
// frames as the peer sent them, checked but not taken apart, for a relay
// to another WS (WriteChunk, TryWriteChunk). It writes each message as
// one frame (masked when it dialled), either at once (Write) or batched
// (WriteNoFlush, then Flush or TryFlush: many frames go out in one
// write(2) and a lone frame at once).
//
// Idle, it holds no buffer: its read buffer is taken from a pool when
// bytes arrive and given back once they are parsed (it waits for the
// socket to be readable holding none), its write buffer once a batch is
// sent. One goroutine reads (Read or Pump) and one writes at a time; the
// reader answers pings and the peer's close itself, under the write lock.
type WS struct {
	conn   net.Conn
	raw    syscall.RawConn // conn's, to wait for bytes holding no buffer; nil: none
	io     rawIO           // raw's reads and writes
	client bool            // it dialled: frames written are masked
	proto  string          // the subprotocol chosen; "": none
	limit  int64           // a message's most bytes; negative: none

	// The read side: Read's, and Close's once Read returned.
	rmu       sync.Mutex
	pre       *bufio.Reader // bytes read along with the handshake, parsed first; nil once drained
	prePooled bool          // pre is gobwas's, to give back
	rbuf      *[]byte       // pooled; nil while nothing is buffered
	r, w      int           // (*rbuf)[r:w] read and not yet parsed
	slab      []byte        // room carved up for this burst's small payloads
	left      int64         // the current frame's payload bytes not read yet
	rerr      error         // what ended reading
	tooBig    bool          // rerr is a message over the limit: the stream is still in step
	ctrl      [maxControl]byte
	closeRcvd atomic.Bool
	// A message under way, for Pump: its fragments' bytes so far; and a
	// frame bigger than the read buffer, (*big)[:bigN] read so far.
	inMessage    bool
	messageBytes int64
	big          []byte
	bigN         int

	// The write side.
	wmu       sync.Mutex
	wbuf      *[]byte // pooled; nil while nothing waits to be sent
	wn        int     // (*wbuf)[:wn] waits to be sent
	werr      error   // what broke writing
	closeSent bool
	// midFrame is set while TryWriteChunk left a frame half sent: the
	// control frames Read answers with wait in heldPong and heldClose
	// until WriteChunk sends the rest.
	midFrame            bool
	heldPong, heldClose *[]byte
	wctx                context.Context // the context watched for writes
	wstop               func() bool
	writing             atomic.Bool // a write of the relay's is under way
	// dlmu orders the write deadlines set by wctx's end and by Close;
	// closing is set once Close set its own.
	dlmu    sync.Mutex
	closing bool

	once sync.Once // Close's
}

var (
	_ Conn    = (*WS)(nil)
	_ Batcher = (*WS)(nil)
)

// Batcher is a Conn that can write frames without sending them at once:
// WriteNoFlush queues a frame in the connection's buffer (sending what
// no longer fits), Flush sends what is queued. The relay writes a
// direction's backlog with WriteNoFlush and flushes once its queue is
// empty.
type Batcher interface {
	WriteNoFlush(ctx context.Context, typ websocket.MessageType, data []byte) error
	Flush(ctx context.Context) error
}

// The frame opcodes (RFC 6455 §5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

const (
	maxControl       = 125   // a control frame's most payload bytes (RFC 6455 §5.5)
	maxHeader        = 14    // a frame header's most bytes
	readBufSize      = 4096  // the pooled read buffer
	writeBufSize     = 4096  // the pooled write buffer
	defaultReadLimit = 32768 // as coder/websocket's, until SetReadLimit
	closeWait        = 5 * time.Second
)

var (
	readBufs  = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}
	writeBufs = sync.Pool{New: func() any { b := make([]byte, writeBufSize); return &b }}
	// aLongTimeAgo is a deadline that has passed: it interrupts I/O.
	aLongTimeAgo = time.Unix(1, 0)
	errClosing   = errors.New("the WebSocket is closing")
)

func newWS(conn net.Conn, pre *bufio.Reader, prePooled, client bool, proto string) *WS {
	c := &WS{conn: conn, raw: rawConn(conn), client: client, proto: proto, limit: defaultReadLimit}
	if c.raw != nil {
		c.initRaw()
	}
	if pre != nil && pre.Buffered() > 0 {
		c.pre, c.prePooled = pre, prePooled
	} else if pre != nil && prePooled {
		ws.PutReader(pre)
	}
	return c
}

// Dial opens the agent's side of a conversation: the WebSocket at url
// (ws://), through client's transport (its DialContext: the agent's Unix
// socket or TCP address), with header and the caller's subprotocols. ctx
// bounds the dial and the upgrade only. An agent that answers with an
// HTTP response other than 101 is an *UpgradeError.
func Dial(ctx context.Context, url string, client *http.Client, header http.Header, subprotocols []string) (*WS, error) {
	d := ws.Dialer{Protocols: subprotocols, Header: ws.HandshakeHeaderHTTP(handshakeHeader(header))}
	if client != nil {
		if t, ok := client.Transport.(*http.Transport); ok {
			d.NetDial = t.DialContext
			d.TLSConfig = t.TLSClientConfig
		}
	}
	status := ""
	d.OnStatusError = func(code int, reason []byte, _ io.Reader) { status = strconv.Itoa(code) + " " + string(reason) }
	conn, br, hs, err := d.Dial(ctx, url)
	if err != nil {
		var se ws.StatusError
		if errors.As(err, &se) {
			return nil, &UpgradeError{URL: url, Status: int(se), Text: status}
		}
		return nil, fmt.Errorf("dialing the agent's %s: %w", url, err)
	}
	return newWS(conn, br, true, true, hs.Protocol), nil
}

// handshakeHeader is header for an upgrade request: without the headers
// the handshake writes itself, with net/http's User-Agent when it has
// none (as the agent saw with coder/websocket's dial through net/http).
func handshakeHeader(header http.Header) http.Header {
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for _, k := range []string{"Host", "Upgrade", "Connection", "Sec-Websocket-Key", "Sec-Websocket-Version",
		"Sec-Websocket-Protocol", "Sec-Websocket-Extensions", "Content-Length", "Transfer-Encoding"} {
		delete(h, k)
	}
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", "Go-http-client/1.1")
	}
	return h
}

// acceptWS upgrades r, the caller's request, offering subprotocol ("":
// none). On an error the upgrade was answered with an HTTP error.
func acceptWS(w http.ResponseWriter, r *http.Request, subprotocol string) (*WS, error) {
	var u ws.HTTPUpgrader
	if subprotocol != "" {
		u.Protocol = func(p string) bool { return p == subprotocol }
	}
	conn, rw, hs, err := u.Upgrade(r, w)
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("upgrading the caller: %w", err)
	}
	return newWS(conn, rw.Reader, false, false, hs.Protocol), nil
}

// Subprotocol is the subprotocol the handshake chose; "": none.
func (c *WS) Subprotocol() string { return c.proto }

// SetReadLimit caps a message at n bytes (negative: no cap). Call it
// before the first Read.
func (c *WS) SetReadLimit(n int64) { c.limit = n }

// Read reads the next message: its frames' payloads joined, pings
// answered on the way. The data is the caller's to keep.
func (c *WS) Read(ctx context.Context) (websocket.MessageType, []byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return 0, nil, c.rerr
	}
	if ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		stop := context.AfterFunc(ctx, func() { c.conn.SetReadDeadline(aLongTimeAgo) })
		defer stop()
	}
	typ, data, err := c.message()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		c.rerr = err
		c.tooBig = errors.Is(err, websocket.ErrMessageTooBig)
		c.releaseRead()
		return 0, nil, err
	}
	return typ, data, nil
}

// Pending reports whether a message's last frame is buffered already,
// behind whole control frames or fragments if any: the next Read returns
// it without waiting on the socket.
func (c *WS) Pending() bool {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rbuf == nil || c.pre != nil || c.rerr != nil {
		return false
	}
	b := (*c.rbuf)[c.r:c.w]
	for len(b) >= 2 {
		n, l := 2, int64(b[1]&0x7f)
		switch l {
		case 126:
			n += 2
		case 127:
			n += 8
		}
		if b[1]&0x80 != 0 {
			n += 4
		}
		if len(b) < n {
			return false
		}
		switch l {
		case 126:
			l = int64(binary.BigEndian.Uint16(b[2:]))
		case 127:
			l = int64(binary.BigEndian.Uint64(b[2:]) & (1<<63 - 1))
		}
		if int64(len(b)-n) < l {
			return false
		}
		if op := b[0] & 0x0f; b[0]&0x80 != 0 && (op == opText || op == opBinary || op == opContinuation) {
			return true
		}
		b = b[n+int(l):]
	}
	return false
}

// header is a frame's header.
type header struct {
	fin, masked bool
	op          byte
	mask        [4]byte
	length      int64
}

// message reads frames up to a message's last.
func (c *WS) message() (websocket.MessageType, []byte, error) {
	var (
		typ     websocket.MessageType
		msg     []byte
		started bool
	)
	for {
		h, err := c.header()
		if err != nil {
			return 0, nil, err
		}
		if !c.client && !h.masked {
			return 0, nil, c.protocolError("an unmasked frame from the client")
		}
		switch h.op {
		case opPing, opPong, opClose:
			if err := c.controlFrame(h); err != nil {
				return 0, nil, err
			}
			continue
		case opText, opBinary:
			if started {
				return 0, nil, c.protocolError("a new message before the last one's final fragment")
			}
			started, typ = true, websocket.MessageType(h.op)
		case opContinuation:
			if !started {
				return 0, nil, c.protocolError("a continuation frame with no message to continue")
			}
		default:
			return 0, nil, c.protocolError("a frame of unknown opcode " + strconv.Itoa(int(h.op)))
		}
		if (c.limit >= 0 && int64(len(msg))+h.length > c.limit) || h.length > 1<<40 {
			return 0, nil, fmt.Errorf("%w: read limited at %d bytes", websocket.ErrMessageTooBig, c.limit)
		}
		n := int(h.length)
		var dst []byte
		if msg == nil && h.fin { // the usual: a message in one frame
			msg = c.alloc(n)
			dst = msg
		} else {
			old := len(msg)
			msg = slices.Grow(msg, n)[:old+n]
			dst = msg[old:]
		}
		if err := c.payload(dst, h); err != nil {
			return 0, nil, err
		}
		if h.fin {
			if msg == nil {
				msg = []byte{}
			}
			return typ, msg, nil
		}
	}
}

// controlFrame reads the payload of a control frame whose header h was
// read and acts on it: a ping answered, a pong dropped, a close answered
// and returned as a websocket.CloseError.
func (c *WS) controlFrame(h header) error {
	if !h.fin || h.length > maxControl {
		return c.protocolError("a fragmented or oversized control frame")
	}
	p := c.ctrl[:h.length]
	if err := c.payload(p, h); err != nil {
		return err
	}
	switch h.op {
	case opPing:
		return c.control(opPong, p)
	case opClose:
		return c.closeFrame(p)
	}
	return nil
}

// closeFrame answers the peer's close frame, payload p, with its own
// code and reason (unless this side sent its close first) and returns it
// as a websocket.CloseError; an invalid one is a protocol error.
func (c *WS) closeFrame(p []byte) error {
	c.closeRcvd.Store(true)
	ce := websocket.CloseError{Code: websocket.StatusNoStatusRcvd}
	switch {
	case len(p) == 1:
		return c.protocolError("a close frame of one byte")
	case len(p) >= 2:
		ce.Code, ce.Reason = websocket.StatusCode(binary.BigEndian.Uint16(p)), string(p[2:])
		if !validWireCode(ce.Code) {
			return c.protocolError("a close frame with code " + strconv.Itoa(int(ce.Code)))
		}
	}
	c.control(opClose, p)
	return fmt.Errorf("received close frame: %w", ce)
}

// validWireCode reports whether a close frame may carry code (RFC 6455
// §7.4, as coder/websocket checks it).
func validWireCode(code websocket.StatusCode) bool {
	switch code {
	case 1004, websocket.StatusNoStatusRcvd, websocket.StatusAbnormalClosure, websocket.StatusTLSHandshake:
		return false
	}
	return (code >= websocket.StatusNormalClosure && code <= websocket.StatusBadGateway) || (code >= 3000 && code <= 4999)
}

// protocolError closes the peer with 1002 for what it did and returns
// the error.
func (c *WS) protocolError(what string) error {
	c.control(opClose, closePayload(websocket.StatusProtocolError, what))
	return errors.New("WebSocket protocol violation: " + what)
}

// header reads a frame's header.
func (c *WS) header() (header, error) {
	var h header
	if err := c.buffered(2); err != nil {
		return h, err
	}
	b := (*c.rbuf)[c.r:c.w]
	if b[0]&0x70 != 0 {
		return h, c.protocolError("a frame with reserved bits set (no extension was negotiated)")
	}
	n := 2
	switch b[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b[1]&0x80 != 0 {
		n += 4
	}
	if err := c.buffered(n); err != nil {
		return h, err
	}
	b = (*c.rbuf)[c.r : c.r+n]
	h.fin, h.op, h.masked = b[0]&0x80 != 0, b[0]&0x0f, b[1]&0x80 != 0
	i := 2
	switch l := b[1] & 0x7f; l {
	case 126:
		h.length = int64(binary.BigEndian.Uint16(b[2:]))
		i = 4
	case 127:
		u := binary.BigEndian.Uint64(b[2:])
		if u>>63 != 0 {
			return h, c.protocolError("a frame length with its high bit set")
		}
		h.length = int64(u)
		i = 10
	default:
		h.length = int64(l)
	}
	if h.masked {
		copy(h.mask[:], b[i:i+4])
	}
	c.r += n
	c.left = h.length
	return h, nil
}

// payload reads the current frame's payload into dst, exactly its
// length, and unmasks it.
func (c *WS) payload(dst []byte, h header) error {
	if err := c.readFull(dst); err != nil {
		return err
	}
	if h.masked {
		ws.Cipher(dst, h.mask, 0)
	}
	return nil
}

// readFull fills dst with what is buffered, then from the socket: what
// is left of it straight into dst when that is a buffer's worth or more.
// On an error, c.left is what dst still lacks.
func (c *WS) readFull(dst []byte) error {
	k := 0
	if c.rbuf != nil {
		k = copy(dst, (*c.rbuf)[c.r:c.w])
		c.r += k
	}
	for k < len(dst) {
		var err error
		if c.pre == nil && len(dst)-k >= readBufSize { // straight from the socket
			c.releaseRead()
			var n int
			n, err = c.conn.Read(dst[k:])
			if k += n; n > 0 {
				err = nil
			}
		} else if err = c.fill(); err == nil {
			n := copy(dst[k:], (*c.rbuf)[c.r:c.w])
			c.r += n
			k += n
		}
		if err != nil {
			c.left = int64(len(dst) - k)
			return unexpected(err)
		}
	}
	c.left = 0
	return nil
}

// unexpected is err met inside a frame: an EOF there is unexpected.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// buffered reads until n bytes are buffered; n is at most a header's.
func (c *WS) buffered(n int) error {
	for c.w-c.r < n {
		if err := c.fill(); err != nil {
			if c.w > c.r {
				return unexpected(err)
			}
			return err
		}
	}
	return nil
}

// fill reads at least one more byte into the read buffer. With nothing
// buffered, it waits for the socket holding no buffer.
func (c *WS) fill() error {
	if c.r == c.w {
		c.r, c.w = 0, 0
	} else if c.r > 0 {
		buf := *c.rbuf
		c.w = copy(buf, buf[c.r:c.w])
		c.r = 0
	}
	if c.pre != nil {
		buf := c.takeRead()
		n, _ := c.pre.Read(buf[c.w:]) // it has bytes buffered: no I/O
		c.w += n
		if c.pre.Buffered() == 0 {
			if c.prePooled {
				ws.PutReader(c.pre)
			}
			c.pre = nil
		}
		return nil
	}
	if c.r == c.w && c.raw != nil {
		c.releaseRead()
		c.slab = nil // what is left of it goes once its frames are written
		n, err := c.readRaw()
		if err != nil {
			return err
		}
		c.w = n
		return nil
	}
	buf := c.takeRead()
	n, err := c.conn.Read(buf[c.w:])
	c.w += n
	switch {
	case n > 0:
		return nil
	case err == nil:
		return io.ErrNoProgress
	}
	return err
}

func (c *WS) takeRead() []byte {
	if c.rbuf == nil {
		c.rbuf = readBufs.Get().(*[]byte)
	}
	return *c.rbuf
}

// releaseRead gives the read buffer back when nothing is buffered.
func (c *WS) releaseRead() {
	if c.rbuf != nil && c.r == c.w {
		readBufs.Put(c.rbuf)
		c.rbuf = nil
		c.r, c.w = 0, 0
	}
}

// alloc is room for a payload of n bytes: a small one carved from a slab
// sized to what this burst read, so that a burst of small frames costs
// one allocation, not one each.
func (c *WS) alloc(n int) []byte {
	if n > readBufSize/8 {
		return make([]byte, n)
	}
	if len(c.slab) < n {
		size := min(max(c.w-c.r, n), readBufSize)
		c.slab = make([]byte, size)
	}
	b := c.slab[:n:n]
	c.slab = c.slab[n:]
	return b
}

// Write writes a message of typ as one frame and sends it.
func (c *WS) Write(ctx context.Context, typ websocket.MessageType, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.startWrite(ctx); err != nil {
		return err
	}
	err := c.frame(byte(typ), data)
	if err == nil {
		err = c.flush()
	}
	return c.endWrite(ctx, err)
}

// WriteNoFlush writes a message of typ as one frame into the write
// buffer; Flush sends it.
func (c *WS) WriteNoFlush(ctx context.Context, typ websocket.MessageType, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.startWrite(ctx); err != nil {
		return err
	}
	return c.endWrite(ctx, c.frame(byte(typ), data))
}

// Flush sends the frames WriteNoFlush buffered.
func (c *WS) Flush(ctx context.Context) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wbuf == nil {
		return nil
	}
	if err := c.startWrite(ctx); err != nil {
		return err
	}
	return c.endWrite(ctx, c.flush())
}

// Fits reports whether a message of size bytes fits in the write
// buffer behind what it holds: WriteNoFlush would not have to send
// first.
func (c *WS) Fits(size int) bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	room := writeBufSize - c.wn
	return maxHeader+size <= room
}

// TryFlush sends what WriteNoFlush buffered as far as the socket takes it
// now, with one write(2) that does not wait; true when all of it went.
// What did not go stays buffered for Flush. False, with no error, when c
// cannot write without waiting (no raw socket).
func (c *WS) TryFlush(ctx context.Context) (bool, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wbuf == nil {
		return true, nil
	}
	if c.raw == nil {
		return false, nil
	}
	if err := c.startWrite(ctx); err != nil {
		return false, err
	}
	buf := (*c.wbuf)[:c.wn]
	n, err := c.writeRaw(buf)
	if err != nil {
		return false, c.endWrite(ctx, err)
	}
	c.endWrite(ctx, nil)
	if n == len(buf) {
		c.dropWriter()
		return true, nil
	}
	c.wn = copy(buf, buf[n:])
	return false, nil
}

// startWrite readies a write of the relay's, bounded by ctx: ctx ending
// interrupts it (a write deadline in the past), as coder/websocket's
// writes end with their context. One context.AfterFunc watches the
// context for as long as the writes use it (the relay's is one per
// conversation), not one per write.
func (c *WS) startWrite(ctx context.Context) error {
	if c.werr != nil {
		return c.werr
	}
	if c.closeSent {
		return errClosing
	}
	if ctx != c.wctx {
		c.watch(ctx)
	}
	// Either this sees ctx ended, or the watch sees the write under way
	// (both are sequentially consistent atomics).
	c.writing.Store(true)
	if err := ctx.Err(); err != nil {
		c.writing.Store(false)
		return err
	}
	return nil
}

func (c *WS) endWrite(ctx context.Context, err error) error {
	c.writing.Store(false)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		c.werr = err
		c.dropWriter()
	}
	return err
}

// watch makes ctx the writes' context.
func (c *WS) watch(ctx context.Context) {
	if c.wstop != nil {
		c.wstop()
	}
	c.wctx, c.wstop = ctx, nil
	if ctx.Done() != nil {
		c.wstop = context.AfterFunc(ctx, c.interruptWrite)
	}
}

// interruptWrite interrupts a write of the relay's under way, once its
// context ended; not once Close took over the deadline.
func (c *WS) interruptWrite() {
	c.dlmu.Lock()
	defer c.dlmu.Unlock()
	if !c.closing && c.writing.Load() {
		c.conn.SetWriteDeadline(aLongTimeAgo)
	}
}

// control writes a control frame of Read's (a pong, a close) and sends
// it; nothing once a close was sent or writing broke.
func (c *WS) control(op byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil || c.closeSent {
		return nil
	}
	if c.midFrame {
		held := slices.Clone(p)
		if op == opClose {
			c.heldClose = &held
		} else {
			c.heldPong = &held
		}
		return nil
	}
	if op == opClose {
		c.closeSent = true
	}
	err := c.frame(op, p)
	if err == nil {
		err = c.flush()
	}
	if err != nil {
		c.werr = err
		c.dropWriter()
	}
	return err
}

// frame writes one final frame of op into the write buffer (wmu held),
// sending what is buffered first when the frame does not fit behind it.
// A payload bigger than the buffer goes out through it (masked) or
// straight from data (unmasked).
func (c *WS) frame(op byte, data []byte) error {
	var h [maxHeader]byte
	n := c.frameHeader(h[:], op, len(data))
	if len(c.room()) < n+min(len(data), writeBufSize-maxHeader) {
		if err := c.send(); err != nil {
			return err
		}
	}
	c.wn += copy(c.room(), h[:n])
	if !c.client {
		if len(data) <= len(c.room()) {
			c.wn += copy(c.room(), data)
			return nil
		}
		if err := c.send(); err != nil {
			return err
		}
		_, err := c.conn.Write(data)
		return err
	}
	mask := [4]byte(h[n-4 : n])
	for off := 0; off < len(data); { // masked through the buffer's free room: data is not touched
		room := c.room()
		if len(room) == 0 {
			if err := c.send(); err != nil {
				return err
			}
			room = c.room()
		}
		k := copy(room, data[off:])
		ws.Cipher(room[:k], mask, off)
		c.wn += k
		off += k
	}
	return nil
}

// frameHeader puts the header of a final frame of op with size bytes of
// payload into h and returns its length: with a fresh mask when c
// dialled.
func (c *WS) frameHeader(h []byte, op byte, size int) int {
	h[0] = 0x80 | op
	n := 2
	switch {
	case size <= 125:
		h[1] = byte(size)
	case size <= 0xffff:
		h[1] = 126
		binary.BigEndian.PutUint16(h[2:], uint16(size))
		n = 4
	default:
		h[1] = 127
		binary.BigEndian.PutUint64(h[2:], uint64(size))
		n = 10
	}
	if c.client {
		h[1] |= 0x80
		binary.LittleEndian.PutUint32(h[n:], rand.Uint32())
		n += 4
	}
	return n
}

// room is the write buffer's free room, the buffer taken from the pool
// if c holds none (wmu held).
func (c *WS) room() []byte {
	if c.wbuf == nil {
		c.wbuf = writeBufs.Get().(*[]byte)
	}
	return (*c.wbuf)[c.wn:]
}

// send sends what the write buffer holds, keeping the buffer (wmu held).
func (c *WS) send() error {
	if c.wn == 0 {
		return nil
	}
	_, err := c.conn.Write((*c.wbuf)[:c.wn])
	c.wn = 0
	return err
}

// flush sends the write buffer and gives it back (wmu held).
func (c *WS) flush() error {
	err := c.send()
	c.dropWriter()
	return err
}

func (c *WS) dropWriter() {
	if c.wbuf != nil {
		writeBufs.Put(c.wbuf)
		c.wbuf, c.wn = nil, 0
	}
}

// closePayload is a close frame's payload: code and reason, cut to fit.
func closePayload(code websocket.StatusCode, reason string) []byte {
	p := make([]byte, 2, 2+len(reason))
	binary.BigEndian.PutUint16(p, uint16(code))
	return append(p, Clip(reason)...)
}

// Close closes the connection with code and reason: the close frame
// sent (unless one was, in answer to the peer's, or writing broke), the
// peer's awaited at most 5 s (as coder/websocket's handshake), then the
// socket closed. Only the first call does anything.
func (c *WS) Close(code websocket.StatusCode, reason string) error {
	c.once.Do(func() {
		deadline := time.Now().Add(closeWait)
		c.dlmu.Lock()
		c.closing = true
		if c.writing.Load() {
			c.conn.SetWriteDeadline(aLongTimeAgo) // a write of the relay's still under way ends, as when its context ends
		} else {
			c.conn.SetWriteDeadline(deadline) // also bounds a pong blocked on a peer that does not read
		}
		c.dlmu.Unlock()
		c.wmu.Lock()
		if c.wstop != nil {
			c.wstop()
		}
		sent := false
		if !c.closeSent && c.werr == nil && !c.midFrame { // a half-sent frame cannot be followed by a close frame
			c.conn.SetWriteDeadline(deadline)
			c.closeSent = true
			var p []byte
			if code != websocket.StatusNoStatusRcvd {
				p = closePayload(code, reason)
			}
			err := c.frame(opClose, p)
			if err == nil {
				err = c.flush()
			}
			if err != nil {
				c.werr = err
			}
			sent = err == nil
		}
		c.dropWriter()
		c.wmu.Unlock()
		if sent && !c.closeRcvd.Load() {
			// A Read under way returns with the peer's close, or by the
			// deadline; else this waits for it.
			c.conn.SetReadDeadline(deadline)
			c.rmu.Lock()
			if !c.closeRcvd.Load() && (c.rerr == nil || c.tooBig) {
				c.drain()
			}
			c.rmu.Unlock()
		}
		c.conn.Close()
		c.rmu.Lock()
		if c.rerr == nil {
			c.rerr = net.ErrClosed
		}
		c.r, c.w = 0, 0
		c.releaseRead()
		c.slab = nil
		if c.pre != nil && c.prePooled {
			ws.PutReader(c.pre)
		}
		c.pre = nil
		c.rmu.Unlock()
	})
	return nil
}

// drain reads and drops what the peer sends until its close frame (rmu
// held): the rest of the frame being read, then whole frames.
func (c *WS) drain() {
	for {
		for c.left > 0 {
			if c.r == c.w {
				if err := c.fill(); err != nil {
					return
				}
			}
			n := int(min(c.left, int64(c.w-c.r)))
			c.r += n
			c.left -= int64(n)
		}
		h, err := c.header()
		if err != nil {
			return
		}
		if h.op == opClose {
			c.closeRcvd.Store(true)
			return
		}
	}
}

package live

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/coder/websocket"
)

// A Chunk is data frames as a peer sent them, headers and payloads
// (masked, when a client sent them) byte for byte: what a relay between
// two WebSockets passes on without taking frames apart. The frames the
// caller sends are masked and the agent's are not, which is what the
// other side expects of each (the relay dialled the agent and was dialled
// by the caller), so the bytes are valid on the other side as they are.
type Chunk struct {
	Data []byte
	// Frames is the messages Data ends (its final data frames), Bytes
	// their payload bytes, for the call's counts; Wire is its data frames,
	// fragments too, for the queue's cap.
	Frames, Bytes, Wire int64
	// Owned is set when Data is the Chunk's own; else it is the WS's read
	// buffer, valid only until Pump's deliver returns.
	Owned bool
}

// Pump reads the peer's data frames as it sent them, handing them to
// deliver a chunk at a time (every whole data frame buffered, at least
// one), until reading fails or deliver does: that error, which ends c's
// reading for good. Control frames are handled as Read handles them (a
// ping answered, a pong dropped, the peer's close answered and returned
// as a websocket.CloseError) and a chunk ends before one, as before a
// frame Read would refuse (the error comes once the frames before it
// were delivered). A frame bigger than the read buffer comes alone, in a
// buffer of its own (Owned). The limit applies to a message's fragments
// together, as in Read; a message's fragments pass as they came.
//
// deliver runs inside the socket's read and must not read c; a chunk's
// Data is c's read buffer, unless Owned, valid only until deliver
// returns. A read that finds fewer bytes than it had room for drained
// the socket: Pump then waits for the poller, rather than reading once
// more to learn there is nothing, as a loop of Reads must (a read(2) that
// fails with EAGAIN a burst).
//
// A WS is read with Read or with Pump, never both.
func (c *WS) Pump(deliver func(Chunk) error) error {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return c.rerr
	}
	err := c.pump(deliver)
	c.rerr = err
	c.tooBig = isTooBig(err)
	c.releaseRead()
	return err
}

func (c *WS) pump(deliver func(Chunk) error) error {
	for c.pre != nil || c.raw == nil { // what came with the handshake, or no raw socket: a chunk a read
		ch, err := c.chunk()
		if err != nil {
			return err
		}
		if err := deliver(ch); err != nil {
			return err
		}
	}
	if err := c.deliverBuffered(deliver); err != nil { // what the last chunk left behind it
		return err
	}
	var perr error
	err := c.raw.Read(func(fd uintptr) bool {
		perr = c.pumpFD(int(fd), deliver)
		return perr != errWait
	})
	if err != nil {
		return err
	}
	return perr
}

// errWait is pumpFD's word for: the socket is drained, wait for it.
var errWait = errors.New("wait for the socket")

// pumpFD reads fd and delivers what it read until the socket is drained
// (errWait) or reading or deliver fails.
func (c *WS) pumpFD(fd int, deliver func(Chunk) error) error {
	for {
		var room []byte
		if c.big != nil {
			room = c.big[c.bigN:]
		} else {
			buf := c.takeRead()
			if c.r == c.w {
				c.r, c.w = 0, 0
			} else if c.w == len(buf) {
				c.w = copy(buf, buf[c.r:c.w])
				c.r = 0
			}
			room = buf[c.w:]
		}
		n, err := sysRead(fd, room)
		switch {
		case err == syscall.EAGAIN:
			c.releaseRead()
			return errWait
		case err != nil:
			return os.NewSyscallError("read", err)
		case n == 0 && (c.big != nil || c.r < c.w):
			return io.ErrUnexpectedEOF
		case n == 0:
			return io.EOF
		}
		if c.big != nil {
			c.bigN += n
			if c.bigN == len(c.big) {
				ch := c.bigChunk()
				if err := deliver(ch); err != nil {
					return err
				}
			}
		} else {
			c.w += n
			if err := c.deliverBuffered(deliver); err != nil {
				return err
			}
		}
		if n < len(room) { // the socket had no more
			c.releaseRead()
			return errWait
		}
	}
}

// deliverBuffered delivers the whole frames buffered, handles the
// control frames among them and starts a big frame's own buffer.
func (c *WS) deliverBuffered(deliver func(Chunk) error) error {
	for c.r < c.w {
		ch, next, err := c.scan()
		switch {
		case err != nil:
			return err
		case len(ch.Data) > 0:
			if err := deliver(ch); err != nil {
				return err
			}
		case next == scanControl:
			p := (*c.rbuf)[c.r:c.w]
			n, size, _ := frameSize(p)
			if size <= maxControl && p[0]&0x80 != 0 && int64(len(p)) < int64(n)+size {
				return nil // its payload is still to come
			}
			h, err := c.header()
			if err != nil {
				return err
			}
			if err := c.controlFrame(h); err != nil {
				return err
			}
		case next == scanBig:
			p := (*c.rbuf)[c.r:c.w]
			n, size, _ := frameSize(p)
			c.big = make([]byte, int64(n)+size)
			c.bigN = copy(c.big, p)
			c.r = c.w
		default:
			return nil
		}
	}
	return nil
}

// bigChunk is the big frame read whole into its own buffer.
func (c *WS) bigChunk() Chunk {
	_, size, _ := frameSize(c.big)
	fin := c.big[0]&0x80 != 0
	c.fragment(fin, size)
	ch := Chunk{Data: c.big, Bytes: size, Wire: 1, Owned: true}
	if fin {
		ch.Frames = 1
	}
	c.big, c.bigN = nil, 0
	return ch
}

// chunk reads the next chunk as Pump delivers them, through fill: for
// the bytes read along with the handshake, and a socket with no raw
// access (rmu held).
func (c *WS) chunk() (Chunk, error) {
	for {
		if c.r == c.w || c.pre != nil {
			if err := c.fill(); err != nil {
				return Chunk{}, err
			}
		}
		ch, next, err := c.scan()
		switch {
		case err != nil:
			return Chunk{}, err
		case len(ch.Data) > 0:
			return ch, nil
		case next == scanControl:
			h, err := c.header()
			if err != nil {
				return Chunk{}, err
			}
			if err := c.controlFrame(h); err != nil {
				return Chunk{}, err
			}
		case next == scanBig:
			return c.bigFrame()
		default: // scanMore: a frame's start, and the rest still to come
			if err := c.fill(); err != nil {
				return Chunk{}, unexpected(err)
			}
		}
	}
}

// What scan stopped before, when it returns no data.
const (
	scanMore    = iota // a frame not all buffered yet
	scanControl        // a control frame
	scanBig            // a data frame bigger than the read buffer
)

// scan takes the whole data frames at the start of what is buffered; with
// none, it says what stopped it. A frame that breaks a rule is the error
// when it comes first, and ends the chunk before it otherwise.
func (c *WS) scan() (Chunk, int, error) {
	var ch Chunk
	start := c.r
	b := (*c.rbuf)[:c.w]
	for c.r < c.w {
		p := b[c.r:]
		if len(p) < 2 {
			return c.take(ch, start), scanMore, nil
		}
		n, size, ok := frameSize(p)
		if !ok {
			return c.take(ch, start), scanMore, nil
		}
		op, fin, masked := p[0]&0x0f, p[0]&0x80 != 0, p[1]&0x80 != 0
		if problem := c.refuse(p[0], op, masked, size); problem != "" || op >= opClose {
			if c.r > start {
				return c.take(ch, start), 0, nil
			}
			if problem != "" {
				if problem == tooBig {
					return Chunk{}, 0, fmt.Errorf("%w: read limited at %d bytes", websocket.ErrMessageTooBig, c.limit)
				}
				return Chunk{}, 0, c.protocolError(problem)
			}
			return Chunk{}, scanControl, nil
		}
		if int64(n)+size > int64(len(*c.rbuf)) {
			if c.r > start {
				return c.take(ch, start), 0, nil
			}
			return Chunk{}, scanBig, nil
		}
		if int64(len(p)) < int64(n)+size {
			return c.take(ch, start), scanMore, nil
		}
		c.r += n + int(size)
		c.fragment(fin, size)
		ch.Bytes += size
		ch.Wire++
		if fin {
			ch.Frames++
		}
	}
	return c.take(ch, start), scanMore, nil
}

// take is ch with the bytes scanned since start as its data.
func (c *WS) take(ch Chunk, start int) Chunk {
	if c.r > start {
		ch.Data = (*c.rbuf)[start:c.r]
	}
	return ch
}

// tooBig is refuse's word for a message over the limit.
const tooBig = "too big"

// refuse is what is wrong with a frame of first byte b0 and opcode op,
// masked or not, of size payload bytes, given the message under way; ""
// when nothing is.
func (c *WS) refuse(b0, op byte, masked bool, size int64) string {
	switch {
	case b0&0x70 != 0:
		return "a frame with reserved bits set (no extension was negotiated)"
	case !c.client && !masked:
		return "an unmasked frame from the client"
	case c.client && masked:
		return "a masked frame from the server"
	case size < 0:
		return "a frame length with its high bit set"
	}
	switch op {
	case opClose, opPing, opPong:
		return "" // controlFrame checks them
	case opText, opBinary:
		if c.inMessage {
			return "a new message before the last one's final fragment"
		}
	case opContinuation:
		if !c.inMessage {
			return "a continuation frame with no message to continue"
		}
	default:
		return "a frame of unknown opcode " + strconv.Itoa(int(op))
	}
	if (c.limit >= 0 && c.messageBytes+size > c.limit) || size > 1<<40 {
		return tooBig
	}
	return ""
}

// fragment counts a data frame of size bytes, final or not, into the
// message under way.
func (c *WS) fragment(fin bool, size int64) {
	if fin {
		c.inMessage, c.messageBytes = false, 0
		return
	}
	c.inMessage = true
	c.messageBytes += size
}

// frameSize is the header length and payload size of the frame p starts
// with; false when p does not hold its whole header. A size with the
// high bit set comes back negative.
func frameSize(p []byte) (int, int64, bool) {
	n, size := 2, int64(p[1]&0x7f)
	switch size {
	case 126:
		n = 4
	case 127:
		n = 10
	}
	if p[1]&0x80 != 0 {
		n += 4
	}
	if len(p) < n {
		return 0, 0, false
	}
	switch size {
	case 126:
		size = int64(binary.BigEndian.Uint16(p[2:]))
	case 127:
		size = int64(binary.BigEndian.Uint64(p[2:]))
	}
	return n, size, true
}

// bigFrame reads a data frame bigger than the read buffer into a buffer
// of its own, header and payload as they came; scan checked its header.
func (c *WS) bigFrame() (Chunk, error) {
	p := (*c.rbuf)[c.r:c.w]
	n, size, _ := frameSize(p)
	fin := p[0]&0x80 != 0
	data := make([]byte, int64(n)+size)
	if err := c.readFull(data); err != nil {
		return Chunk{}, err
	}
	c.fragment(fin, size)
	ch := Chunk{Data: data, Bytes: size, Wire: 1, Owned: true}
	if fin {
		ch.Frames = 1
	}
	return ch, nil
}

// WriteChunk writes data, whole frames Pump delivered from the WS on the
// other side of the relay, as they are, after what WriteNoFlush
// buffered; it waits for the socket to take all of it.
func (c *WS) WriteChunk(ctx context.Context, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.startWrite(ctx); err != nil {
		return err
	}
	err := c.send()
	if err == nil {
		_, err = c.conn.Write(data)
	}
	if err == nil {
		c.midFrame = false
		err = c.sendHeld()
	}
	return c.endWrite(ctx, err)
}

// TryWriteChunk writes data as WriteChunk does, as far as the socket
// takes it now, with one write(2) that does not wait: the bytes it took.
// Until WriteChunk writes the rest, c's own control frames wait (they
// cannot go in the middle of a frame). With nothing buffered only; 0
// when c cannot write without waiting (no raw socket).
func (c *WS) TryWriteChunk(ctx context.Context, data []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.raw == nil || c.wn > 0 {
		return 0, nil
	}
	if err := c.startWrite(ctx); err != nil {
		return 0, err
	}
	n, err := c.writeRaw(data)
	if err != nil {
		return 0, c.endWrite(ctx, err)
	}
	c.midFrame = n > 0 && n < len(data)
	return n, c.endWrite(ctx, nil)
}

// sendHeld sends the control frames that waited for a chunk's end
// (wmu held).
func (c *WS) sendHeld() error {
	if c.heldPong != nil {
		p := *c.heldPong
		c.heldPong = nil
		if err := c.frame(opPong, p); err != nil {
			return err
		}
	}
	if c.heldClose != nil {
		p := *c.heldClose
		c.heldClose = nil
		c.closeSent = true
		if err := c.frame(opClose, p); err != nil {
			return err
		}
	}
	return c.send()
}

func isTooBig(err error) bool { return errors.Is(err, websocket.ErrMessageTooBig) }

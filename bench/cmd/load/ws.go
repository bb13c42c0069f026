package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// wsConn is the live rows' WebSocket client (RFC 6455) on a raw TCP
// connection: the upgrade written and read by hand, frames masked out and
// read in with buffers reused, no extension and no goroutine of its own.
// Like conn for HTTP, it costs the load generator little CPU per frame
// on the cores it shares with the agent and the proxy under test. It is
// not safe for concurrent use.
type wsConn struct {
	nc   net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	mask [4]byte
	// msg holds the message read last (its payload is valid until the
	// next read); ctl a control frame's payload.
	msg, ctl []byte
}

// The opcodes of RFC 6455 section 5.2.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// wsMaxMessage bounds a message read: the live rows' frames are small,
// and a length past it is a broken stream, not a frame to buffer.
const wsMaxMessage = 1 << 20

// wsGUID is what RFC 6455 section 1.3 appends to the key before hashing
// it into Sec-WebSocket-Accept.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// errWSClosed is a close frame read: the server ended the connection.
var errWSClosed = errors.New("websocket closed by the server")

// wsDial opens a WebSocket at ws://addr/path: a TCP connection, the
// upgrade request, and a 101 whose Sec-WebSocket-Accept matches the key.
func wsDial(addr, path string) (*wsConn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c := &wsConn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10), bw: bufio.NewWriterSize(nc, 16<<10)}
	var key [16]byte
	rand.Read(key[:])
	rand.Read(c.mask[:])
	k := base64.StdEncoding.EncodeToString(key[:])
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c.bw, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", path, addr, k)
	if err := c.bw.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	if err := readUpgrade(c.br, k); err != nil {
		nc.Close()
		return nil, fmt.Errorf("upgrading ws://%s%s: %w", addr, path, err)
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

// wsAccept is the Sec-WebSocket-Accept a server answers key with.
func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// readUpgrade reads the head of the server's answer to an upgrade sent
// with key: a 101 with Upgrade: websocket and the key's accept, or an
// error that names what was wrong (a refusal's status and the start of
// its body).
func readUpgrade(br *bufio.Reader, key string) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("reading the status line: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return fmt.Errorf("bad status line %q", line)
	}
	var upgrade, accept string
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading the headers: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Upgrade")):
			upgrade = string(value)
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Accept")):
			accept = string(value)
		}
	}
	if status != 101 {
		body, _ := br.Peek(min(br.Buffered(), 200))
		return fmt.Errorf("%w %d, not 101: %q", errStatus, status, body)
	}
	if !bytes.EqualFold([]byte(upgrade), []byte("websocket")) {
		return fmt.Errorf("101 with Upgrade %q, want websocket", upgrade)
	}
	if want := wsAccept(key); accept != want {
		return fmt.Errorf("101 with Sec-WebSocket-Accept %q, want %q", accept, want)
	}
	return nil
}

// appendFrame appends one final client frame of opcode op carrying
// payload, masked with mask (a client's frames are always masked, RFC
// 6455 section 5.3).
func appendFrame(b []byte, op byte, payload []byte, mask [4]byte) []byte {
	b = append(b, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n <= 0xffff:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = append(b, mask[:]...)
	for i, c := range payload {
		b = append(b, c^mask[i&3])
	}
	return b
}

// write buffers one final frame of op carrying payload; flush sends what
// is buffered.
func (c *wsConn) write(op byte, payload []byte) error {
	b := c.bw.AvailableBuffer()
	b = appendFrame(b, op, payload, c.mask)
	_, err := c.bw.Write(b)
	return err
}

func (c *wsConn) flush() error { return c.bw.Flush() }

// buffered reports whether bytes the server sent are read and not yet
// taken: a frame, or part of one, that read returns without waiting.
func (c *wsConn) buffered() bool { return c.br.Buffered() > 0 }

// read returns the next data message, its opcode (text or binary) and
// its payload, fragments joined; the payload is valid until the next
// read. Pings are answered with a pong at once, pongs skipped; a close
// frame is errWSClosed with its code.
func (c *wsConn) read() (byte, []byte, error) {
	c.msg = c.msg[:0]
	var op byte
	for {
		fin, fop, payload, err := c.readFrame()
		if err != nil {
			return 0, nil, err
		}
		switch fop {
		case opPing:
			if err := c.write(opPong, payload); err != nil {
				return 0, nil, err
			}
			if err := c.flush(); err != nil {
				return 0, nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			code := 1005 // none given
			if len(payload) >= 2 {
				code = int(binary.BigEndian.Uint16(payload))
			}
			return 0, nil, fmt.Errorf("%w: code %d", errWSClosed, code)
		case opText, opBinary:
			if op != 0 {
				return 0, nil, fmt.Errorf("a new message (opcode %d) inside a fragmented one", fop)
			}
			op = fop
		case opContinuation:
			if op == 0 {
				return 0, nil, errors.New("a continuation frame with no message to continue")
			}
		default:
			return 0, nil, fmt.Errorf("unknown opcode %d", fop)
		}
		if fin {
			return op, c.msg, nil
		}
	}
}

// readFrame reads one frame: whether it is final, its opcode and its
// payload. A data frame's payload is appended to c.msg (the slice
// returned is its tail); a control frame's is in c.ctl, valid until the
// next control frame. A server's frame is never
// masked (RFC 6455 section 5.1): a masked one is an error.
func (c *wsConn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[0]&0x70 != 0 {
		return false, 0, nil, fmt.Errorf("reserved bits %#x set: no extension was negotiated", h[0]&0x70)
	}
	if h[1]&0x80 != 0 {
		return false, 0, nil, errors.New("a masked frame from the server")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(c.br, l[:]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(c.br, l[:]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	if n > wsMaxMessage {
		return false, 0, nil, fmt.Errorf("a frame of %d bytes, over %d", n, wsMaxMessage)
	}
	if op >= opClose && (n > 125 || !fin) {
		return false, 0, nil, fmt.Errorf("a control frame (opcode %d) of %d bytes or fragmented", op, n)
	}
	if op < opClose {
		// A data frame's payload is read onto the end of the message
		// read so far (fragments join in place).
		if len(c.msg)+int(n) > wsMaxMessage {
			return false, 0, nil, fmt.Errorf("a message over %d bytes", wsMaxMessage)
		}
		start := len(c.msg)
		c.msg = growTo(c.msg, start+int(n))
		if _, err := io.ReadFull(c.br, c.msg[start:]); err != nil {
			return false, 0, nil, err
		}
		return fin, op, c.msg[start:], nil
	}
	c.ctl = growTo(c.ctl[:0], int(n))
	if _, err := io.ReadFull(c.br, c.ctl); err != nil {
		return false, 0, nil, err
	}
	return fin, op, c.ctl, nil
}

// growTo is b resliced to n bytes, reallocated when its capacity is less.
func growTo(b []byte, n int) []byte {
	if cap(b) < n {
		nb := make([]byte, n, max(n, 2*cap(b)))
		copy(nb, b)
		return nb
	}
	return b[:n]
}

// close sends a close frame with code 1000 and closes the connection
// without waiting for the server's answer: the rows are done with it.
func (c *wsConn) close() error {
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	if c.write(opClose, []byte{0x03, 0xe8}) == nil {
		c.flush()
	}
	return c.nc.Close()
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// echoServer is a WebSocket echo on loopback served by coder/websocket
// (the agent's and the sidecar's library): every message back whole, as
// the stand-in agent's /live does. Before each echo it runs before, if
// set, on the connection: errSkip skips the echo, another error ends the
// connection.
var errSkip = errors.New("no echo")

func echoServer(t *testing.T, before func(ctx context.Context, c *websocket.Conn, msg []byte) error) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/live" {
			http.Error(w, "no such route", http.StatusNotFound)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(wsMaxMessage)
		ctx := r.Context()
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			if before != nil {
				if err := before(ctx, c, msg); errors.Is(err, errSkip) {
					continue
				} else if err != nil {
					return
				}
			}
			if err := c.Write(ctx, typ, msg); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestWSEcho: the client's upgrade is accepted by coder/websocket, and
// its frames of every length encoding (7-bit, 16-bit, 64-bit) and type
// come back whole.
func TestWSEcho(t *testing.T) {
	c, err := wsDial(echoServer(t, nil), "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	for _, n := range []int{0, 1, 125, 126, 0xffff, 0x10000, 200_000} {
		for _, op := range []byte{opText, opBinary} {
			payload := liveFrame(n)
			if err := c.write(op, payload); err != nil {
				t.Fatal(err)
			}
			if err := c.flush(); err != nil {
				t.Fatal(err)
			}
			gotOp, got, err := c.read()
			if err != nil {
				t.Fatalf("read() after a %d-byte frame: %v", n, err)
			}
			if gotOp != op || !bytes.Equal(got, payload) {
				t.Errorf("echo of %d bytes, opcode %d = %d bytes, opcode %d", n, op, len(got), gotOp)
			}
		}
	}
}

// TestWSServerPingAndClose: a server's ping is answered (coder/websocket's
// Ping returns once the handler's read loop has read the pong), and the
// server's close is errWSClosed with its code.
func TestWSServerPingAndClose(t *testing.T) {
	addr := echoServer(t, func(ctx context.Context, c *websocket.Conn, msg []byte) error {
		switch string(msg) {
		case "ping me":
			go func() {
				pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				answer := "pong read"
				if err := c.Ping(pctx); err != nil {
					answer = "no pong: " + err.Error()
				}
				c.Write(ctx, websocket.MessageText, []byte(answer))
			}()
			return errSkip
		case "close":
			c.Close(websocket.StatusCode(4000), "done")
			return errors.New("closed")
		}
		return nil
	})
	c, err := wsDial(addr, "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	c.nc.SetDeadline(time.Now().Add(20 * time.Second))
	c.write(opText, []byte("ping me"))
	c.flush()
	if _, got, err := c.read(); err != nil || string(got) != "pong read" {
		t.Fatalf("read() after the server's ping = %q, %v; want \"pong read\"", got, err)
	}
	c.write(opText, []byte("close"))
	c.flush()
	if _, _, err := c.read(); !errors.Is(err, errWSClosed) || !strings.Contains(err.Error(), "code 4000") {
		t.Errorf("read() after the server's close = %v, want errWSClosed with code 4000", err)
	}
}

// TestWSFragments: a message the server sends in fragments, with a ping
// between them, is read as one message.
func TestWSFragments(t *testing.T) {
	c := &wsConn{}
	var in bytes.Buffer
	in.Write([]byte{0x01, 3}) // text, not final
	in.WriteString("abc")
	in.Write([]byte{0x89, 2}) // ping, final
	in.WriteString("hi")
	in.Write([]byte{0x80, 2}) // continuation, final
	in.WriteString("de")
	var out bytes.Buffer
	c.br, c.bw = bufio.NewReader(&in), bufio.NewWriter(&out)
	op, msg, err := c.read()
	if err != nil || op != opText || string(msg) != "abcde" {
		t.Fatalf("read() = %d, %q, %v; want text \"abcde\"", op, msg, err)
	}
	// The pong: final, masked, "hi" under the mask.
	pong := appendFrame(nil, opPong, []byte("hi"), c.mask)
	if !bytes.Equal(out.Bytes(), pong) {
		t.Errorf("answered the ping with % x, want % x", out.Bytes(), pong)
	}
}

// TestWSReadErrors: what read refuses, each with its reason.
func TestWSReadErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"masked", []byte{0x81, 0x81, 1, 2, 3, 4, 'x'}, "masked frame"},
		{"reserved bits", []byte{0xc1, 1, 'x'}, "reserved bits"},
		{"continuation first", []byte{0x80, 1, 'x'}, "no message to continue"},
		{"new message inside one", []byte{0x01, 1, 'x', 0x81, 1, 'y'}, "inside a fragmented one"},
		{"too big", append([]byte{0x82, 127}, 0, 0, 0, 0, 0, 0x20, 0, 0), "over"},
		{"long control frame", append([]byte{0x89, 126, 0, 200}, make([]byte, 200)...), "control frame"},
		{"unknown opcode", []byte{0x83, 0}, "unknown opcode"},
		{"cut short", []byte{0x81, 5, 'x'}, "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &wsConn{br: bufio.NewReader(bytes.NewReader(tt.in)), bw: bufio.NewWriter(io.Discard)}
			if _, _, err := c.read(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("read(% x) = %v, want an error with %q", tt.in, err, tt.want)
			}
		})
	}
}

// TestAppendFrame: the header of each length encoding, and the payload
// masked.
func TestAppendFrame(t *testing.T) {
	mask := [4]byte{1, 2, 3, 4}
	tests := []struct {
		n    int
		head []byte
	}{
		{0, []byte{0x81, 0x80}},
		{125, []byte{0x81, 0x80 | 125}},
		{126, []byte{0x81, 0x80 | 126, 0, 126}},
		{0xffff, []byte{0x81, 0x80 | 126, 0xff, 0xff}},
		{0x10000, []byte{0x81, 0x80 | 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	}
	for _, tt := range tests {
		payload := liveFrame(tt.n)
		got := appendFrame(nil, opText, payload, mask)
		want := append(append(append([]byte{}, tt.head...), mask[:]...), payload...)
		for i := range payload {
			want[len(tt.head)+4+i] ^= mask[i%4]
		}
		if !bytes.Equal(got, want) {
			t.Errorf("appendFrame(%d bytes) begins % x, want % x", tt.n, got[:min(len(got), 16)], want[:min(len(want), 16)])
		}
	}
}

// TestReadUpgrade: a 101 is taken only with Upgrade: websocket and the
// key's accept; a refusal says its status and body.
func TestReadUpgrade(t *testing.T) {
	// RFC 6455 section 1.3's example key and its accept.
	const key, accept = "dGhlIHNhbXBsZSBub25jZQ==", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
	if got := wsAccept(key); got != accept {
		t.Fatalf("wsAccept(%q) = %q, want %q", key, got, accept)
	}
	tests := []struct {
		name, in, want string // want "": no error
	}{
		{"accepted", "HTTP/1.1 101 Switching Protocols\r\nupgrade: WebSocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n", ""},
		{"wrong accept", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: x\r\n\r\n", "Sec-WebSocket-Accept"},
		{"no upgrade", "HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n", "want websocket"},
		{"refused", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", "503, not 101: \"busy\""},
		{"not http", "SSH-2.0-OpenSSH\r\n", "bad status line"},
		{"cut short", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n", "reading the headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := readUpgrade(bufio.NewReader(strings.NewReader(tt.in)), key)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("readUpgrade(%q) = %v, want %q", tt.in, err, tt.want)
			}
		})
	}
}

// TestWSDialRefused: a route that is no WebSocket fails the dial with
// the server's status.
func TestWSDialRefused(t *testing.T) {
	_, err := wsDial(echoServer(t, nil), "/nowhere")
	if !errors.Is(err, errStatus) || !strings.Contains(err.Error(), "404") {
		t.Errorf("wsDial to a 404 = %v, want its status", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := wsDial(addr, "/live"); err == nil {
		t.Errorf("wsDial to %s, where nothing listens = nil, want an error", addr)
	}
}

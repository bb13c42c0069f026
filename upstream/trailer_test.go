package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestTransportTrailers: a chunked reply's trailer never fails a complete
// reply. One that fits the 2 KiB read buffer is read and the connection is
// reused; a longer one (3 KiB, as net/http's 4 KiB buffer would read, or
// far more) is left unread: the reply, unary or streamed, ends cleanly and
// its connection is closed, never reused with the trailer on it.
func TestTransportTrailers(t *testing.T) {
	tests := []struct {
		name    string
		trailer int  // bytes of the trailer field's value
		reused  bool // the connection is reused
	}{
		{"none", 0, true},
		{"1 KiB", 1 << 10, true},
		{"3 KiB", 3 << 10, false},
		{"just under 4 KiB", 4<<10 - 64, false},
		{"64 KiB", 64 << 10, false},
		{"1 MiB", 1 << 20, false},
	}
	for _, stream := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				a := newRawAgent(t, func(n int, req *http.Request, body []byte, w *bufio.Writer) bool {
					w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n")
					rec := fmt.Sprintf("{\"n\":%d}\n", n)
					fmt.Fprintf(w, "%x\r\n%s\r\n0\r\n", len(rec), rec)
					if tt.trailer > 0 {
						fmt.Fprintf(w, "X-Checksum: %s\r\n", strings.Repeat("c", tt.trailer))
					}
					w.WriteString("\r\n")
					return true
				})
				mode := ""
				if stream {
					mode = "mode: stream"
				}
				cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \"http://"+a.addr()+"\"}\nmethods: {q: {"+mode+"}}\n"))
				if err != nil {
					t.Fatal(err)
				}
				c, err := New(cfg, zaptest.NewLogger(t))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				call := func(n int) (string, error) {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					cl := core.Call{Method: cfg.Methods[0], Name: "q", Input: core.Input{Raw: []byte(`{}`)}}
					if !stream {
						out, err := c.Unary(ctx, cl)
						return string(out), err
					}
					records, err := c.Stream(ctx, cl)
					if err != nil {
						return "", err
					}
					defer records.Close()
					var got []string
					for records.Next() {
						got = append(got, string(records.Record()))
					}
					return strings.Join(got, " "), records.Err()
				}
				for n := 1; n <= 2; n++ {
					out, err := call(n)
					want := fmt.Sprintf(`{"n":%d}`, n)
					if !stream {
						want = "[" + want + "]" // an ndjson reply to a unary method
					}
					if err != nil || out != want {
						t.Fatalf("call %d with a %d-byte trailer = %s, %v; want %s", n, tt.trailer, out, err, want)
					}
				}
				if want := map[bool]int{true: 1, false: 2}[tt.reused]; int(a.accepted.Load()) != want {
					t.Errorf("%d connections for 2 calls, want %d", a.accepted.Load(), want)
				}
			})
		}
	}
}

// TestTransportTrailerCut: a reply cut inside its chunked trailer is not a
// clean end, though its last chunk came. net/http's look-ahead for the
// trailer's end reports every read that failed in it as a "suspiciously
// long trailer"; only a trailer that really fills the read buffer, on a
// call still alive, ends the reply cleanly (TestTransportTrailers). An
// agent that stalls there runs out the idle clock, one that resets or
// closes is the connection's error, and a caller that leaves there is the
// caller's cause. Each call has its own deadline, so a reply taken for
// whole fails by name.
func TestTransportTrailerCut(t *testing.T) {
	tests := []struct {
		name string
		// end is what the agent does after the trailer's first bytes.
		end   func(nc net.Conn, done <-chan struct{})
		leave bool // the caller leaves once the trailer's first bytes are sent
		check func(err error) bool
		want  string
	}{
		{"stall", func(_ net.Conn, done <-chan struct{}) { <-done }, false,
			func(err error) bool { var te *core.TimeoutError; return errors.As(err, &te) && te.Phase == "idle" }, "the idle clock's *core.TimeoutError"},
		{"reset", func(nc net.Conn, _ <-chan struct{}) { nc.(*net.TCPConn).SetLinger(0) }, false,
			func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }, "a connection reset"},
		{"close", func(net.Conn, <-chan struct{}) {}, false,
			func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, "io.ErrUnexpectedEOF"},
		{"caller leaves", func(_ net.Conn, done <-chan struct{}) { <-done }, true,
			func(err error) bool { return errors.Is(err, errCallerLeft) }, "the caller's cause"},
	}
	for _, stream := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				sent := make(chan struct{}, 1)
				a := newScriptAgent(t, func(_ int, nc net.Conn, br *bufio.Reader, done <-chan struct{}) {
					if _, err := readRequest(br); err != nil {
						return
					}
					rec := "{\"n\":1}\n"
					fmt.Fprintf(nc, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n%x\r\n%s\r\n0\r\nX-Check", len(rec), rec)
					sent <- struct{}{}
					tt.end(nc, done)
				})
				mode := ""
				if stream {
					mode = "mode: stream"
				}
				cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \"http://"+a.addr()+"\"}\ntimeouts: {idle: 500ms}\nmethods: {q: {"+mode+"}}\n"))
				if err != nil {
					t.Fatal(err)
				}
				c, err := New(cfg, zaptest.NewLogger(t))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeoutCause(context.Background(), 10*time.Second, errors.New("the test's deadline"))
				defer cancel()
				ctx, leave := context.WithCancelCause(ctx)
				defer leave(nil)
				cl := core.Call{Method: cfg.Methods[0], Name: "q", Input: core.Input{Raw: []byte(`{}`)}}
				resp, err := c.Call(ctx, cl) // the head: what follows is the body's
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Close()
				if tt.leave {
					select { // the trailer's first bytes are out
					case <-sent:
					case <-ctx.Done():
					}
					leave(errCallerLeft)
				}
				if !stream {
					out, err := resp.Output(cfg.Methods[0], cfg.Limits.ReplyBytes, cfg.Limits.RecordBytes)
					if !tt.check(err) {
						t.Fatalf("Output() = %s, %v; want %s", out, err, tt.want)
					}
					return
				}
				records, _ := resp.Stream(cfg.Methods[0].Reply, cfg.Limits.RecordBytes)
				for records.Next() {
				}
				if err := records.Err(); !tt.check(err) {
					t.Fatalf("Stream's Err() = %v; want %s", err, tt.want)
				}
			})
		}
	}
}

var errCallerLeft = errors.New("the caller left")

package upstream

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
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

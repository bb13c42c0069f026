package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// trickle sends conn one byte of body (or one chunk of one byte) every
// 20 ms until stop is closed or a write fails, and closes done then.
func trickle(conn net.Conn, chunked bool, stop <-chan struct{}) (done <-chan struct{}) {
	d := make(chan struct{})
	go func() {
		defer close(d)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			b := "x"
			if chunked {
				b = "1\r\nx\r\n"
			}
			if _, err := io.WriteString(conn, b); err != nil {
				return
			}
		}
	}()
	return d
}

// TestSlowBodyTimesOut: a body read once its call holds a slot (over
// 64 KiB, or chunked) that does not arrive within limits.body_timeout is
// answered 408 and frees the slot, however long the caller would go on
// sending it a byte at a time: the call queued behind it is served. The
// harness's server has no read deadline, so nothing else would end it.
func TestSlowBodyTimesOut(t *testing.T) {
	hangsAfter(t, time.Minute)
	agent := replyAgent(t, 200, "application/json", `{"ok":true}`)
	h := newHarness(t, agent.URL, "limits: {concurrency: 1, queue: 1, queue_timeout: 1m, body_timeout: 300ms}\n"+oneMethodConfig)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			length := "Content-Length: 100000" // over 64 KiB: read once the call has its slot
			if chunked {
				length = "Transfer-Encoding: chunked"
			}
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s\r\n\r\n", core.RouteUnary, conn.RemoteAddr(), length)
			stop := make(chan struct{})
			sent := trickle(conn, chunked, stop)
			defer func() { close(stop); <-sent }()
			waitFor(t, func() bool { return h.taken() == 1 })

			queued := make(chan reply, 1)
			go func() { queued <- h.unary("query", `{}`) }()

			// Ten seconds is far past body_timeout, far short of the
			// 2,000 s the trickle would take.
			r := readReplyWithin(t, conn, 10*time.Second)
			if r.status != http.StatusRequestTimeout || !strings.Contains(detail(t, r), "limits.body_timeout (300ms)") {
				t.Errorf("a body trickled past body_timeout = %d %q, want 408 naming limits.body_timeout", r.status, r.body)
			}
			select {
			case q := <-queued:
				if q.status != http.StatusOK {
					t.Errorf("the call queued behind the slow body = %d %s, want 200", q.status, q.body)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call queued behind the slow body was not served: its slot was not freed")
			}
		})
	}
	waitFor(t, func() bool { return h.server.InFlight() == 0 && h.taken() == 0 })
	f := callLogs(t, h.logs, 4)
	late := 0
	for _, l := range f {
		if l["status"] == int64(http.StatusRequestTimeout) && l["outcome"] == "bad_request" {
			late++
		}
	}
	if late != 2 {
		t.Errorf("log lines %v: want 2 with status 408, outcome bad_request", f)
	}
}

// readReplyWithin reads one reply from conn, failing t after d.
func readReplyWithin(t *testing.T, conn net.Conn, d time.Duration) reply {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(d))
	defer conn.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no reply within %v: %v", d, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

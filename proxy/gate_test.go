package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
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

// TestEarlyBodyGrowsAsItArrives: a body small enough to be read before
// its call queues (up to 64 KiB) takes memory as its bytes arrive, not
// as its Content-Length announces: a thousand connections sending only
// headers that announce 64 KiB hold far less than 64 MiB. Measured on
// the live heap once every one of them waits in readBody for its body.
func TestEarlyBodyGrowsAsItArrives(t *testing.T) {
	hangsAfter(t, 2*time.Minute)
	agent := replyAgent(t, 200, "application/json", `{"ok":true}`)
	h := newHarness(t, agent.URL, oneMethodConfig)
	const conns = 1000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	open := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range conns {
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, conn)
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", core.RouteUnary, conn.RemoteAddr(), smallBody)
	}
	deadline := time.Now().Add(time.Minute)
	for n := readingBodies(); n < conns; n = readingBodies() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls reading their bodies after a minute", n, conns)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / conns
	t.Logf("%d connections announcing %d bytes and sending none: %d bytes of heap each", conns, smallBody, per)
	// Each connection's server and client side, its call and the
	// request take about 16 KiB; a buffer of the announced length would
	// add 64 KiB.
	if per > 40<<10 {
		t.Errorf("%d connections announcing a %d-byte body and sending none hold %d bytes of heap each, want under 40 KiB: a buffer taken before the bytes arrive", conns, smallBody, per)
	}
}

// readingBodies is the number of goroutines waiting in readBody.
func readingBodies() int { return goroutinesIn("proxy.readBody") }

// goroutinesIn is the number of goroutines whose stack has every one of
// funcs in it.
func goroutinesIn(funcs ...string) int {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	n := 0
	for _, rec := range strings.Split(b.String(), "\n\n") { // a stack each, with its count
		m := stackCount.FindStringSubmatch(rec)
		for _, f := range funcs {
			if !strings.Contains(rec, f) {
				m = nil
			}
		}
		if m != nil {
			k, _ := strconv.Atoi(m[1])
			n += k
		}
	}
	return n
}

var stackCount = regexp.MustCompile(`(?m)^(\d+) @ `)

// TestBodyAtTheLimit: a body of exactly limits.request_bytes is served
// and one byte more refused 413, whether its length is announced or it
// comes chunked, for a limit under 64 KiB (the body read before its call
// queues, in growing steps) and over (read once it has its slot); every
// body reaches the agent whole.
func TestBodyAtTheLimit(t *testing.T) {
	hangsAfter(t, time.Minute)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ X string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || strings.Trim(in.X, "a") != "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"n":%d}`, len(in.X))
	}))
	defer agent.Close()
	// body is a call whose body is n bytes long, and the length of its x.
	body := func(n int) (string, int) {
		const frame = `{"class_method":"query","input":{"x":""}}`
		x := n - len(frame)
		return `{"class_method":"query","input":{"x":"` + strings.Repeat("a", x) + `"}}`, x
	}
	for _, limit := range []int{4097, 9000, 70000} { // a step and one byte, two steps, past 64 KiB
		h := newHarness(t, agent.URL, fmt.Sprintf("limits: {request_bytes: %d}\n", limit)+oneMethodConfig)
		for _, chunked := range []bool{false, true} {
			for _, n := range []int{limit, limit + 1} {
				b, x := body(n)
				req, _ := http.NewRequest(http.MethodPost, h.url+core.RouteUnary, strings.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				if chunked {
					req.ContentLength = -1
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want, wantStatus := fmt.Sprintf(`{"output":{"n":%d}}`+"\n", x), http.StatusOK
				if n > limit {
					want, wantStatus = fmt.Sprintf(`{"detail":"request body exceeds the limit of %d bytes"}`+"\n", limit), http.StatusRequestEntityTooLarge
				}
				if resp.StatusCode != wantStatus || string(got) != want {
					t.Errorf("request_bytes %d, a body of %d bytes (chunked %v) = %d %.100q, want %d %.100q", limit, n, chunked, resp.StatusCode, got, wantStatus, want)
				}
			}
		}
	}
}

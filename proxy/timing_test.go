package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// think is how long the test agents wait before their reply head: the
// agent entry of Server-Timing is at least that long.
const think = 100 * time.Millisecond

// timingEntry is one entry of the W3C Server-Timing grammar as the
// sidecar writes it: a token, then ";dur=" and a decimal number.
var timingEntry = regexp.MustCompile(`^([a-z]+);dur=([0-9]+(?:\.[0-9]+)?)$`)

// serverTiming reads h's Server-Timing header: its entries' names in
// order and their durations. The test fails on any entry outside the
// grammar, or on more than one header line.
func serverTiming(t *testing.T, h http.Header) ([]string, map[string]time.Duration) {
	t.Helper()
	values := h.Values("Server-Timing")
	if len(values) != 1 {
		t.Fatalf("Server-Timing: %q, want one header line", values)
	}
	var names []string
	durs := map[string]time.Duration{}
	for _, e := range strings.Split(values[0], ", ") {
		m := timingEntry.FindStringSubmatch(e)
		if m == nil {
			t.Fatalf("Server-Timing %q: entry %q is not name;dur=<ms>", values[0], e)
		}
		ms, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m[1])
		durs[m[1]] = time.Duration(ms * float64(time.Millisecond))
	}
	return names, durs
}

// checkTiming checks a reply's Server-Timing: the entries want in order,
// an agent entry at least agentMin (when it has one), and all of them
// together no longer than the caller waited for the head, elapsed.
func checkTiming(t *testing.T, what string, h http.Header, elapsed, agentMin time.Duration, want ...string) {
	t.Helper()
	names, durs := serverTiming(t, h)
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("%s: Server-Timing %q, want the entries %v", what, h.Get("Server-Timing"), want)
	}
	if d, ok := durs["agent"]; ok && d < agentMin {
		t.Errorf("%s: agent;dur=%v, want at least the agent's %v before its head", what, d, agentMin)
	}
	var sum time.Duration
	for _, d := range durs {
		sum += d
	}
	if sum > elapsed {
		t.Errorf("%s: Server-Timing %q adds up to %v, more than the %v the caller waited", what, h.Get("Server-Timing"), sum, elapsed)
	}
}

// TestServerTiming: every reply of a call carries Server-Timing with the
// phases it reached, queue, connect and agent in that order: a unary
// reply, the head of a stream (sent before the agent's first record), an
// agent's error. The agent waits think before its head, so agent is at
// least that.
func TestServerTiming(t *testing.T) {
	records := make(chan struct{})
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(think) // the agent thinking before its first byte
		switch r.URL.Path {
		case "/q":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"a":1}`)
		case "/s":
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			http.NewResponseController(w).Flush()
			select { // the first record waits for the test to read the head
			case <-records:
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, "{\"i\":1}\n")
		default:
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"detail":"boom"}`)
		}
	}))
	t.Cleanup(agent.Close)
	h := newHarness(t, agent.URL, oneMethodConfig+"  broken: {call: POST /broken}\n")

	start := time.Now()
	r := h.unary("query", `{}`)
	if r.status != http.StatusOK {
		t.Fatalf("unary: %d %s", r.status, r.body)
	}
	checkTiming(t, "unary", r.header, time.Since(start), think, "queue", "connect", "agent")

	start = time.Now()
	r = h.unary("broken", `{}`)
	if r.status != http.StatusInternalServerError {
		t.Fatalf("agent's 500: %d %s", r.status, r.body)
	}
	checkTiming(t, "an agent's 500", r.header, time.Since(start), think, "queue", "connect", "agent")

	start = time.Now()
	l := h.open(context.Background(), core.RouteStream, `{"class_method":"stream_query","input":{}}`)
	checkTiming(t, "the stream's head", l.resp.Header, time.Since(start), think, "queue", "connect", "agent")
	close(records)
	if got := l.nextPrompt(t); got != `{"i":1}` {
		t.Errorf("stream line %q", got)
	}
}

// TestServerTimingQueue: a call that waited for a concurrency slot shows
// the wait as queue; one refused a slot shows how long it was in the
// sidecar, and no phase after; one refused before it queued (a
// malformed request) has no header; one whose agent is down has no
// connect or agent.
func TestServerTimingQueue(t *testing.T) {
	release := make(chan struct{})
	_, agent := heldAgent(t, release, `{"a":1}`)
	h := newHarness(t, agent.URL, "limits: {concurrency: 1, queue: 1, queue_timeout: 1m}\n"+oneMethodConfig)

	first := make(chan reply)
	go func() { first <- h.unary("query", `{}`) }()
	waitFor(t, func() bool { return h.taken() == 1 })
	second := make(chan reply)
	start := time.Now()
	go func() { second <- h.unary("query", `{}`) }()
	waitFor(t, func() bool { return h.waiting() == 1 })
	refusedAt := time.Now()
	refused := h.unary("query", `{}`) // the queue is full
	if refused.status != http.StatusServiceUnavailable {
		t.Fatalf("a third call: %d %s, want 503", refused.status, refused.body)
	}
	checkTiming(t, "refused a slot", refused.header, time.Since(refusedAt), 0, "queue")

	const queued = 100 * time.Millisecond
	time.Sleep(queued) // the second call waits this long at least
	close(release)
	<-first
	r := <-second
	elapsed := time.Since(start)
	if r.status != http.StatusOK {
		t.Fatalf("the queued call: %d %s", r.status, r.body)
	}
	checkTiming(t, "queued", r.header, elapsed, 0, "queue", "connect", "agent")
	if _, durs := serverTiming(t, r.header); durs["queue"] < queued {
		t.Errorf("queue;dur=%v, want at least the %v it waited", durs["queue"], queued)
	}

	bad := h.post(core.RouteUnary, `{"class_method":`)
	if bad.status != http.StatusBadRequest || bad.header.Get("Server-Timing") != "" {
		t.Errorf("a malformed request: %d, Server-Timing %q, want 400 and none", bad.status, bad.header.Get("Server-Timing"))
	}

	down := newHarness(t, "http://127.0.0.1:9", "timeouts: {connect: 200ms}\n"+oneMethodConfig)
	start = time.Now()
	r = down.unary("query", `{}`)
	if r.status != http.StatusBadGateway && r.status != http.StatusServiceUnavailable {
		t.Fatalf("an agent that is down: %d %s", r.status, r.body)
	}
	checkTiming(t, "an agent that is down", r.header, time.Since(start), 0, "queue")
}

func TestAppendMillis(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{-time.Second, "0"},
		{500 * time.Nanosecond, "0"},
		{time.Microsecond, "0.001"},
		{120 * time.Microsecond, "0.12"},
		{300 * time.Microsecond, "0.3"},
		{3 * time.Millisecond, "3"},
		{41200 * time.Microsecond, "41.2"},
		{1234567 * time.Microsecond, "1234.567"},
		{1010 * time.Microsecond, "1.01"},
	}
	for _, tt := range tests {
		if got := string(appendMillis(nil, tt.d)); got != tt.want {
			t.Errorf("appendMillis(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

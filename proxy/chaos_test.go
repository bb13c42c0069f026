package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The chaos suite (issue 5, "Hold under faults"): many concurrent streams
// through one sidecar in front of one agent that misbehaves in every way
// it can, some callers leaving half way. Each call's behaviour is chosen
// by its own input ({"mode", "format", "seed", "id"}), so the caller knows
// exactly what the agent did and what it must receive; the modes, formats
// and seeds of the storm come from one seed, logged, which CHAOS_SEED
// replays.

const (
	chaosCalls    = 128 // calls in the storm
	chaosParallel = 32  // at most this many at once
	// chaosIdle is the method's idle timeout: it ends the stalled calls. The
	// slowest well-behaved agent gap (50ms) is far below it, on a loaded
	// machine too (400ms once ended a "slow" call under load).
	chaosIdle      = 2 * time.Second
	chaosRecordMax = 64 << 10 // limits.record_bytes
	// chaosCallLimit is a caller's own deadline: a call still open then
	// is a hang.
	chaosCallLimit = 10 * time.Second
	// chaosHeapGrowth bounds how much the heap may grow across the storm.
	chaosHeapGrowth = 64 << 20
)

var chaosConfig = fmt.Sprintf(`
upstream: {url: AGENT}
limits: {record_bytes: %d, concurrency: %d}
methods:
  stream_query: {mode: stream, call: POST /chaos, timeouts: {idle: %s}}
`, chaosRecordMax, chaosParallel, chaosIdle)

// chaosModes are the agent's behaviours.
var chaosModes = []string{"ok", "crash", "stall", "garbage", "close_early", "slow", "status", "huge"}

// chaosSpec is a call's input: the agent reads its behaviour from it.
type chaosSpec struct {
	ID     int    `json:"id"`
	Mode   string `json:"mode"`
	Format string `json:"format"` // "sse" or "ndjson"
	Seed   uint64 `json:"seed"`
}

func (s chaosSpec) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// chaosEnd is how the agent's reply ends once its steps are written.
type chaosEnd int

const (
	chaosReturn chaosEnd = iota // the handler returns: a clean end
	chaosCrash                  // the connection is hijacked and closed
	chaosStall                  // the handler blocks until its request is cancelled
)

// chaosStep is one write of the agent's, flushed, after a pause.
type chaosStep struct {
	gap  time.Duration
	data string
}

// chaosWant is one line the caller must receive.
type chaosWant struct {
	line      string // exactly this line, unless output or anyOutput
	output    string // {"output": output}
	isOutput  bool
	anyOutput bool // {"output": <any string>} (binary garbage)
}

func (w chaosWant) String() string {
	switch {
	case w.anyOutput:
		return `{"output":<any string>}`
	case w.isOutput:
		b, _ := json.Marshal(map[string]string{"output": w.output})
		return string(b)
	}
	return chaosShort(w.line)
}

// chaosScript is what the agent does for one call, and what the caller
// must get for it.
type chaosScript struct {
	status      int    // the agent's status (200, or an error status)
	contentType string // the agent's Content-Type
	raw         bool   // hijack before answering and write the steps raw, status line included
	steps       []chaosStep
	end         chaosEnd

	wantStatus int
	wantDetail string // for a non-2xx: the detail, "" for any
	want       []chaosWant
	wantCode   string // the final error line's code, "" for a clean end
}

type chaosBuilder struct {
	spec chaosSpec
	rng  *rand.Rand
	sc   *chaosScript
	sse  bool
	next int // the next record's index
}

// chaosScriptFor is the one place that decides, from a call's input, what
// the agent does and what the caller must receive.
func chaosScriptFor(spec chaosSpec) *chaosScript {
	sc := &chaosScript{status: http.StatusOK, wantStatus: http.StatusOK}
	b := &chaosBuilder{spec: spec, rng: rand.New(rand.NewPCG(spec.Seed, uint64(spec.ID))), sc: sc, sse: spec.Format == "sse"}
	if b.sse {
		sc.contentType = b.pick("text/event-stream", "text/event-stream; charset=utf-8", "Text/Event-Stream")
	} else {
		sc.contentType = b.pick("application/x-ndjson", "application/jsonl", "application/x-ndjson; charset=utf-8")
	}
	switch spec.Mode {
	case "ok":
		b.records(1+b.rng.IntN(20), 0, 5*time.Millisecond)
		if b.sse && b.rng.IntN(3) == 0 { // OpenAI's end marker: what follows it is never read
			b.write(0, "data: [DONE]\n\n")
			b.write(0, b.frame(`{"after":"done"}`))
		}
	case "slow":
		b.records(2+b.rng.IntN(5), 20*time.Millisecond, 50*time.Millisecond)
	case "crash":
		b.records(b.rng.IntN(5), 0, 5*time.Millisecond)
		torn := fmt.Sprintf(`{"c":%d,"i":`, spec.ID)
		if b.sse {
			torn = "data: " + torn
		}
		b.write(b.gap(0, 5*time.Millisecond), torn)
		sc.end, sc.wantCode = chaosCrash, "agent_disconnected"
	case "stall":
		b.records(b.rng.IntN(3), 0, 5*time.Millisecond)
		sc.end, sc.wantCode = chaosStall, "timeout"
	case "garbage":
		b.garbage()
	case "close_early":
		b.closeEarly()
	case "status":
		b.statusReply()
	case "huge":
		b.huge()
	default:
		panic("unknown chaos mode " + spec.Mode)
	}
	return sc
}

func (b *chaosBuilder) pick(s ...string) string { return s[b.rng.IntN(len(s))] }

func (b *chaosBuilder) gap(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(b.rng.Int64N(int64(hi-lo)+1))
}

func (b *chaosBuilder) record() string {
	s := fmt.Sprintf(`{"c":%d,"i":%d}`, b.spec.ID, b.next)
	b.next++
	return s
}

func (b *chaosBuilder) frame(rec string) string {
	if b.sse {
		return "data: " + rec + "\n\n"
	}
	return rec + "\n"
}

func (b *chaosBuilder) write(gap time.Duration, data string) {
	b.sc.steps = append(b.sc.steps, chaosStep{gap, data})
}

func (b *chaosBuilder) expect(line string) { b.sc.want = append(b.sc.want, chaosWant{line: line}) }

// records writes n records, each after a gap in [lo, hi], one in three
// torn in two writes.
func (b *chaosBuilder) records(n int, lo, hi time.Duration) {
	for range n {
		rec := b.record()
		b.expect(rec)
		data := b.frame(rec)
		if b.rng.IntN(3) == 0 {
			cut := 1 + b.rng.IntN(len(data)-1)
			b.write(b.gap(lo, hi), data[:cut])
			b.write(b.gap(0, 5*time.Millisecond), data[cut:])
			continue
		}
		b.write(b.gap(lo, hi), data)
	}
}

// binary is bytes that are not JSON and hold no line end.
func (b *chaosBuilder) binary() string {
	buf := []byte{0xff}
	for range 1 + b.rng.IntN(24) {
		c := byte(b.rng.IntN(256))
		if c == '\n' || c == '\r' {
			c = 0xfe
		}
		buf = append(buf, c)
	}
	return string(buf)
}

var chaosTexts = []string{"not json", `{"c": `, "[1,2", "{'i': 1}", "nul", "hello, world"}

// garbageItem is one piece of a garbage reply and the line it must
// become, if any.
func (b *chaosBuilder) garbageItem() (string, *chaosWant) {
	switch k := b.rng.IntN(6); {
	case k <= 2: // a valid record, oddly framed
		rec := b.record()
		want := &chaosWant{line: rec}
		i := b.next - 1
		if b.sse {
			return b.pick(
				"data: "+rec+"\n\n",
				"data:"+rec+"\r\n\r\n",
				"data: "+rec+"\r\r",
				fmt.Sprintf("data: {\"c\":%d,\ndata: \"i\":%d}\n\n", b.spec.ID, i),
				fmt.Sprintf("id: 7\r\ndata: {\"c\":%d,\rdata: \"i\":%d}\r\r", b.spec.ID, i),
				"event: message\ndata: "+rec+"\n\n",
			), want
		}
		return b.pick(
			rec+"\n",
			fmt.Sprintf("{ \"c\" : %d ,\t\"i\" : %d }\r\n", b.spec.ID, i),
			"\x1e"+rec+"\n",
		), want
	case k == 3: // text that is not JSON
		text := chaosTexts[b.rng.IntN(len(chaosTexts))]
		if b.sse {
			return "data: " + text + "\n\n", &chaosWant{output: text, isOutput: true}
		}
		return text + "\n", &chaosWant{output: text, isOutput: true}
	case k == 4: // binary bytes
		if b.sse {
			return "data: " + b.binary() + "\n\n", &chaosWant{anyOutput: true}
		}
		return b.binary() + "\n", &chaosWant{anyOutput: true}
	default: // what makes no line at all
		if b.sse {
			return b.pick(": keep-alive\n", "id: 42\n", "retry: 1000\n", "foo: bar\n", "\n", "event: ping\n\n", b.binary()+"\n"), nil
		}
		return b.pick("\n", "   \n", "\t\r\n"), nil
	}
}

// agentError is an error the agent reports in band, and the code the
// stream's final line must carry.
func (b *chaosBuilder) agentError() (string, string) {
	code := fmt.Sprintf("chaos_%d", b.spec.ID)
	if b.sse {
		switch b.rng.IntN(4) {
		case 0:
			return `event: error` + "\n" + `data: {"code":"` + code + `","message":"boom"}` + "\n\n", code
		case 1:
			return "event: error\ndata: plain failure\n\n", "agent_error"
		case 2:
			return `data: {"error":{"code":"` + code + `","message":"boom"}}` + "\n\n", code
		default: // string-interpolated, not valid JSON
			return `data: {"error": "bad "quote""}` + "\n\n", "agent_error"
		}
	}
	if b.rng.IntN(2) == 0 {
		return `{"error":{"code":"` + code + `","message":"boom"}}` + "\n", code
	}
	return `{"error":"boom"}` + "\n", "agent_error"
}

// garbage is valid records mixed with what is not JSON, binary bytes,
// ignored lines and perhaps an in-band error, written in random pieces.
func (b *chaosBuilder) garbage() {
	var stream strings.Builder
	items := 4 + b.rng.IntN(10)
	errAt := -1
	if b.rng.IntN(2) == 0 {
		errAt = b.rng.IntN(items)
	}
	for k := range items {
		if k == errAt {
			data, code := b.agentError()
			stream.WriteString(data)
			b.sc.wantCode = code
			continue
		}
		data, want := b.garbageItem()
		stream.WriteString(data)
		if want != nil && b.sc.wantCode == "" {
			b.sc.want = append(b.sc.want, *want)
		}
	}
	s := stream.String()
	cuts := []int{0, len(s)}
	for range b.rng.IntN(8) {
		cuts = append(cuts, b.rng.IntN(len(s)+1))
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	for i := 1; i < len(cuts); i++ {
		b.write(b.gap(0, 3*time.Millisecond), s[cuts[i-1]:cuts[i]])
	}
}

// closeEarly closes the connection with the reply (or its status line)
// not complete.
func (b *chaosBuilder) closeEarly() {
	b.sc.raw, b.sc.end = true, chaosCrash
	switch b.rng.IntN(3) {
	case 0: // no status line at all
		b.sc.wantStatus = http.StatusBadGateway
	case 1: // the headers of a chunked reply, then nothing
		b.write(0, "HTTP/1.1 200 OK\r\nContent-Type: "+b.sc.contentType+"\r\nTransfer-Encoding: chunked\r\n\r\n")
		b.sc.wantCode = "agent_disconnected"
	default: // a Content-Length larger than what is sent
		var body strings.Builder
		for range b.rng.IntN(4) {
			rec := b.record()
			b.expect(rec)
			body.WriteString(b.frame(rec))
		}
		declared := body.Len() + 1 + b.rng.IntN(4096)
		b.write(0, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", b.sc.contentType, declared))
		if body.Len() > 0 {
			b.write(b.gap(0, 5*time.Millisecond), body.String())
		}
		b.sc.wantCode = "agent_disconnected"
	}
}

// statusReply is an error status before any body.
func (b *chaosBuilder) statusReply() {
	status := []int{500, 503, 429}[b.rng.IntN(3)]
	msg := fmt.Sprintf("chaos %d: overloaded", b.spec.ID)
	b.sc.status, b.sc.wantStatus, b.sc.wantDetail = status, status, msg
	if b.rng.IntN(4) == 0 {
		b.sc.contentType = "text/plain; charset=utf-8"
		b.write(0, msg+"\n")
		return
	}
	body, _ := json.Marshal(map[string]string{b.pick("detail", "error", "message"): msg})
	b.sc.contentType = "application/json"
	b.write(0, string(body))
}

// huge is a record over limits.record_bytes, perhaps after a big one that
// fits; what follows it must never arrive.
func (b *chaosBuilder) huge() {
	b.records(b.rng.IntN(3), 0, 5*time.Millisecond)
	if b.rng.IntN(2) == 0 {
		rec := fmt.Sprintf(`{"c":%d,"i":%d,"pad":"%s"}`, b.spec.ID, b.next, strings.Repeat("p", 16<<10+b.rng.IntN(44<<10)))
		b.next++
		b.expect(rec)
		b.write(0, b.frame(rec))
	}
	huge := fmt.Sprintf(`{"c":%d,"huge":"%s"}`, b.spec.ID, strings.Repeat("h", chaosRecordMax+1+b.rng.IntN(128<<10)))
	b.write(0, b.frame(huge))
	b.write(0, b.frame(b.record()))
	b.sc.wantCode = "record_too_large"
}

// chaosAgent plays each call's script.
type chaosAgent struct {
	inFlight atomic.Int64
	mu       sync.Mutex
	open     map[int]string // the calls being answered: id → mode
	served   atomic.Int64
}

func (a *chaosAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.inFlight.Add(1)
	defer a.inFlight.Add(-1)
	body, err := io.ReadAll(r.Body) // all of it: then net/http sees the caller go
	var spec chaosSpec
	if err != nil || json.Unmarshal(body, &spec) != nil || spec.Mode == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"detail":"not a chaos call"}`)
		return
	}
	a.served.Add(1)
	a.mu.Lock()
	a.open[spec.ID] = spec.Mode
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.open, spec.ID)
		a.mu.Unlock()
	}()

	sc := chaosScriptFor(spec)
	ctx := r.Context()
	rc := http.NewResponseController(w)
	if sc.raw {
		conn, _, err := rc.Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		for _, s := range sc.steps {
			if !chaosSleep(ctx, s.gap) {
				return
			}
			if _, err := io.WriteString(conn, s.data); err != nil {
				return
			}
		}
		return
	}
	w.Header().Set("Content-Type", sc.contentType)
	w.WriteHeader(sc.status)
	if sc.status != http.StatusOK {
		for _, s := range sc.steps {
			io.WriteString(w, s.data)
		}
		return
	}
	if rc.Flush() != nil {
		return
	}
	for _, s := range sc.steps {
		if !chaosSleep(ctx, s.gap) {
			return
		}
		if _, err := io.WriteString(w, s.data); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
	switch sc.end {
	case chaosCrash:
		if conn, _, err := rc.Hijack(); err == nil {
			conn.Close()
		}
	case chaosStall:
		<-ctx.Done()
	}
}

func (a *chaosAgent) openCalls() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var s []string
	for id, mode := range a.open {
		s = append(s, fmt.Sprintf("%d:%s", id, mode))
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

func chaosSleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// chaosPlan is one call of the storm: its input, and whether (and when)
// its caller leaves.
type chaosPlan struct {
	spec       chaosSpec
	leaveAfter int           // ≥ 0: leave after reading this many lines of a 200
	leaveAt    time.Duration // > 0: leave this long after sending, wherever the call is
}

func (p chaosPlan) leaves() bool { return p.leaveAfter >= 0 || p.leaveAt > 0 }

func chaosPlans(seed uint64) []chaosPlan {
	rng := rand.New(rand.NewPCG(seed, 0xc4a05))
	plans := make([]chaosPlan, chaosCalls)
	for i := range plans {
		format := "ndjson"
		if (i/len(chaosModes))%2 == 1 {
			format = "sse"
		}
		p := chaosPlan{spec: chaosSpec{ID: i, Mode: chaosModes[i%len(chaosModes)], Format: format, Seed: rng.Uint64()}, leaveAfter: -1}
		if rng.IntN(5) == 0 { // one caller in five leaves
			if rng.IntN(3) == 0 {
				p.leaveAt = time.Duration(1+rng.IntN(30)) * time.Millisecond
			} else {
				p.leaveAfter = rng.IntN(4)
			}
		}
		plans[i] = p
	}
	rng.Shuffle(len(plans), func(i, j int) { plans[i], plans[j] = plans[j], plans[i] })
	return plans
}

// chaosResult is what one caller saw.
type chaosResult struct {
	plan        chaosPlan
	left        bool  // the caller left before the reply ended
	err         error // the call failed on the caller's side, not because it left
	status      int
	contentType string
	body        string
	took        time.Duration
}

func chaosCall(client *http.Client, url string, p chaosPlan) (res chaosResult) {
	res.plan = p
	start := time.Now()
	defer func() { res.took = time.Since(start) }()
	ctx, cancel := context.WithTimeout(context.Background(), chaosCallLimit)
	defer cancel()
	var leaving atomic.Bool
	leave := func() { leaving.Store(true); cancel() }
	if p.leaveAt > 0 {
		t := time.AfterFunc(p.leaveAt, leave)
		defer t.Stop()
	}
	body := `{"class_method":"stream_query","input":` + p.spec.String() + `}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+core.RouteStream, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if leaving.Load() {
			res.left = true
		} else {
			res.err = err
		}
		return res
	}
	defer resp.Body.Close()
	res.status, res.contentType = resp.StatusCode, resp.Header.Get("Content-Type")
	var got strings.Builder
	br := bufio.NewReader(resp.Body)
	for n := 0; ; n++ {
		if n == p.leaveAfter && resp.StatusCode == http.StatusOK {
			leave()
			res.left, res.body = true, got.String()
			return res
		}
		line, err := br.ReadString('\n')
		got.WriteString(line)
		if err == io.EOF {
			break
		}
		if err != nil {
			if leaving.Load() {
				res.left = true
			} else {
				res.err = fmt.Errorf("reading the reply: %w", err)
			}
			res.body = got.String()
			return res
		}
	}
	res.body = got.String()
	return res
}

// chaosCheck returns what is wrong with a completed call: first what must
// hold for every reply, then what this call's script says it must be.
func chaosCheck(r chaosResult) []string {
	if r.err != nil && errors.Is(r.err, context.DeadlineExceeded) {
		return []string{fmt.Sprintf("the reply did not end within %v (a hang): %v (body so far %q)", chaosCallLimit, r.err, chaosShort(r.body))}
	}
	if r.err != nil {
		return []string{fmt.Sprintf("call failed after %v: %v (body so far %q)", r.took.Round(time.Millisecond), r.err, chaosShort(r.body))}
	}
	sc := chaosScriptFor(r.plan.spec)
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if r.contentType != "application/json" {
		fail("Content-Type = %q, want application/json", r.contentType)
	}
	if r.status != http.StatusOK {
		if r.status < 400 {
			fail("status %d is neither 200 nor an error", r.status)
		}
		var d struct {
			Detail *string `json:"detail"`
		}
		if err := json.Unmarshal([]byte(r.body), &d); err != nil || d.Detail == nil {
			fail("error body %q is not {\"detail\": …}", chaosShort(r.body))
		}
		if r.status != sc.wantStatus {
			fail("status = %d (%s), want %d", r.status, chaosShort(r.body), sc.wantStatus)
		} else if d.Detail != nil && sc.wantDetail != "" && *d.Detail != sc.wantDetail {
			fail("detail = %q, want %q", *d.Detail, sc.wantDetail)
		}
		return bad
	}

	// A 200: complete lines, each one compact JSON value.
	if r.body != "" && !strings.HasSuffix(r.body, "\n") {
		fail("body does not end with a newline (a torn line): %q", chaosShort(r.body[max(0, len(r.body)-200):]))
	}
	var lines []string
	if r.body != "" {
		lines = strings.Split(strings.TrimSuffix(r.body, "\n"), "\n")
	}
	var records []string
	code, errAt := "", -1
	for i, l := range lines {
		var compact bytes.Buffer
		if !json.Valid([]byte(l)) || json.Compact(&compact, []byte(l)) != nil {
			fail("line %d %q is not valid JSON", i, chaosShort(l))
			continue
		}
		if compact.String() != l {
			fail("line %d %q is not compact JSON", i, chaosShort(l))
		}
		c, isErr, ok := chaosErrorLine(l)
		if !isErr {
			if errAt >= 0 {
				fail("line %d %q comes after the error line %d", i, chaosShort(l), errAt)
			}
			records = append(records, l)
			continue
		}
		if !ok {
			fail("error line %d %q is not {\"error\":{\"code\":…,\"message\":…,\"status\":…,\"details\":[ErrorInfo]}}", i, chaosShort(l))
		}
		if errAt >= 0 {
			fail("a second error line %d %q (the first was line %d)", i, chaosShort(l), errAt)
		}
		code, errAt = c, i
	}
	if r.status != sc.wantStatus {
		fail("status = 200, want %d", sc.wantStatus)
		return bad
	}

	// The records the agent sent, complete and in order; the end it chose.
	if code != sc.wantCode {
		fail("stream ended with error code %q, want %q", code, sc.wantCode)
	}
	for i := 0; i < max(len(records), len(sc.want)); i++ {
		switch {
		case i >= len(records):
			fail("record %d missing: want %s", i, sc.want[i])
		case i >= len(sc.want):
			fail("record %d %q was never sent (or comes after the end)", i, chaosShort(records[i]))
		case !chaosMatch(sc.want[i], records[i]):
			fail("record %d = %q, want %s", i, chaosShort(records[i]), sc.want[i])
		}
	}
	return bad
}

// chaosErrorLine reports whether line is an error line (a top-level
// "error" key) and whether it has the one shape allowed, Google's error
// model; code is its ErrorInfo reason, lower-cased.
func chaosErrorLine(line string) (code string, isErr, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &top) != nil {
		return "", false, false
	}
	raw, isErr := top["error"]
	if !isErr {
		return "", false, false
	}
	var e struct {
		Code    *int    `json:"code"`
		Message *string `json:"message"`
		Status  string  `json:"status"`
		Details []struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
			Domain string `json:"domain"`
		} `json:"details"`
	}
	if len(top) != 1 || json.Unmarshal(raw, &e) != nil || e.Code == nil || e.Message == nil || e.Status == "" ||
		len(e.Details) != 1 || e.Details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" || e.Details[0].Reason == "" || e.Details[0].Domain == "" {
		return "", true, false
	}
	return strings.ToLower(e.Details[0].Reason), true, true
}

func chaosMatch(w chaosWant, line string) bool {
	if !w.isOutput && !w.anyOutput {
		return line == w.line
	}
	var v map[string]json.RawMessage
	var s string
	if json.Unmarshal([]byte(line), &v) != nil || len(v) != 1 || json.Unmarshal(v["output"], &s) != nil {
		return false
	}
	return w.anyOutput || s == w.output
}

func chaosShort(s string) string {
	if len(s) > 160 {
		return s[:120] + fmt.Sprintf("…(%d bytes)…", len(s)-150) + s[len(s)-30:]
	}
	return s
}

func chaosHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

var chaosCodeID = regexp.MustCompile(`chaos_[0-9]+`)

func chaosOutcome(r chaosResult) string {
	switch {
	case r.left:
		return "left"
	case r.err != nil:
		return "failed"
	case r.status != http.StatusOK:
		return strconv.Itoa(r.status)
	}
	body := strings.TrimSuffix(r.body, "\n")
	if code, isErr, _ := chaosErrorLine(body[strings.LastIndex(body, "\n")+1:]); isErr {
		return "200+" + code
	}
	return "200+ok"
}

// TestChaos is issue 5's storm: 128 streams, 32 at once, against an agent
// that crashes, stalls, sends garbage, closes early, crawls, fails, and
// sends records over the limit; one caller in five leaves half way. Every
// completed call is a JSON error or a stream of complete compact lines with
// at most one final error line; nothing leaks, the heap stays bounded, and
// the sidecar still serves afterwards.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite takes a few seconds")
	}
	// Registered first, so it runs last: after the sidecar and the agent
	// are shut down.
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (replay with CHAOS_SEED=%d)", seed, seed)

	agent := &chaosAgent{open: map[int]string{}}
	agentSrv := httptest.NewServer(agent)
	t.Cleanup(agentSrv.Close)
	h := newHarness(t, agentSrv.URL, chaosConfig)

	tr := &http.Transport{MaxIdleConnsPerHost: chaosParallel, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	normal := func(when string, id int) {
		t.Helper()
		for _, format := range []string{"ndjson", "sse"} {
			p := chaosPlan{spec: chaosSpec{ID: id, Mode: "ok", Format: format, Seed: 1}, leaveAfter: -1}
			if bad := chaosCheck(chaosCall(client, h.url, p)); len(bad) > 0 {
				t.Errorf("normal %s call %s: %s", when, p.spec, strings.Join(bad, "; "))
			}
		}
	}
	normal("warm-up", 1000)
	heapBefore, goroutinesBefore := chaosHeap(), runtime.NumGoroutine()

	plans := chaosPlans(seed)
	results := make([]chaosResult, len(plans))
	sem := make(chan struct{}, chaosParallel)
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range plans {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = chaosCall(client, h.url, p)
		})
	}
	wg.Wait()
	storm := time.Since(start)

	// Every call ends on both sides: the sidecar cancels what its callers
	// left and what its clocks ended.
	deadline := time.Now().Add(10 * time.Second)
	for agent.inFlight.Load() != 0 || h.server.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Errorf("10s after the storm: %d agent requests still open (%s), %d sidecar calls in flight",
				agent.inFlight.Load(), agent.openCalls(), h.server.InFlight())
			agentSrv.CloseClientConnections() // so that shutting down does not hang
			break
		}
		time.Sleep(5 * time.Millisecond)
	}

	type tally struct {
		calls, left int
		outcomes    map[string]int
		longest     time.Duration
	}
	tallies := map[string]*tally{}
	failures := 0
	for _, r := range results {
		spec := r.plan.spec
		tl := tallies[spec.Mode]
		if tl == nil {
			tl = &tally{outcomes: map[string]int{}}
			tallies[spec.Mode] = tl
		}
		tl.calls++
		tl.outcomes[chaosCodeID.ReplaceAllString(chaosOutcome(r), "chaos_<id>")]++
		tl.longest = max(tl.longest, r.took)
		if r.left {
			tl.left++
			continue
		}
		if bad := chaosCheck(r); len(bad) > 0 {
			failures++
			if failures <= 12 {
				t.Errorf("call %s (seed %d): %s\nbody: %q", spec, seed, strings.Join(bad, "; "), chaosShort(r.body))
			}
		}
	}
	if failures > 12 {
		t.Errorf("… and %d more failed calls (seed %d)", failures-12, seed)
	}

	normal("after-storm", 1001)
	tr.CloseIdleConnections()
	heapAfter := chaosHeap()
	if growth := int64(heapAfter) - int64(heapBefore); growth > chaosHeapGrowth {
		t.Errorf("heap grew by %d MiB across the storm (%d → %d bytes), want under %d MiB",
			growth>>20, heapBefore, heapAfter, chaosHeapGrowth>>20)
	}

	var sum strings.Builder
	fmt.Fprintf(&sum, "%d calls (%d at once) in %v; the agent served %d; heap %.1f → %.1f MiB; goroutines %d → %d",
		len(results), chaosParallel, storm.Round(time.Millisecond), agent.served.Load(),
		float64(heapBefore)/(1<<20), float64(heapAfter)/(1<<20), goroutinesBefore, runtime.NumGoroutine())
	for _, mode := range chaosModes {
		tl := tallies[mode]
		if tl == nil {
			continue
		}
		var outs []string
		for o, n := range tl.outcomes {
			outs = append(outs, fmt.Sprintf("%s×%d", o, n))
		}
		slices.Sort(outs)
		fmt.Fprintf(&sum, "\n  %-11s %3d calls, %2d left, longest %5v: %s", mode, tl.calls, tl.left, tl.longest.Round(time.Millisecond), strings.Join(outs, " "))
	}
	t.Log(sum.String())
}

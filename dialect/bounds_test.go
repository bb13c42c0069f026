package dialect

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/internal/producers"
	"github.com/sidecar-dev/sidecar/proxy"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/platform"
	"github.com/sidecar-dev/sidecar/upstream"
)

// heapWatch follows how far the live heap grows above where it started:
// the agent samples it while it streams, so what the sidecar holds of the
// stream so far shows, whatever the machine's speed.
type heapWatch struct {
	mu         sync.Mutex
	base, peak uint64
}

func newHeapWatch() *heapWatch {
	h := &heapWatch{}
	h.base = liveHeap()
	h.peak = h.base
	return h
}

// liveHeap is the bytes allocated before it was called that a collection
// then still finds reachable: what was in the heap at the call, less what
// that collection frees. The stream's goroutines run on while the
// collection does, draining what the agent already wrote into the
// sockets, and what they allocate meanwhile is not freed before the next
// collection: read after this one, HeapInuse or HeapAlloc count it as
// held, more the slower a loaded machine collects (emit adk, which
// allocates most per byte streamed, read up to 12 MiB more so, varying
// from run to run). Leaving out what was allocated since the call leaves
// in all the stage holds from the lines before it.
func liveHeap() uint64 {
	runtime.GC() // so that none is under way: the next starts at the call
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	runtime.GC()
	runtime.ReadMemStats(&after)
	since := after.TotalAlloc - before.TotalAlloc // all still counted in HeapAlloc, or freed
	return after.HeapAlloc - min(since, after.HeapAlloc)
}

func (h *heapWatch) sample() {
	n := liveHeap()
	h.mu.Lock()
	h.peak = max(h.peak, n)
	h.mu.Unlock()
}

// grew is the most the live heap grew, in MiB.
func (h *heapWatch) grew() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return float64(h.peak-h.base) / (1 << 20)
}

// streamAgent serves every POST with the frames next writes, one at a
// time (nil: the end), sampling the heap every 16 frames; it stops when
// the sidecar stops reading.
func streamAgent(t *testing.T, contentType string, header http.Header, watch *heapWatch, next func(i int) []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", contentType)
		rc := http.NewResponseController(w)
		for i := 0; ; i++ {
			b := next(i)
			if b == nil {
				return
			}
			if _, err := w.Write(b); err != nil {
				return
			}
			if i%16 == 0 {
				if rc.Flush() != nil {
					return
				}
				if watch != nil {
					watch.sample()
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// mappedSidecar serves yaml (AGENT: url) as cmd/sidecar assembles a
// sidecar, its limits on the mapping stage.
func mappedSidecar(t *testing.T, url, yaml string) (string, *observer.ObservedLogs) {
	t.Helper()
	cfg, err := config.Parse("sidecar.yaml", []byte(strings.ReplaceAll(yaml, "AGENT", url)))
	if err != nil {
		t.Fatal(err)
	}
	observed, logs := observer.New(zap.InfoLevel)
	logger := zap.New(observed)
	client, err := upstream.New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	mapped := Agent{Agent: core.Mux{Plain: client}, Author: cfg.ADK.App, MaxReply: cfg.Limits.ReplyBytes, MaxRecord: cfg.Limits.RecordBytes}
	s := &proxy.Server{Config: cfg, Agent: mapped, Logger: logger}
	srv := httptest.NewServer(s.HandlerFor(platform.Door{}))
	t.Cleanup(func() { srv.Close(); client.Close() })
	return srv.URL, logs
}

// answer is what a call got: its status, its lines (one of up to
// shortLine bytes whole, a longer one its first longHead bytes; its whole
// length with it, its newline not counted), the longest.
type answer struct {
	status  int
	lines   []string
	lengths []int
	longest int
}

// What post keeps of a line: a short one whole, to check it is JSON; of a
// long one (thousands in a bounds test) no more than a message quotes, so
// the heap a bounds test watches is the sidecar's, not the client's.
const shortLine, longHead = 4096, 256

// post calls method and reads the answer line by line without holding a
// long line whole.
func post(t *testing.T, url, route, method string) answer {
	t.Helper()
	resp, err := http.Post(url+route, "application/json", strings.NewReader(`{"class_method":"`+method+`","input":{"message":"hi"}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	head := make([]byte, 0, shortLine)
	for {
		head = head[:0]
		n := 0
		for {
			frag, err := br.ReadSlice('\n')
			n += len(frag)
			if len(head) < shortLine {
				head = append(head, frag[:min(len(frag), shortLine-len(head))]...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && err != io.EOF {
				t.Fatalf("%s: reading the answer: %v", method, err)
			}
			if err == nil {
				n-- // the newline
			}
			if n > shortLine {
				head = head[:longHead]
			}
			if n > 0 {
				a.lines = append(a.lines, strings.TrimSuffix(string(head), "\n"))
				a.lengths = append(a.lengths, n)
				a.longest = max(a.longest, n)
			}
			if err == io.EOF {
				return a
			}
			break
		}
	}
}

// reasonOf is the reason of a final error line, "" when l is not one.
func reasonOf(l string) string {
	var e struct {
		Error struct {
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(l), &e) != nil || len(e.Error.Details) == 0 {
		return ""
	}
	return e.Error.Details[0].Reason
}

const boundsConfig = `upstream: {url: "AGENT"}
limits: {record_bytes: 256KiB, reply_bytes: 1MiB}
methods:
  text_query: {mode: stream, call: POST /, emit: text}
  adk_query: {mode: stream, call: POST /, emit: adk}
  text_once: {call: POST /, emit: text}
  adk_once: {call: POST /, emit: adk}
  raw_once: {call: POST /}
`

// TestStreamKeepsOnlyTheNextLine: a Vercel AI SDK stream of 1000 text
// deltas of 64 KiB (62.5 MiB, 250 times record_bytes) through emit text
// and emit adk: the whole text comes out, no line is longer than
// record_bytes, and the sidecar never holds the answer (the live heap
// grows by 8 MiB at most).
func TestStreamKeepsOnlyTheNextLine(t *testing.T) {
	// n x size is far more than the bound, so the whole answer kept (about
	// n x size) and what the next line needs (1 to 1.5 MiB with the
	// client's heads of lines, as liveHeap counts) are far apart.
	const n, size, limit = 1000, 64 << 10, 256 << 10
	delta := strings.Repeat("x", size-1)
	for _, method := range []string{"text_query", "adk_query"} {
		t.Run(method, func(t *testing.T) {
			watch := newHeapWatch()
			agent := streamAgent(t, "text/event-stream", http.Header{"X-Vercel-Ai-Ui-Message-Stream": {"v1"}}, watch, func(i int) []byte {
				switch {
				case i < n:
					return []byte(`data: {"type":"text-delta","id":"t","delta":"` + delta + string(rune('a'+i%26)) + "\"}\n\n")
				case i == n:
					return []byte("data: {\"type\":\"finish\"}\n\ndata: [DONE]\n\n")
				}
				return nil
			})
			url, _ := mappedSidecar(t, agent.URL, boundsConfig)
			a := post(t, url, core.RouteStream, method)
			if a.status != http.StatusOK || a.longest > limit {
				t.Errorf("%s: status %d, longest line %d bytes, want 200 and at most record_bytes (%d)", method, a.status, a.longest, limit)
			}
			if last := a.lines[len(a.lines)-1]; reasonOf(last) != "" {
				t.Fatalf("%s ended with %s, want a clean end", method, last)
			}
			var total int
			for i, l := range a.lines {
				if a.lengths[i] <= shortLine && !json.Valid([]byte(l)) {
					t.Errorf("line %d = %s, not JSON", i, l)
				}
				total += a.lengths[i]
			}
			if total < n*size {
				t.Errorf("%s: %d bytes out, want at least the %d of the text", method, total, n*size)
			}
			t.Logf("%s: live heap grew %.1f MiB", method, watch.grew())
			if g := watch.grew(); g > 8 {
				t.Errorf("%s: live heap grew %.1f MiB while streaming %d MiB, want it bounded by what the next line needs", method, g, n*size>>20)
			}
		})
	}
}

// TestStreamTextSplitAtTheCap: a text delta whose line would pass
// record_bytes comes out as several lines, the text whole and in order,
// in emit text and in emit adk (partial events and complete events both).
func TestStreamTextSplitAtTheCap(t *testing.T) {
	const limit = 512 << 10
	// One delta of 150,000 U+2028 (450 KB in its record, under the cap)
	// that JSON writes escaped, as \u2028: 900 KB.
	text := strings.Repeat("\u2028", 150000)
	rec := `{"type":"text-delta","id":"t","delta":"` + text + `"}`
	agent := streamAgent(t, "text/event-stream", nil, nil, func(i int) []byte {
		switch i {
		case 0:
			return []byte("data: " + rec + "\n\n")
		case 1:
			return []byte("data: {\"type\":\"finish\"}\n\n")
		}
		return nil
	})
	url, _ := mappedSidecar(t, agent.URL, strings.Replace(boundsConfig, "record_bytes: 256KiB", "record_bytes: 512KiB", 1))
	for _, method := range []string{"text_query", "adk_query"} {
		resp, err := http.Post(url+core.RouteStream, "application/json", strings.NewReader(`{"class_method":"`+method+`","input":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var partial, complete strings.Builder
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		for _, l := range lines {
			if len(l) > limit {
				t.Errorf("%s: a line of %d bytes, want at most record_bytes (%d)", method, len(l), limit)
			}
			var ev struct {
				Text    *string
				Partial bool
				Content struct{ Parts []struct{ Text string } }
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("%s: line %.200s: %v", method, l, err)
			}
			switch {
			case ev.Text != nil:
				partial.WriteString(*ev.Text)
			case ev.Partial:
				partial.WriteString(ev.Content.Parts[0].Text)
			case len(ev.Content.Parts) > 0:
				complete.WriteString(ev.Content.Parts[0].Text)
			}
		}
		if partial.String() != text || method == "adk_query" && complete.String() != text {
			t.Errorf("%s: %d lines, text %d bytes, complete %d bytes; want the %d bytes whole", method, len(lines), partial.Len(), complete.Len(), len(text))
		}
	}
}

// TestToolArgumentsCapped: tool call arguments that arrive in pieces past
// record_bytes (OpenAI chat tool_calls deltas, AG-UI TOOL_CALL_ARGS,
// LangGraph tool_call_chunks; 200 pieces of 64 KiB) end the call with
// one final record_too_large line, never a longer line, and the sidecar
// holds no more than the cap.
func TestToolArgumentsCapped(t *testing.T) {
	const n, size, limit = 200, 64 << 10, 256 << 10
	piece := strings.Repeat("a", size)
	streams := []struct {
		name        string
		first, each string
		last        string
	}{
		{"openai-chat",
			`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}` + "\n\n",
			`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"PIECE"}}]}}]}` + "\n\n",
			`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"},
		{"ag-ui",
			`data: {"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f"}` + "\n\n",
			`data: {"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"PIECE"}` + "\n\n",
			`data: {"type":"TOOL_CALL_END","toolCallId":"c1"}` + "\n\n" + `data: {"type":"RUN_FINISHED"}` + "\n\n"},
		{"langgraph",
			"event: metadata\ndata: {\"run_id\":\"r\"}\n\n",
			"event: messages\ndata: [{\"type\":\"AIMessageChunk\",\"content\":\"\",\"tool_call_chunks\":[{\"index\":0,\"id\":\"c1\",\"name\":\"f\",\"args\":\"PIECE\"}]},{}]\n\n",
			"event: updates\ndata: {}\n\n"},
	}
	for _, s := range streams {
		t.Run(s.name, func(t *testing.T) {
			watch := newHeapWatch()
			each := []byte(strings.Replace(s.each, "PIECE", piece, 1))
			agent := streamAgent(t, "text/event-stream", nil, watch, func(i int) []byte {
				switch {
				case i == 0:
					return []byte(s.first)
				case i <= n:
					return each
				case i == n+1:
					return []byte(s.last)
				}
				return nil
			})
			url, _ := mappedSidecar(t, agent.URL, boundsConfig)
			for _, method := range []string{"text_query", "adk_query"} {
				a := post(t, url, core.RouteStream, method)
				if a.longest > limit {
					t.Errorf("%s: a line of %d bytes, want at most record_bytes (%d)", method, a.longest, limit)
				}
				if last := a.lines[len(a.lines)-1]; reasonOf(last) != "RECORD_TOO_LARGE" || len(a.lines) != 1 {
					t.Errorf("%s = %d lines, the last %.300s; want one record_too_large line", method, len(a.lines), last)
				}
			}
			t.Logf("live heap grew %.1f MiB", watch.grew())
			if g := watch.grew(); g > 6 {
				t.Errorf("live heap grew %.1f MiB while the agent streamed %d MiB of arguments", g, n*size>>20)
			}
		})
	}
}

// TestDataStreamLineCapped: a legacy (v4) data stream line longer than
// record_bytes (8 MiB with no newline, 32 times the cap) ends the call
// with a record_too_large line, not a clean {"end":{}}; memory stays
// bounded.
func TestDataStreamLineCapped(t *testing.T) {
	const n, size = 128, 64 << 10
	watch := newHeapWatch()
	piece := []byte(strings.Repeat("a", size))
	agent := streamAgent(t, "text/plain; charset=utf-8", http.Header{"X-Vercel-Ai-Data-Stream": {"v1"}}, watch, func(i int) []byte {
		switch {
		case i == 0:
			return []byte("0:\"hi\"\n0:\"")
		case i <= n:
			return piece
		case i == n+1:
			return []byte("\"\n")
		}
		return nil
	})
	url, _ := mappedSidecar(t, agent.URL, boundsConfig)
	a := post(t, url, core.RouteStream, "text_query")
	if len(a.lines) != 2 || a.lines[0] != `{"text":"hi"}` || reasonOf(a.lines[1]) != "RECORD_TOO_LARGE" {
		t.Errorf("lines = %.300q, want the text then one record_too_large line", a.lines)
	}
	t.Logf("live heap grew %.1f MiB", watch.grew())
	if g := watch.grew(); g > 6 {
		t.Errorf("live heap grew %.1f MiB while the agent streamed an %d MiB line", g, n*size>>20)
	}
}

// TestAutoPassesUnplacedThrough: ndjson records {"message":"hello"} are
// not A2A: dialect auto passes them through unchanged, noted raw.
func TestAutoPassesUnplacedThrough(t *testing.T) {
	recs := []string{`{"message":"hello"}`, `{"message":"world"}`, `{"task":"x"}`, `{"author":"bob","text":"hi"}`}
	agent := streamAgent(t, "application/x-ndjson", nil, nil, func(i int) []byte {
		if i < len(recs) {
			return []byte(recs[i] + "\n")
		}
		return nil
	})
	url, logs := mappedSidecar(t, agent.URL, boundsConfig)
	a := post(t, url, core.RouteStream, "text_query")
	if strings.Join(a.lines, "\n") != strings.Join(recs, "\n") {
		t.Errorf("text_query = %q, want the records passed through %q", a.lines, recs)
	}
	for _, e := range logs.FilterMessage("call").All() {
		if d := e.ContextMap()["dialect"]; d != "raw" {
			t.Errorf("call logged dialect %v, want raw", d)
		}
	}
}

// TestForcedDialectMismatch: a forced dialect that recognises nothing in
// the stream (a2a in front of the Vercel AI SDK, openai-responses in
// front of the OpenAI Agents SDK) ends with one final dialect_mismatch
// line, not a clean {"end":{}}.
func TestForcedDialectMismatch(t *testing.T) {
	vercel := vercelAgent(t)
	resp, err := producers.ReadCapture(filepath.Join(producers.Dir(), "captures", "openai-agents", "tool.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	agents := streamAgent(t, "text/event-stream", nil, nil, func(i int) []byte {
		if i == 0 {
			return sdk // the real OpenAI Agents SDK's stream
		}
		return nil
	})
	for _, tt := range []struct{ dialect, url, path string }{
		{"a2a", vercel.URL, "/chat"},
		{"openai-responses", agents.URL, "/"},
		{"langgraph", vercel.URL, "/chat"},
	} {
		for _, emit := range []string{"text", "adk"} {
			url, _ := mappedSidecar(t, tt.url, fmt.Sprintf("upstream: {url: AGENT}\nmethods:\n  q: {mode: stream, call: POST %s, dialect: %s, emit: %s}\n", tt.path, tt.dialect, emit))
			a := post(t, url, core.RouteStream, "q")
			if len(a.lines) != 1 || reasonOf(a.lines[0]) != "DIALECT_MISMATCH" || !strings.Contains(a.lines[0], tt.dialect) {
				t.Errorf("dialect %s emit %s = %q, want one dialect_mismatch line naming the dialect", tt.dialect, emit, a.lines)
			}
		}
	}
}

// TestDialectShapedNotMismatch: records of the named dialect that map to
// nothing (an A2A task still working, a LangGraph run with no messages)
// are not a mismatch: the stream ends as it did.
func TestDialectShapedNotMismatch(t *testing.T) {
	for _, tt := range []struct{ dialect, src string }{
		{"a2a", `data: {"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","status":{"state":"working"}}}` + "\n\n"},
		{"langgraph", "event: metadata\ndata: {\"run_id\":\"r\"}\n\nevent: values\ndata: {\"count\":1}\n\n"},
	} {
		got := mapFixture(t, config.Dialect(tt.dialect), config.EmitText, strings.NewReader(tt.src), nil)
		if strings.Join(got, "\n") != `{"end":{}}` {
			t.Errorf("dialect %s = %q, want the end line", tt.dialect, got)
		}
	}
}

// TestErrorLastNoEnd: a data stream whose last line is an error (3:"boom"
// with no newline after it) ends with the error line, and no {"end":…}
// before it.
func TestErrorLastNoEnd(t *testing.T) {
	for _, last := range []string{`3:"boom"`, "3:\"boom\"\n"} {
		agent := streamAgent(t, "text/plain", http.Header{"X-Vercel-Ai-Data-Stream": {"v1"}}, nil, func(i int) []byte {
			if i == 0 {
				return []byte("0:\"hi\"\n" + last)
			}
			return nil
		})
		url, _ := mappedSidecar(t, agent.URL, boundsConfig)
		a := post(t, url, core.RouteStream, "text_query")
		if len(a.lines) != 2 || a.lines[0] != `{"text":"hi"}` || reasonOf(a.lines[1]) != "AGENT_ERROR" || !strings.Contains(a.lines[1], "boom") {
			t.Errorf("stream ending %q = %q, want the text then the agent's error, no end line", last, a.lines)
		}
	}
}

// TestUnaryCapCountsTheAnswer: a unary emit adk (or text) reply is capped
// by what its answer keeps, not by the partial events it never sends:
// 20,000 one-character deltas (3.4 MB of partial events, 20 KB of answer)
// under a 1 MiB reply_bytes answer 200 as emit raw does; an answer over
// the cap is still a 502.
func TestUnaryCapCountsTheAnswer(t *testing.T) {
	const n = 20000
	deltas := func(each string, n int) func(int) []byte {
		return func(i int) []byte {
			switch {
			case i < n:
				return []byte(`data: {"type":"text-delta","id":"t","delta":"` + each + "\"}\n\n")
			case i == n:
				return []byte("data: {\"type\":\"finish\"}\n\n")
			}
			return nil
		}
	}
	small, _ := mappedSidecar(t, streamAgent(t, "text/event-stream", nil, nil, deltas("x", n)).URL, boundsConfig)
	for _, method := range []string{"adk_once", "text_once", "raw_once"} {
		resp, err := http.Post(small+core.RouteUnary, "application/json", strings.NewReader(`{"class_method":"`+method+`","input":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || method != "raw_once" && !strings.Contains(string(body), strings.Repeat("x", n)) {
			t.Errorf("%s of %d one-character deltas = %d %.200s, want 200 with the whole text", method, n, resp.StatusCode, body)
		}
	}
	big, _ := mappedSidecar(t, streamAgent(t, "text/event-stream", nil, nil, deltas(strings.Repeat("y", 1000), 2000)).URL, boundsConfig)
	for _, method := range []string{"adk_once", "text_once"} {
		resp, err := http.Post(big+core.RouteUnary, "application/json", strings.NewReader(`{"class_method":"`+method+`","input":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("%s of a 2 MB answer under a 1 MiB cap = %d, want 502", method, resp.StatusCode)
		}
	}
}

// TestUnaryOneJSONValue: a unary emit text whose agent answers one JSON
// object it cannot place answers that object, as emit raw does, not an
// array of it.
func TestUnaryOneJSONValue(t *testing.T) {
	agent := streamAgent(t, "application/json", nil, nil, func(i int) []byte {
		if i == 0 {
			return []byte(`{"answer": 42}`)
		}
		return nil
	})
	url, _ := mappedSidecar(t, agent.URL, boundsConfig)
	for _, method := range []string{"text_once", "raw_once"} {
		resp, err := http.Post(url+core.RouteUnary, "application/json", strings.NewReader(`{"class_method":"`+method+`","input":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := strings.TrimSpace(string(body)); got != `{"output":{"answer":42}}` {
			t.Errorf("%s = %d %s, want {\"output\":{\"answer\":42}}", method, resp.StatusCode, got)
		}
	}
}

// TestChatToolCallFlushedAtDone: an OpenAI chat stream whose tool_calls
// delta has no finish_reason after it, then [DONE]: the tool call still
// comes out, before the end.
func TestChatToolCallFlushedAtDone(t *testing.T) {
	src := `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":"}}]}}]}

data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}

data: [DONE]

`
	for _, d := range []config.Dialect{config.DialectOpenAIChat, config.DialectAuto} {
		got := mapFixture(t, d, config.EmitText, strings.NewReader(src), nil)
		want := []string{`{"tool_call":{"id":"call_1","name":"get_weather","args":{"city":"Paris"}}}`, `{"end":{}}`}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("dialect %s = %q, want %q", d, got, want)
		}
	}
}

// TestLinesFitTheCap: text of every kind JSON escapes differently comes
// out in lines of at most the cap, whole and in order, with emit text and
// emit adk; a cap too small for any text is record_too_large, never a
// longer line.
func TestLinesFitTheCap(t *testing.T) {
	text := strings.Repeat("ab\"\\\n\x01é\u2028😀<&>", 40)
	rec, _ := json.Marshal(map[string]string{"type": "text-delta", "delta": text})
	src := "data: " + string(rec) + "\n\ndata: {\"type\":\"finish\"}\n\n"
	for _, tt := range []struct {
		emit config.Emit
		max  int
	}{{config.EmitText, 30}, {config.EmitText, 64}, {config.EmitText, 1000}, {config.EmitADK, 420}, {config.EmitADK, 600}, {config.EmitADK, 5000}} {
		r := Agent{MaxRecord: tt.max}.Map(testCall(config.DialectVercelUI, tt.emit), newFixtureRecords(strings.NewReader(src), nil))
		var partial, complete strings.Builder
		n := 0
		for r.Next() {
			l := r.Record()
			n++
			if len(l) > tt.max || !json.Valid(l) {
				t.Errorf("emit %s max %d: line of %d bytes %s", tt.emit, tt.max, len(l), l)
			}
			var ev struct {
				Text    *string
				Partial bool
				Content struct{ Parts []struct{ Text string } }
			}
			json.Unmarshal(l, &ev)
			switch {
			case ev.Text != nil:
				partial.WriteString(*ev.Text)
			case ev.Partial:
				partial.WriteString(ev.Content.Parts[0].Text)
			case len(ev.Content.Parts) > 0:
				complete.WriteString(ev.Content.Parts[0].Text)
			}
		}
		if r.Err() != nil || partial.String() != text || tt.emit == config.EmitADK && complete.String() != text {
			t.Errorf("emit %s max %d: %d lines, error %v, text whole %v", tt.emit, tt.max, n, r.Err(), partial.String() == text)
		}
	}
	for _, e := range []config.Emit{config.EmitText, config.EmitADK} {
		r := Agent{MaxRecord: 8}.Map(testCall(config.DialectVercelUI, e), newFixtureRecords(strings.NewReader(src), nil))
		for r.Next() {
			t.Errorf("emit %s max 8: line %s", e, r.Record())
		}
		if !errors.Is(r.Err(), core.ErrRecordTooLarge) {
			t.Errorf("emit %s max 8: error %v, want ErrRecordTooLarge", e, r.Err())
		}
	}
}

// TestTextEventAsMarshal: the text events written by hand are byte for
// byte the ones encoding/json writes, in both key cases, for text of every
// kind JSON escapes.
func TestTextEventAsMarshal(t *testing.T) {
	texts := []string{"", "a", "Hello, world!", "\"\\/<>&", "\b\f\n\r\t\x00\x01\x1f\x7f", "é😀\u2028\u2029\ufeff",
		"\xff\xfe", "a\xc3", strings.Repeat("x", 5000)}
	for c := 0; c < 256; c++ {
		texts = append(texts, string([]byte{byte(c)}), "a"+string(rune(c))+"b")
	}
	for _, snake := range []bool{false, true} {
		a := newADKEmitter("agent <\"x\">", snake)
		a.max = 1 << 20
		a.newID = func() string { return "ev-1" }
		a.now = func() time.Time { return time.Unix(1754000000, 123456000) }
		for i, thought := range texts {
			text := texts[(i*7)%len(texts)]
			if thought == "" && text == "" {
				continue // never written: an event has a part
			}
			for _, partial := range []bool{false, true} {
				var parts []adkPart
				if thought != "" {
					parts = append(parts, adkPart{"text": thought, "thought": true})
				}
				if text != "" {
					parts = append(parts, adkPart{"text": text})
				}
				want := a.eventID("ev-1", "model", partial, parts...)
				if got := a.textEvent(partial, thought, text, escapedLen(thought)+escapedLen(text)); string(got) != string(want) {
					t.Fatalf("textEvent(%v, %q, %q) =\n%s\nwant\n%s", partial, thought, text, got, want)
				}
			}
		}
	}
}

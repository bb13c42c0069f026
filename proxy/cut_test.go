package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawAgent is an agent on a raw TCP socket: it reads each request and
// writes head+body byte for byte, then closes the connection, with a reset
// (RST, not FIN) when reset is set. Nothing about the reply's framing is
// left to a server library.
type rawAgent struct {
	ln    net.Listener
	wg    sync.WaitGroup
	reply string
	reset bool
}

func newRawAgent(t *testing.T, reply string, reset bool) *rawAgent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &rawAgent{ln: ln, reply: reply, reset: reset}
	a.wg.Go(a.serve)
	t.Cleanup(func() {
		ln.Close()
		a.wg.Wait()
	})
	return a
}

func (a *rawAgent) url() string { return "http://" + a.ln.Addr().String() }

func (a *rawAgent) serve() {
	for {
		c, err := a.ln.Accept()
		if err != nil {
			return
		}
		a.wg.Go(func() { a.answer(c) })
	}
}

func (a *rawAgent) answer(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	io.Copy(io.Discard, req.Body)
	io.WriteString(c, a.reply)
	if a.reset {
		// Let the reply be read first, then close with RST instead of FIN.
		time.Sleep(200 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0)
	}
}

// chunked frames body parts as HTTP/1.1 chunks, one chunk per part.
func chunked(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(p), p)
	}
	return b.String()
}

const (
	closeSSE    = "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
	closeLines  = "HTTP/1.0 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n"
	closeJSON   = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
	closeText   = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"
	closeSniff  = "HTTP/1.0 200 OK\r\n\r\n"
	chunkedSSE  = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunkedLine = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
)

// withLength is a reply head with Content-Length n and the given type.
func withLength(contentType string, n int) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", contentType, n)
}

// isAgentDisconnected reports whether line is a final error line for an
// agent that ended its reply inside a record, whatever the error line's
// exact shape.
func isAgentDisconnected(line string) bool {
	var v map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &v) != nil || v["error"] == nil {
		return false
	}
	return strings.Contains(strings.ToLower(line), "agent_disconnected")
}

// TestStreamCutInsideRecord: a record cut by the end of the agent's body
// never reaches the caller. After a clean end (a chunked terminator, a
// complete Content-Length) a last record whose lines are whole counts; a
// close-delimited body, a reset or a short body that ends inside a record,
// or a last line that is itself partial, ends the stream with one
// agent_disconnected line after the whole records.
func TestStreamCutInsideRecord(t *testing.T) {
	const cut = "" // the want marker for the agent_disconnected line
	sseBody := "data: {\"n\":1}\n\ndata: 2\n"
	tests := []struct {
		name  string
		reply string
		reset bool
		want  []string
	}{
		// SSE: a close-delimited body proves an event whole only by its
		// blank line.
		{"sse close cut in data", closeSSE + "data: {\"n\":1}\n\ndata: 12345", false, []string{`{"n":1}`, cut}},
		{"sse close no blank line", closeSSE + sseBody, false, []string{`{"n":1}`, cut}},
		{"sse close cut in field name", closeSSE + "data: 1\n\nda", false, []string{`1`, cut}},
		{"sse close whole", closeSSE + sseBody + "\n", false, []string{`{"n":1}`, `2`}},
		{"sse close trailing comment", closeSSE + sseBody + "\n: bye", false, []string{`{"n":1}`, `2`}},
		{"sse reset", closeSSE + "data: {\"n\":1}\n\ndata: 2\n", true, []string{`{"n":1}`, cut}},
		// A clean end: field lines that all ended count, a partial one not.
		{"sse chunked lines ended", chunkedSSE + chunked("data: {\"n\":1}\n\n", "data: 2\n") + "0\r\n\r\n", false, []string{`{"n":1}`, `2`}},
		{"sse chunked partial line", chunkedSSE + chunked("data: {\"n\":1}\n\n", "data: 12345") + "0\r\n\r\n", false, []string{`{"n":1}`, cut}},
		{"sse chunked cut", chunkedSSE + chunked("data: {\"n\":1}\n\n", "data: 2\n"), false, []string{`{"n":1}`, cut}},
		{"sse chunked cut in chunk", chunkedSSE + chunked("data: {\"n\":1}\n\n") + "20\r\ndata: 2\n", false, []string{`{"n":1}`, cut}},
		{"sse length complete", withLength("text/event-stream", len(sseBody)) + sseBody, false, []string{`{"n":1}`, `2`}},
		{"sse length short", withLength("text/event-stream", len(sseBody)+10) + sseBody, false, []string{`{"n":1}`, cut}},

		// ndjson: without its "\n", a last line counts only if it is
		// complete JSON, and after a close only one whose end shows (not
		// a number).
		{"ndjson close cut object", closeLines + "{\"n\":1}\n{\"n\":12345", false, []string{`{"n":1}`, cut}},
		{"ndjson close cut number", closeLines + "{\"n\":1}\n12345", false, []string{`{"n":1}`, cut}},
		{"ndjson close cut text", closeLines + "{\"n\":1}\nhello", false, []string{`{"n":1}`, cut}},
		{"ndjson close whole object", closeLines + "{\"n\":1}\n{\"n\":2}", false, []string{`{"n":1}`, `{"n":2}`}},
		{"ndjson close whole", closeLines + "{\"n\":1}\n12345\n", false, []string{`{"n":1}`, `12345`}},
		{"ndjson reset", closeLines + "{\"n\":1}\n{\"n\":2}\n", true, []string{`{"n":1}`, `{"n":2}`, cut}},
		{"ndjson chunked number", chunkedLine + chunked("{\"n\":1}\n", "12345") + "0\r\n\r\n", false, []string{`{"n":1}`, `12345`}},
		{"ndjson chunked partial", chunkedLine + chunked("{\"n\":1}\n", "{\"n\":12") + "0\r\n\r\n", false, []string{`{"n":1}`, cut}},
		{"ndjson chunked cut", chunkedLine + chunked("{\"n\":1}\n", "{\"n\":2}"), false, []string{`{"n":1}`, cut}},
		{"ndjson length complete", withLength("application/x-ndjson", 15) + "{\"n\":1}\n{\"n\":2}", false, []string{`{"n":1}`, `{"n":2}`}},
		{"ndjson length short", withLength("application/x-ndjson", 20) + "{\"n\":1}\n{\"n\":2}", false, []string{`{"n":1}`, cut}},

		// JSON values: only a number can be cut and still parse.
		{"json close cut number", closeJSON + "{\"n\":1} 12345", false, []string{`{"n":1}`, cut}},
		{"json close whole number", closeJSON + "{\"n\":1} 12345\n", false, []string{`{"n":1}`, `12345`}},
		{"json close cut array", closeJSON + "[1,2,3", false, []string{`1`, `2`, cut}},
		{"json length number", withLength("application/json", 13) + "{\"n\":1} 12345", false, []string{`{"n":1}`, `12345`}},

		// Text has no records to cut: what came goes out, and a body
		// that ended uncleanly still ends with the error line.
		{"text close", closeText + "hello", false, []string{`{"output":"hello"}`}},
		{"text length short", withLength("text/plain", 10) + "hello", false, []string{`{"output":"hello"}`, cut}},

		// No Content-Type: sniffed, the same rules.
		{"sniff close cut sse", closeSniff + "data: {\"n\":1}\n\ndata: 12345", false, []string{`{"n":1}`, cut}},
		{"sniff close cut number", closeSniff + "12345", false, []string{cut}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := newRawAgent(t, tt.reply, tt.reset)
			h := newHarness(t, agent.url(), oneMethodConfig)
			r := h.stream("stream_query", `{}`)
			if r.status != http.StatusOK {
				if len(tt.want) == 1 && tt.want[0] == cut && r.status == http.StatusBadGateway {
					return // cut before the first record: failed before the first byte
				}
				t.Fatalf("status = %d %q, want 200", r.status, r.body)
			}
			got := lines(t, r.body)
			wantCut := tt.want[len(tt.want)-1] == cut
			records := tt.want
			if wantCut {
				records = tt.want[:len(tt.want)-1]
			}
			switch {
			case wantCut && (len(got) != len(records)+1 || !isAgentDisconnected(got[len(got)-1])):
				t.Errorf("lines = %q, want %q then one agent_disconnected line", got, records)
			case !wantCut && !slices.Equal(got, records):
				t.Errorf("lines = %q, want %q and no error", got, records)
			case wantCut && !slices.Equal(got[:len(got)-1], records):
				t.Errorf("records = %q, want %q", got[:len(got)-1], records)
			}
		})
	}
}

// TestUnaryCutInsideRecord: a unary reply follows the same rules as a
// stream: a record cut by the end of the body fails the call with a 502
// (agent_disconnected) instead of going into the output.
func TestUnaryCutInsideRecord(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  string // the output; "" for a 502 agent_disconnected
	}{
		{"sse close cut", closeSSE + "data: {\"n\":1}\n\ndata: 12345", ""},
		{"sse close whole", closeSSE + "data: {\"n\":1}\n\ndata: 2\n\n", `[{"n":1},2]`},
		{"sse chunked lines ended", chunkedSSE + chunked("data: {\"n\":1}\n\n", "data: 2\n") + "0\r\n\r\n", `[{"n":1},2]`},
		{"sse chunked cut", chunkedSSE + chunked("data: {\"n\":1}\n\n", "data: 2\n"), ""},
		{"ndjson close cut", closeLines + "{\"n\":1}\n{\"n\":12345", ""},
		{"ndjson close whole object", closeLines + "{\"n\":1}\n{\"n\":2}", `[{"n":1},{"n":2}]`},
		{"ndjson length short", withLength("application/x-ndjson", 20) + "{\"n\":1}\n{\"n\":2}", ""},
		{"json close cut number", closeJSON + "12345", ""},
		{"json close number", closeJSON + "12345\n", `12345`},
		{"json close object", closeJSON + "{\"n\":1}", `{"n":1}`},
		{"json close cut object", closeJSON + "{\"n\":1", ""},
		{"json length number", withLength("application/json", 5) + "12345", `12345`},
		{"sniff close cut object", closeSniff + "{\"n\":1", ""},
		{"sniff close text", closeSniff + "hello", `"hello"`},
		{"text close", closeText + "hello", `"hello"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := newRawAgent(t, tt.reply, false)
			h := newHarness(t, agent.url(), oneMethodConfig)
			r := h.unary("query", `{}`)
			if tt.want != "" {
				var out struct{ Output json.RawMessage }
				if r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &out) != nil || string(out.Output) != tt.want {
					t.Errorf("reply = %d %s, want 200 with output %s", r.status, r.body, tt.want)
				}
				return
			}
			if r.status != http.StatusBadGateway {
				t.Errorf("reply = %d %s, want 502", r.status, r.body)
			}
			if outcome := callOutcome(t, h); !strings.EqualFold(outcome, "agent_disconnected") {
				t.Errorf("call outcome = %q, want agent_disconnected", outcome)
			}
		})
	}
}

// callOutcome is the outcome field of the harness's one call log line.
func callOutcome(t *testing.T, h *harness) string {
	t.Helper()
	entries := h.logs.FilterMessage("call").All()
	if len(entries) != 1 {
		t.Fatalf("%d call log lines, want 1", len(entries))
	}
	outcome, _ := entries[0].ContextMap()["outcome"].(string)
	return outcome
}

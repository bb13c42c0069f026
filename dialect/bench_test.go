package dialect

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/rawjson"
	"github.com/sidecar-dev/sidecar/upstream"
)

// benchStream is a long answer's token stream in one dialect, as its
// producer frames it: the records before the text, one record per token
// (%s: the token as a JSON string's inside, %d: its number), the records
// after.
type benchStream struct {
	dialect    config.Dialect
	event      string // the SSE event type of each token record, "" for none
	head, tail []string
	token      string
}

var benchStreams = []benchStream{
	{dialect: config.DialectOpenAIChat,
		head:  []string{`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764547200,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`},
		token: `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764547200,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"%s"},"logprobs":null,"finish_reason":null}]}`,
		tail:  []string{`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764547200,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`}},
	{dialect: config.DialectOpenAIResponses, event: "response.output_text.delta",
		head:  []string{`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`},
		token: `{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"%s","logprobs":[]}`,
		tail:  []string{`{"type":"response.completed","sequence_number":99999,"response":{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":9,"output_tokens":3,"total_tokens":12}}}`}},
	{dialect: config.DialectOpenAIAgents,
		head:  []string{`{"data":{"type":"response_started"},"type":"raw_model_stream_event"}`},
		token: `{"data":{"type":"output_text_delta","delta":"%s"},"type":"raw_model_stream_event"}`,
		tail:  []string{`{"data":{"type":"response_done","response":{"id":"resp_1","usage":{"requests":1,"inputTokens":10,"outputTokens":5,"totalTokens":15}}},"type":"raw_model_stream_event"}`}},
	{dialect: config.DialectVercelUI,
		head:  []string{`{"type":"start"}`, `{"type":"start-step"}`, `{"type":"text-start","id":"t1"}`},
		token: `{"type":"text-delta","id":"t1","delta":"%s"}`,
		tail:  []string{`{"type":"text-end","id":"t1"}`, `{"type":"finish-step"}`, `{"type":"finish","finishReason":"stop"}`}},
	{dialect: config.DialectAGUI,
		head:  []string{`{"type":"RUN_STARTED","threadId":"thread-1","runId":"run-1"}`, `{"type":"TEXT_MESSAGE_START","messageId":"msg-1","role":"assistant"}`},
		token: `{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-1","delta":"%s"}`,
		tail:  []string{`{"type":"TEXT_MESSAGE_END","messageId":"msg-1"}`, `{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1"}`}},
	{dialect: config.DialectA2A,
		head:  []string{`{"id":1,"jsonrpc":"2.0","result":{"kind":"task","id":"7fed1689-88c1-457e-b75a-67980dce0803","contextId":"8c03affe-08e0-4698-94db-999b57a3972f","status":{"state":"submitted","timestamp":"2026-12-01T02:25:55.394Z"}}}`},
		token: `{"id":1,"jsonrpc":"2.0","result":{"kind":"artifact-update","taskId":"7fed1689-88c1-457e-b75a-67980dce0803","contextId":"8c03affe-08e0-4698-94db-999b57a3972f","artifact":{"artifactId":"answer","parts":[{"kind":"text","text":"%s"}],"name":"answer"},"append":true,"lastChunk":false}}`,
		tail:  []string{`{"id":1,"jsonrpc":"2.0","result":{"kind":"status-update","taskId":"7fed1689-88c1-457e-b75a-67980dce0803","contextId":"8c03affe-08e0-4698-94db-999b57a3972f","status":{"state":"completed","timestamp":"2026-12-01T02:25:55.415Z"},"final":true}}`}},
	{dialect: config.DialectLangGraph, event: "messages",
		token: `[{"content":"%s","tool_calls":[],"invalid_tool_calls":[],"tool_call_chunks":[],"additional_kwargs":{},"response_metadata":{},"id":"run-01a22f6c-492f-703f-983a-e187a818a655","type":"ai"},{"tags":[],"ls_integration":"langchain_chat_model","langgraph_step":1,"langgraph_node":"agent","langgraph_triggers":["branch:to:agent"],"langgraph_path":["__pregel_pull","agent"],"langgraph_checkpoint_ns":"agent:a77284c2-5b45-5eb2-a412-ce676b76f161","checkpoint_ns":"agent:a77284c2-5b45-5eb2-a412-ce676b76f161","ls_model_type":"chat","ls_provider":"ChatOpenAI","versions":{"@langchain/core":"1.4.0"}}]`},
	{dialect: config.DialectADK,
		token: `{"content":{"parts":[{"text":"%s"}],"role":"model"},"partial":true,"invocationId":"e-1","author":"root_agent","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{}},"id":"ev-%d","timestamp":1754000000.1}`,
		tail:  []string{`{"content":{"parts":[{"text":"The whole answer."}],"role":"model"},"invocationId":"e-1","author":"root_agent","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{}},"id":"ev-0","timestamp":1754000000.6}`}},
}

// benchTokens are the tokens of the answer, in turn: words, and now and
// then a newline or a quote, which a JSON string escapes.
var benchTokens = []string{"The", " weather", " in", " Paris", " is", " sunny", ",", " with", " a", ` \"light\"`, " breeze", ".\\n", "\\n", "Tomorrow", ":", " 21", "°C", "."}

// benchTokensPerStream is how many token records one stream carries.
const benchTokensPerStream = 1000

// body is the SSE reply of s with n token records.
func (s benchStream) body(n int) []byte {
	var b bytes.Buffer
	frame := func(event, data string) {
		if event != "" {
			fmt.Fprintf(&b, "event: %s\n", event)
		}
		fmt.Fprintf(&b, "data: %s\n\n", data)
	}
	for _, r := range s.head {
		frame("", r)
	}
	for i := 0; i < n; i++ {
		tok := benchTokens[i%len(benchTokens)]
		rec := strings.Replace(s.token, "%s", tok, 1)
		rec = strings.Replace(rec, "%d", fmt.Sprint(i+10), 1)
		frame(s.event, rec)
	}
	for _, r := range s.tail {
		frame("", r)
	}
	if s.dialect == config.DialectOpenAIChat || s.dialect == config.DialectVercelUI {
		b.WriteString("data: [DONE]\n\n")
	}
	return b.Bytes()
}

// BenchmarkDialect streams a long answer of benchTokensPerStream token
// records through the mapping stage, per dialect and emit mode, as the
// sidecar does: the reply deframed by upstream's SSE deframer, then mapped
// (emit raw: not mapped, the deframer alone; floor: floorRecords, the
// least a mapping stage can cost). It reports per record of the reply:
// records/s and ns/record (wall time), cpu-ns/record (the process's CPU
// time), allocs/record and B/record. `go test -run '^$' -bench Dialect
// ./dialect/`.
func BenchmarkDialect(b *testing.B) {
	for _, s := range benchStreams {
		body := s.body(benchTokensPerStream)
		records := len(s.head) + benchTokensPerStream + len(s.tail)
		for _, emit := range []config.Emit{config.EmitRaw, config.EmitText, config.EmitADK, emitFloor} {
			b.Run(string(s.dialect)+"/"+string(emit), func(b *testing.B) {
				benchRecords(b, records, func() core.Records {
					recs := upstream.NewStream(upstream.FormatSSE, bytes.NewReader(body), 0)
					switch emit {
					case config.EmitRaw:
						return recs
					case emitFloor:
						return &floorRecords{Records: recs}
					}
					c := core.Call{Method: &config.Method{Dialect: s.dialect, Emit: emit}}
					return Agent{Author: "root_agent"}.Map(c, &fixtureRecords{recs, http.Header{"Content-Type": {"text/event-stream"}}})
				})
			})
		}
	}
	// A plain text reply (dialect auto, placed as text): one record per
	// read of the agent's body, a token each.
	var body strings.Builder
	for i := 0; i < benchTokensPerStream; i++ {
		body.WriteString(strings.NewReplacer(`\"`, `"`, `\n`, "\n").Replace(benchTokens[i%len(benchTokens)]))
	}
	h := http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
	for _, emit := range []config.Emit{config.EmitRaw, config.EmitText, config.EmitADK, emitFloor} {
		b.Run("text/"+string(emit), func(b *testing.B) {
			benchRecords(b, benchTokensPerStream, func() core.Records {
				r := &tokenReader{s: body.String()}
				recs := upstream.NewStream(upstream.FormatFor(config.ReplyAuto, h.Get("Content-Type")), r, 0)
				switch emit {
				case config.EmitRaw:
					return recs
				case emitFloor:
					return &floorRecords{Records: recs}
				}
				c := core.Call{Method: &config.Method{Dialect: config.DialectAuto, Emit: emit}}
				return Agent{Author: "root_agent"}.Map(c, &fixtureRecords{recs, h})
			})
		})
	}
}

// emitFloor is the floor of any mapping stage that checks what it reads
// and writes lines of its own (floorRecords).
const emitFloor config.Emit = "floor"

// floorRecords is the least a mapping stage can do per record and still
// check it and write a line of its own: one validating pass over the
// record (rawjson.AppendCompact into a reused buffer) and one new line
// the size of the record.
type floorRecords struct {
	core.Records
	scratch, line []byte
}

func (f *floorRecords) Next() bool {
	if !f.Records.Next() {
		return false
	}
	var ok bool
	rec := f.Records.Record()
	if f.scratch, ok = rawjson.AppendCompact(f.scratch[:0], rec); !ok {
		return false
	}
	f.line = append(make([]byte, 0, len(rec)), rec...)
	return true
}

func (f *floorRecords) Record() []byte { return f.line }

// benchRecords reads the stream open makes b.N times and reports the cost
// per record of its reply (records of them).
func benchRecords(b *testing.B, records int, open func() core.Records) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu := cpuTime()
	start := time.Now()
	lines := 0
	for i := 0; i < b.N; i++ {
		r := open()
		for r.Next() {
			lines++
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	elapsed := time.Since(start)
	cpu = cpuTime() - cpu
	runtime.ReadMemStats(&after)
	n := float64(b.N * records)
	b.ReportMetric(n/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/record")
	// The process's CPU time (GC included) per record: what a record costs
	// on a machine whose other load would stretch the wall time.
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/record")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/record")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/record")
	b.ReportMetric(float64(lines)/n, "lines/record")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tokenReader gives a text one token at a time: each read a token (the
// tokens told apart by the spaces before words), as an agent streaming
// text flushes them.
type tokenReader struct {
	s string
	i int
}

func (t *tokenReader) Read(p []byte) (int, error) {
	if t.i >= len(t.s) {
		return 0, io.EOF
	}
	end := strings.IndexAny(t.s[t.i+1:], " .,:\n")
	if end < 0 {
		end = len(t.s) - t.i - 1
	}
	n := copy(p, t.s[t.i:t.i+1+end])
	t.i += n
	return n, nil
}

package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// toolResult is a tools/call result.
type toolResult struct {
	Content []struct {
		Type, Text string
	}
	StructuredContent json.RawMessage
	IsError           bool
	ResultType        string
}

func resultOf(t *testing.T, r rpcReply) toolResult {
	t.Helper()
	var res toolResult
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("%s / %+v is no tools/call result with one text content", r.Result, r.Error)
	}
	return res
}

// TestStreamProgress: a streaming tool answers on SSE: with a progress
// token (a number here), one notifications/progress per text record of
// the agent's OpenAI stream, read through the dialect stage though the
// method emits raw, progress counting up, then the result with the whole
// text; without a token, the result alone.
func TestStreamProgress(t *testing.T) {
	s := serve(t, "", Options{})
	params := `"name":"story","arguments":{"message":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":42}`
	resp, b := post(t, s.url, `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{`+params+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "story")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("= %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	evs := events(t, b)
	var got []string
	for i, e := range evs[:len(evs)-1] {
		var p struct {
			ProgressToken json.RawMessage
			Progress      int
			Message       string
		}
		json.Unmarshal(e.Params, &p)
		if e.Method != "notifications/progress" || e.ID != nil || string(p.ProgressToken) != "42" || p.Progress != i+1 {
			t.Errorf("event %d = %+v %s, want notifications/progress of token 42, progress %d", i, e, e.Params, i+1)
		}
		got = append(got, p.Message)
	}
	if strings.Join(got, "|") != "once |upon |a |time |x " {
		t.Errorf("progress messages = %q", got)
	}
	last := evs[len(evs)-1]
	if res := resultOf(t, last); string(last.ID) != `"s"` || res.Content[0].Text != "once upon a time x " || res.IsError || res.ResultType != "complete" {
		t.Errorf("result = %s", last.Result)
	}

	resp, b = modern(t, s.url, "tools/call", `"name":"story","arguments":{"message":"x"}`, "story")
	evs = events(t, b)
	if len(evs) != 1 || resultOf(t, evs[0]).Content[0].Text != "once upon a time x " {
		t.Errorf("without a progress token = %d %q, want the result alone", resp.StatusCode, b)
	}
}

// TestStreamTextCapped: a streamed answer's text far past
// limits.reply_bytes (200 pieces of 100 bytes over 1 KiB) keeps no more
// than the cap: the pieces until then go out as progress, and the result
// is an isError saying what happened: the text exceeds the limit, the
// result keeps none, and what the progress carried (10 pieces, 1,000
// bytes); without a progress token, that none was sent; with a first piece
// alone over the cap, that no progress carried any. The agent's call ends.
func TestStreamTextCapped(t *testing.T) {
	s := serve(t, "limits: {reply_bytes: 1KiB}\n", Options{})
	call := func(args, meta string) (int, []rpcReply) {
		params := `"name":"long","arguments":` + args + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}` + meta + `}`
		resp, b := post(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+params+`}}`,
			"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "long")
		if len(b) > 4<<10 {
			t.Errorf("answer of %d bytes: more than the cap's pieces went out", len(b))
		}
		return resp.StatusCode, events(t, b)
	}
	const over = "the answer's text exceeds limits.reply_bytes (1024 bytes), so the agent's call was ended and this result keeps none of it; "
	tests := []struct {
		name, args, meta string
		events           int
		says             string
	}{
		{"progress", `{"n":200,"size":100}`, `,"progressToken":"p"`, 11, over + "the 10 progress notifications before this result carried its first 1000 bytes"},
		{"no progress", `{"n":200,"size":100}`, ``, 1, over + "none of it was sent (a request with _meta.progressToken gets the text"},
		{"first piece over", `{"n":2,"size":2000}`, `,"progressToken":"p"`, 1, over + "no progress notification carried any of it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, evs := call(tt.args, tt.meta)
			res := resultOf(t, evs[len(evs)-1])
			if status != 200 || len(evs) != tt.events || !res.IsError || !strings.HasPrefix(res.Content[0].Text, tt.says) {
				t.Errorf("= %d, %d events, result %+v: want %d events, then an isError saying %q", status, len(evs), res, tt.events, tt.says)
			}
		})
	}
}

// TestUnaryOutput: a unary tool's output is the result's text: a JSON
// string its value, an object its JSON and structuredContent too; an
// agent's failure is a result with isError, 200.
func TestUnaryOutput(t *testing.T) {
	s := serve(t, "", Options{})
	resp, b := modern(t, s.url, "tools/call", `"name":"ask","arguments":{"message":"a b"}`, "ask")
	res := resultOf(t, decode(t, b))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || res.Content[0].Text != `{"answer":"you asked: a b","words":2}` ||
		string(res.StructuredContent) != `{"answer":"you asked: a b","words":2}` || res.IsError {
		t.Errorf("ask = %d %s", resp.StatusCode, b)
	}
	resp, b = modern(t, s.url, "tools/call", `"name":"fail","arguments":{}`, "fail")
	if res := resultOf(t, decode(t, b)); resp.StatusCode != 200 || !res.IsError || res.Content[0].Text != "the model is overloaded" {
		t.Errorf("fail = %d %s, want 200, isError with the agent's message", resp.StatusCode, b)
	}
}

// TestMethodsListed: protocols.mcp.methods picks the tools and their
// order; the path moves the endpoint.
func TestMethodsListed(t *testing.T) {
	s := serve(t, "", Options{Methods: []string{"story", "ask"}, Path: "/tools"})
	resp, b := modern(t, s.url, "tools/list", "", "")
	var list struct{ Tools []struct{ Name string } }
	json.Unmarshal(decode(t, b).Result, &list)
	if resp.StatusCode != 200 || len(list.Tools) != 2 || list.Tools[0].Name != "story" || list.Tools[1].Name != "ask" {
		t.Errorf("tools/list = %d %s, want story and ask", resp.StatusCode, b)
	}
	if resp, b := modern(t, s.base+DefaultPath, "tools/list", "", ""); resp.StatusCode != 404 {
		t.Errorf("the default path when another is set = %d %s, want 404", resp.StatusCode, b)
	}
	if resp, b := modern(t, s.url, "tools/call", `"name":"fail","arguments":{}`, "fail"); resp.StatusCode != 200 || !strings.Contains(string(b), `Unknown tool \"fail\"`) {
		t.Errorf("a method not listed = %d %s, want an unknown tool", resp.StatusCode, b)
	}
}

// TestStreamFails: a streaming tool whose agent fails before its first
// record is a result with isError and the agent's message (JSON, 200), as
// a unary one; one that fails after it ends its SSE response with that
// result, after the progress it sent.
func TestStreamFails(t *testing.T) {
	s := serveMap(t, testMap+"  fail_stream: {mode: stream, call: POST /fail, reply: sse}\n", startAgent(t), Options{})
	resp, b := modern(t, s.url, "tools/call", `"name":"fail_stream","arguments":{}`, "fail_stream")
	if res := resultOf(t, decode(t, b)); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !res.IsError || res.Content[0].Text != "the model is overloaded" {
		t.Errorf("a stream failing before its first record = %d %s %s, want 200 JSON, isError with the agent's message", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	params := `"name":"fail_late","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}`
	resp, b = post(t, s.url, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{`+params+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "fail_late")
	evs := events(t, b)
	if len(evs) != 2 || evs[0].Method != "notifications/progress" || string(evs[1].ID) != "9" {
		t.Fatalf("a stream failing after its first record = %d %q, want its progress, then the result", resp.StatusCode, b)
	}
	if res := resultOf(t, evs[1]); !res.IsError || res.Content[0].Text != "the model is overloaded" || res.ResultType != "complete" {
		t.Errorf("its result = %s, want isError with the agent's message", evs[1].Result)
	}
}

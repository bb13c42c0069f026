package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// partsMap serves testdata/mcp/agent.py's part routes as tools.
const partsMap = `
upstream: {url: AGENT}
methods:
  records: {mode: stream, call: POST /records, reply: ndjson}
  record: {call: POST /record}
  whole: {call: POST /records, emit: text}
  big: {mode: stream, call: POST /big, reply: ndjson}
  tiny: {mode: stream, call: POST /tiny, reply: ndjson}
`

// The parts the tests send: real bytes of each type, as base64.
var (
	pngB64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	wavB64 = base64.StdEncoding.EncodeToString([]byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"))
	pdfB64 = base64.StdEncoding.EncodeToString([]byte("%PDF-1.4\n%%EOF\n"))
)

// content is one content of a tools/call result, every member MCP gives
// any of them.
type content struct {
	Type, Text, Data, MimeType, URI, Name string
	Resource                              *struct{ URI, MimeType, Blob, Text string }
}

// partsResult is a tools/call result with any content.
type partsResult struct {
	Content           []content
	StructuredContent json.RawMessage
	IsError           bool
}

func partsOf(t *testing.T, r rpcReply) partsResult {
	t.Helper()
	var res partsResult
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
		t.Fatalf("%s / %+v is no tools/call result", r.Result, r.Error)
	}
	return res
}

// callRecords calls the records tool with records, a 2026-07-28 request,
// with a progress token when progress is set, and returns the progress
// messages and the result.
func callRecords(t *testing.T, url string, progress bool, records ...string) ([]string, partsResult) {
	t.Helper()
	meta := modernMeta
	if progress {
		meta = strings.TrimSuffix(modernMeta, "}") + `,"progressToken":"p"}`
	}
	params := `"name":"records","arguments":{"records":[` + strings.Join(records, ",") + `]},` + meta
	resp, b := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+params+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "records")
	if resp.StatusCode != 200 {
		t.Fatalf("records = %d %s", resp.StatusCode, b)
	}
	var evs []rpcReply
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		evs = events(t, b)
	} else {
		evs = []rpcReply{decode(t, b)}
	}
	var messages []string
	for _, e := range evs[:len(evs)-1] {
		var p struct{ Message string }
		json.Unmarshal(e.Params, &p)
		messages = append(messages, p.Message)
	}
	return messages, partsOf(t, evs[len(evs)-1])
}

// TestPartsOut: the agent's parts reach the caller in the result's
// content, in order with its text: an image an ImageContent, audio an
// AudioContent, any other inline type an embedded resource (part:<n>,
// the display name after it), a file a resource link, data a text of its
// JSON and, the answer's one data part, structuredContent; the text
// around them text contents, consecutive text one. The base64 is the
// agent's, as sent. Progress carries the text alone. A unary tool's
// output of one part record is that part; with emit: text, its whole
// answer's text, then its parts.
func TestPartsOut(t *testing.T) {
	s := serveMap(t, partsMap, startAgent(t), Options{})
	records := []string{`"Here is "`, `{"text":"the chart:"}`,
		`{"inline_data":{"mime_type":"image/png","data":"` + pngB64 + `"}}`,
		`{"inlineData":{"mimeType":"audio/wav","data":"` + wavB64 + `"}}`,
		`"and the report "`,
		`{"inline_data":{"mime_type":"application/pdf","display_name":"the report.pdf","data":"` + pdfB64 + `"}}`,
		`{"file_data":{"file_uri":"https://example.com/files/slides.pdf","mime_type":"application/pdf"}}`,
		`{"data":{"total":12.5}}`, `"done."`}
	want := []content{{Type: "text", Text: "Here is the chart:"},
		{Type: "image", Data: pngB64, MimeType: "image/png"},
		{Type: "audio", Data: wavB64, MimeType: "audio/wav"},
		{Type: "text", Text: "and the report "},
		{Type: "resource"},
		{Type: "resource_link", URI: "https://example.com/files/slides.pdf", Name: "slides.pdf", MimeType: "application/pdf"},
		{Type: "text", Text: `{"total":12.5}`},
		{Type: "text", Text: "done."}}
	for _, progress := range []bool{true, false} {
		t.Run(fmt.Sprint("progress ", progress), func(t *testing.T) {
			messages, res := callRecords(t, s.url, progress, records...)
			if progress && strings.Join(messages, "|") != "Here is |the chart:|and the report |done." {
				t.Errorf("progress = %q, want the text alone", messages)
			}
			if res.IsError || len(res.Content) != len(want) || string(res.StructuredContent) != `{"total":12.5}` {
				t.Fatalf("result = %+v, want %d contents and structuredContent", res, len(want))
			}
			for i, c := range res.Content {
				if c.Type == "resource" {
					r := c.Resource
					if r == nil || r.URI != "part:3/the%20report.pdf" || r.MimeType != "application/pdf" || r.Blob != pdfB64 {
						t.Errorf("content %d = %+v %+v, want the PDF as an embedded resource", i, c, r)
					}
					continue
				}
				if c != want[i] {
					t.Errorf("content %d = %+v, want %+v", i, c, want[i])
				}
			}
		})
	}

	// Two data parts: each a text of its JSON, and no structuredContent.
	_, res := callRecords(t, s.url, false, `{"data":{"a":1}}`, `{"data":[2]}`)
	if len(res.Content) != 2 || res.Content[0].Text != `{"a":1}` || res.Content[1].Text != `[2]` || res.StructuredContent != nil {
		t.Errorf("two data parts = %+v", res)
	}
	// Parts alone: no empty text content.
	_, res = callRecords(t, s.url, false, `{"inline_data":{"mime_type":"image/png","data":"`+pngB64+`"}}`)
	if len(res.Content) != 1 || res.Content[0].Type != "image" {
		t.Errorf("an image alone = %+v, want its one content", res)
	}

	// A unary tool emitting text (an OpenAI chat stream, mapped): its
	// whole answer's text, then its parts.
	chunk := func(text string) string {
		return `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + text + `"}}]}`
	}
	resp, b := modern(t, s.url, "tools/call", `"name":"whole","arguments":{"records":[`+chunk("Here ")+`,`+records[2]+`,`+chunk("it is.")+`,`+records[7]+`]}`, "whole")
	res = partsOf(t, decode(t, b))
	if resp.StatusCode != 200 || len(res.Content) != 3 || res.Content[0] != (content{Type: "text", Text: "Here it is."}) ||
		res.Content[1] != want[1] || res.Content[2] != want[6] || string(res.StructuredContent) != `{"total":12.5}` {
		t.Errorf("a unary whole with parts = %d %s", resp.StatusCode, b)
	}

	// A unary tool whose output is one part record.
	resp, b = modern(t, s.url, "tools/call", `"name":"record","arguments":{"record":{"inline_data":{"mime_type":"image/png","data":"`+pngB64+`"}}}`, "record")
	if res := partsOf(t, decode(t, b)); resp.StatusCode != 200 || len(res.Content) != 1 || res.Content[0] != (content{Type: "image", Data: pngB64, MimeType: "image/png"}) {
		t.Errorf("a unary part = %d %s", resp.StatusCode, b)
	}
}

// TestPartsRefused: a part the agent sends malformed ends the call with
// an isError result saying why (BAD_REPLY): base64 that is not base64, a
// media type with a CR and LF; one over limits.parts.bytes, or past
// limits.parts.total with those before it, with PART_TOO_LARGE. Ten
// thousand tiny parts are bounded by limits.reply_bytes as text is: the
// result says so, and keeps none.
func TestPartsRefused(t *testing.T) {
	s := serveMap(t, "limits: {parts: {bytes: 1KiB, total: 2KiB}, reply_bytes: 64KiB}\n"+partsMap, startAgent(t), Options{})
	zeros := func(n int) string {
		return `{"inline_data":{"mime_type":"application/octet-stream","data":"` + base64.StdEncoding.EncodeToString(make([]byte, n)) + `"}}`
	}
	tests := []struct {
		name    string
		records []string
		says    string
	}{
		{"not base64", []string{`"a"`, `{"inline_data":{"mime_type":"image/png","data":"iVBO!!!"}}`}, "part: inline data is not base64"},
		{"a CR LF in the type", []string{`{"inline_data":{"mime_type":"image/png\r\nX-Y: z","data":"` + pngB64 + `"}}`}, "has a control character"},
		{"a PNG named a JPEG", []string{`{"inline_data":{"mime_type":"image/jpeg","data":"` + pngB64 + `"}}`}, "the bytes are image/png, not image/jpeg"},
		{"over limits.parts.bytes", []string{zeros(2000)}, "limits.parts.bytes (1024)"},
		{"past limits.parts.total", []string{zeros(1000), zeros(1000), zeros(1000)}, "limits.parts.total (2048)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, res := callRecords(t, s.url, false, tt.records...)
			if !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, tt.says) {
				t.Errorf("= %+v, want an isError saying %q", res, tt.says)
			}
		})
	}

	resp, b := modern(t, s.url, "tools/call", `"name":"tiny","arguments":{"n":10000}`, "tiny")
	evs := events(t, b)
	res := partsOf(t, evs[len(evs)-1])
	if resp.StatusCode != 200 || len(b) > 4<<10 || !res.IsError || !strings.HasPrefix(res.Content[0].Text, "the answer, its text and its parts, exceeds limits.reply_bytes (65536 bytes)") {
		t.Errorf("10,000 tiny parts = %d, %d bytes %.300s, want an isError of reply_bytes", resp.StatusCode, len(b), b)
	}
	resp, b = modern(t, s.url, "tools/call", `"name":"record","arguments":{"record":{"inline_data":{"mime_type":"image/png","data":"`+base64.StdEncoding.EncodeToString(make([]byte, 2000))+`"}}}`, "record")
	if res := partsOf(t, decode(t, b)); resp.StatusCode != 200 || !res.IsError || !strings.Contains(res.Content[0].Text, "limits.parts.bytes") {
		t.Errorf("a unary part over the cap = %d %s", resp.StatusCode, b)
	}
}

package main

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// testADKParts: a caller's parts, in the one input shape, reach the
// TypeScript ADK api server as parts of newMessage (inlineData, fileData,
// a data part as its JSON text), the base64 as sent; the agent's inline
// images come back in its ADK events and, through the adk dialect (emit
// text), as part records. A malformed part is refused with 400, one over
// limits.parts.bytes with 413, before the run starts.
func testADKParts(t *testing.T, url string) {
	const dot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	base := startSidecar(t, "upstream: {url: "+url+", ready: {path: /list-apps}}\npreset: adk\nadk: {app: picture}\n"+
		"limits: {parts: {bytes: 1024}}\nmethods:\n  chat: {handler: adk.stream_query, emit: text}\n")
	input := `{"user_id":"u1","message":"draw","parts":[` +
		`{"inline_data":{"mime_type":"image/png","data":"` + dot + `"}},` +
		`{"file_data":{"mime_type":"application/pdf","file_uri":"https://example.com/a.pdf"}},` +
		`{"data":{"total":12.5}}]}`
	const told = "text; image/png inline 96; file application/pdf https://example.com/a.pdf; text"

	// The ADK events as the preset passes them on.
	var inline []string
	var text string
	for _, l := range streamCall(t, base, "stream_query", input) {
		var e event
		json.Unmarshal([]byte(l), &e)
		for _, p := range e.Content.Parts {
			var d struct{ MimeType, Data, DisplayName string }
			if json.Unmarshal(p["inlineData"], &d) == nil && d.Data != "" {
				inline = append(inline, d.MimeType+" "+d.DisplayName+" "+d.Data)
			}
			json.Unmarshal(p["text"], &text)
		}
	}
	if want := []string{"image/png  " + dot, "image/png dot.png " + dot}; text != told || strings.Join(inline, "\n") != strings.Join(want, "\n") {
		t.Errorf("stream_query: text %q, inline parts %q;\nwant %q, %q", text, inline, told, want)
	}

	// Mapped by the adk dialect: part records in order with the text.
	got := streamCall(t, base, "chat", input)
	want := []string{`{"text":"` + told + `"}`,
		`{"inline_data":{"mime_type":"image/png","data":"` + dot + `"}}`,
		`{"inline_data":{"mime_type":"image/png","display_name":"dot.png","data":"` + dot + `"}}`}
	if len(got) != 4 || strings.Join(got[:3], "\n") != strings.Join(want, "\n") || !strings.HasPrefix(got[3], `{"end":`) {
		t.Errorf("chat =\n%s\nwant\n%s\nand the end", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	big := base64.StdEncoding.EncodeToString(make([]byte, 2048))
	for _, tt := range []struct {
		parts  string
		status int
		says   string
	}{
		{`[{"inline_data":{"mime_type":"image/png","data":"%%%"}}]`, 400, "parts[0]"},
		{`[{"file_data":{"file_uri":"data:image/png;base64,AAAA"}}]`, 400, "send the bytes as inline_data"},
		{`[{"inline_data":{"mime_type":"application/octet-stream","data":"` + big + `"}}]`, 413, "limits.parts.bytes"},
	} {
		r := post(t, base+"/api/stream_reasoning_engine", `{"class_method":"stream_query","input":{"user_id":"u1","message":"hi","parts":`+tt.parts+`}}`)
		if r.status != tt.status || !strings.Contains(r.body, tt.says) {
			t.Errorf("stream_query with parts %.60s = %d %s, want %d saying %q", tt.parts, r.status, r.body, tt.status, tt.says)
		}
	}
}

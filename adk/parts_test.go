package adk

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestWithParts: a caller's parts follow the message's own in
// newMessage, camelCase as ADK's JSON spells them, the base64 as sent
// (made standard when it was URL-safe and unpadded), a data part as its
// JSON text; a message Content keeps its role and parts. A malformed
// part, or a list that is not one, is 400 naming it, one over
// limits.parts (one part, or all of them) 413.
func TestWithParts(t *testing.T) {
	const dot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	urlSafe := strings.NewReplacer("+", "-", "/", "_", "=", "").Replace(dot)
	text, _ := content(json.RawMessage(`"What is this?"`), "message")
	got, err := withParts(text, json.RawMessage(`[{"inline_data":{"mime_type":"image/png","data":"`+dot+`","display_name":"a \"b\".png"}},`+
		`{"inlineData":{"mimeType":"image/png","data":"`+urlSafe+`"}},`+
		`{"file_data":{"file_uri":"gs://b/a.pdf","mime_type":"application/pdf"}},{"data":{"total":12.5}}]`), config.DefaultParts)
	want := `{"parts":[{"text":"What is this?"},` +
		`{"inlineData":{"mimeType":"image/png","data":"` + dot + `","displayName":"a \"b\".png"}},` +
		`{"inlineData":{"mimeType":"image/png","data":"` + dot + `"}},` +
		`{"fileData":{"fileUri":"gs://b/a.pdf","mimeType":"application/pdf"}},{"text":"{\"total\":12.5}"}],"role":"user"}`
	if err != nil || string(got) != want {
		t.Errorf("withParts =\n%s, %v\nwant\n%s", got, err, want)
	}
	content, _ := content(json.RawMessage(`{"role":"user","parts":[{"text":"hi"}]}`), "message")
	if got, err := withParts(content, nil, config.DefaultParts); err != nil || string(got) != string(content) {
		t.Errorf("withParts without parts = %s, %v; want the message as it was", got, err)
	}

	oct := func(n int) string {
		return `{"inline_data":{"mime_type":"application/octet-stream","data":"` + base64.StdEncoding.EncodeToString(make([]byte, n)) + `"}}`
	}
	lim := config.Parts{Bytes: 10, Total: 25}
	for _, tt := range []struct {
		parts  string
		status int
		says   string
	}{
		{`{"inline_data":{}}`, 400, "input.parts: must be a list"},
		{`[{"inline_data":{"mime_type":"image/png","data":"%%%"}}]`, 400, "input.parts[0]: inline data is not base64"},
		{`[{"text":"hi"}]`, 400, "input.parts[0]"},
		{`[` + oct(11) + `]`, 413, "input.parts[0]: a part of 11 bytes is more than limits.parts.bytes (10)"},
		{`[` + oct(10) + `,` + oct(10) + `,` + oct(10) + `]`, 413, "input.parts[2]: the call's parts are 30 bytes"},
	} {
		_, err := withParts(text, json.RawMessage(tt.parts), lim)
		if f := core.FailureOf(err); err == nil || f.Status != tt.status || !strings.Contains(f.Message, tt.says) {
			t.Errorf("withParts(%.50s) = %v (%d), want %d saying %q", tt.parts, err, f.Status, tt.status, tt.says)
		}
	}
}

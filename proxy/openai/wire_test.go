package openai

import (
	"encoding/json"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

var fuzzSeeds = []string{
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"a\"b"},{"type":"text","text":"\u2028"}]}]}`,
	`{"model":"m","input":"hi"}`,
	`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":null}]}`,
	`{"model":"m","messages":[{"role":"user","content":[]}]}`,
	`{"model":"m","previous_response_id":"resp_1","input":[{"role":"assistant","content":null},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"o"}]},{"role":"user","content":"u"}]}`,
	`{"model":"m","previous_response_id":1,"input":"x"}`,
	`[]`, `null`, `"x"`, `{"model":1}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},` +
		`{"type":"input_audio","input_audio":{"data":"AAAA","format":"mp3"}},{"type":"file","file":{"file_data":"AAEC","filename":"a.bin"}}]}]}`,
	`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png"},{"type":"input_file","file_url":"https://example.com/r.pdf"},` +
		`{"type":"input_file","file_id":"f"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,iVBORw0KGgo="}}]}]}`,
}

// FuzzRequest: readRequest never panics, and the input of a request it
// reads is one JSON object with message, a string, messages, an array,
// and ids; a responses request's messages each a role and a string
// content (chat's are the request's, as sent).
func FuzzRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, body string, responses bool) {
		route := RouteChat
		if responses {
			route = RouteResponses
		}
		req, bad := readRequest(route, []byte(body), config.DefaultParts)
		if bad != nil {
			if bad.Status != 400 && bad.Status != 413 || !json.Valid(bad.Body) {
				t.Fatalf("refusal %d %s", bad.Status, bad.Body)
			}
			return
		}
		input := req.input("response_id", "resp_1")
		var in struct {
			Message  *string
			Messages []json.RawMessage
			Parts    []json.RawMessage
			IDs      struct {
				ResponseID string `json:"response_id"`
			}
		}
		if err := json.Unmarshal(input, &in); err != nil || in.Message == nil || in.Messages == nil || in.IDs.ResponseID != "resp_1" {
			t.Fatalf("readRequest(%q) input %s (%v), want {message, messages, ids}", body, input, err)
		}
		for _, p := range in.Parts {
			if _, err := part.Parse(p, config.DefaultParts); err != nil {
				t.Fatalf("readRequest(%q): a part %s: %v", body, p, err)
			}
		}
		for _, m := range in.Messages {
			var chat struct{ Role, Content *string }
			if err := json.Unmarshal(m, &chat); responses && (err != nil || chat.Role == nil || chat.Content == nil) {
				t.Fatalf("readRequest(%q): a message %s (%v), want {role, content}, both strings", body, m, err)
			}
		}
	})
}

// FuzzPiece: whatever JSON value a record is, pieceOf never panics and
// its text is a JSON string's contents (a chunk's delta stays valid
// JSON); textOf the same of any output.
func FuzzPiece(f *testing.F) {
	for _, s := range []string{`{"text":"a\nb"}`, `{"reasoning":"r"}`, `{"end":{}}`, `"s\"q"`, `{"i":1,"s":"a\"b\\c"}`, `[1,"x"]`,
		`{"text":"","reasoning":"r"}`, `12`, `null`, `{"tool_call":{"name":"x"}}`, `[{"text":"a"},"b",{"reasoning":"c"}]`,
		`{"inline_data":{"mime_type":"image/png","data":"iVBORw0KGgo=","display_name":"a]\"b"}}`, `{"file_data":{"file_uri":"https://e.com/(x)<y>"}}`,
		`{"data":{"a":"\"q"}}`, `{"text":"t","parts":[{"inline_data":{"mime_type":"audio/wav","data":"AAAA"}},{"data":[1]}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, record string) {
		if !json.Valid([]byte(record)) {
			return
		}
		check := func(what string, text []byte) {
			var s string
			if err := json.Unmarshal([]byte(`"`+string(text)+`"`), &s); err != nil {
				t.Fatalf("%s of %s = %q, not a JSON string's contents: %v", what, record, text, err)
			}
		}
		compact, _ := rawjson.AppendCompact(nil, []byte(record)) // records are compact
		if p, ok := pieceOf(compact); ok {
			check("pieceOf", p.text)
			if p.part != nil {
				check("partText", partText(nil, p.part))
			}
		}
		text, reasoning, parts := textOf([]byte(record))
		check("textOf's text", text)
		check("textOf's reasoning", reasoning)
		for _, p := range parts {
			check("partText", partText(nil, p))
		}
	})
}

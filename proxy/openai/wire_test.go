package openai

import (
	"encoding/json"
	"testing"

	"github.com/sidecar-dev/sidecar/rawjson"
)

var fuzzSeeds = []string{
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"a\"b"},{"type":"text","text":"\u2028"}]}]}`,
	`{"model":"m","input":"hi"}`,
	`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":null}]}`,
	`{"model":"m","messages":[{"role":"user","content":[]}]}`,
	`[]`, `null`, `"x"`, `{"model":1}`,
}

// FuzzRequest: readRequest never panics, and the input of a request it
// reads is one JSON object with message, a string, and messages.
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
		req, bad := readRequest(route, []byte(body))
		if bad != nil {
			if bad.Status != 400 || !json.Valid(bad.Body) {
				t.Fatalf("refusal %d %s", bad.Status, bad.Body)
			}
			return
		}
		var in struct {
			Message  *string
			Messages json.RawMessage
		}
		if err := json.Unmarshal(req.input, &in); err != nil || in.Message == nil || len(in.Messages) == 0 {
			t.Fatalf("readRequest(%q) input %s (%v), want {message, messages}", body, req.input, err)
		}
	})
}

// FuzzPiece: whatever JSON value a record is, pieceOf never panics and
// its text is a JSON string's contents (a chunk's delta stays valid
// JSON); textOf the same of any output.
func FuzzPiece(f *testing.F) {
	for _, s := range []string{`{"text":"a\nb"}`, `{"reasoning":"r"}`, `{"end":{}}`, `"s\"q"`, `{"i":1,"s":"a\"b\\c"}`, `[1,"x"]`,
		`{"text":"","reasoning":"r"}`, `12`, `null`, `{"tool_call":{"name":"x"}}`, `[{"text":"a"},"b",{"reasoning":"c"}]`} {
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
		}
		text, reasoning := textOf([]byte(record))
		check("textOf's text", text)
		check("textOf's reasoning", reasoning)
	})
}

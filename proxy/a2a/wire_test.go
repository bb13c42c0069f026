package a2a

import (
	"encoding/json"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	gpart "github.com/sidecar-dev/sidecar/proxy/part"
)

// TestPartOf: an object with a string text member and a JSON string are
// text (the object's other members the part's metadata), any other object
// a data part, anything else its JSON as text.
func TestPartOf(t *testing.T) {
	tests := []struct {
		record, text, data, metadata string
	}{
		{`{"text":"hi \u00e9"}`, "hi é", "", ""},
		{`"plain"`, "plain", "", ""},
		{`{"text":"hi","more":1}`, "hi", "", `{"more":1}`},
		{`{"seq":1,"text":"echo: ","who":{"a":[1]}}`, "echo: ", "", `{"seq":1,"who":{"a":[1]}}`},
		{`{"text":"a","text":"b"}`, "", `{"text":"a","text":"b"}`, ""},
		{`{"text":1}`, "", `{"text":1}`, ""},
		{`{}`, "", `{}`, ""},
		{`[1,2]`, "[1,2]", "", ""},
		{`42`, "42", "", ""},
	}
	for _, tt := range tests {
		p := partOf([]byte(tt.record))
		if p.Text != tt.text || string(p.Data) != tt.data || string(p.Metadata) != tt.metadata {
			t.Errorf("partOf(%s) = %q, %s, metadata %s; want %q, %s, metadata %s", tt.record, p.Text, p.Data, p.Metadata, tt.text, tt.data, tt.metadata)
		}
	}
}

// TestIsEnd: only the mapping stage's end record, one member "end" whose
// value is an object, is no content.
func TestIsEnd(t *testing.T) {
	tests := []struct {
		record string
		want   bool
	}{
		{`{"end":{}}`, true},
		{` {"end":{"finish_reason":"stop","usage":{"total_tokens":3}}} `, true},
		{`{"end":1}`, false},
		{`{"end":"x"}`, false},
		{`{"end":{},"text":"x"}`, false},
		{`{"text":"x","end":{}}`, false},
		{`{"End":{}}`, false},
		{`"end"`, false},
		{`{}`, false},
		{``, false},
		{`{"end":{`, false},
	}
	for _, tt := range tests {
		if got := isEnd([]byte(tt.record)); got != tt.want {
			t.Errorf("isEnd(%q) = %v, want %v", tt.record, got, tt.want)
		}
	}
}

// FuzzInput: whatever params a message has, readMessage never panics, and
// the input of a message it reads is one JSON object: message, a string;
// messages, the one user message with the same text; ids, the task's;
// parts, when there, an array of part records package part reads.
func FuzzInput(f *testing.F) {
	for _, s := range []string{
		`{"message":{"kind":"message","role":"user","messageId":"m","parts":[{"kind":"text","text":"hi"}]}}`,
		`{"message":{"parts":[{"text":"a\"b"},{"data":{}},{"text":"\u2028\\"}],"contextId":"c"}}`,
		`{"message":{"parts":[{"text":"é"},{"text":""}]}}`,
		`{"message":{"parts":[]}}`, `{"message":[]}`, `{}`, `null`,
		`{"message":{"parts":[{"raw":"iVBORw0KGgo=","mediaType":"image/png","filename":"a.png"},{"url":"https://x.test/a.pdf"},{"data":[1]}]}}`,
		`{"message":{"parts":[{"kind":"file","file":{"bytes":"aGk","mimeType":"text/plain"}},{"kind":"file","file":{"uri":"data:image/png;base64,iVBORw0KGgo="}}]}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		m, err := readMessage([]byte(params), v10, config.DefaultParts)
		if err != nil {
			return
		}
		in := m.input(&task{id: "t1", contextID: m.contextID + "x"})
		var v struct {
			Message  *string
			Messages []struct{ Role, Content string }
			Parts    []json.RawMessage
			IDs      struct {
				ContextID string `json:"context_id"`
				TaskID    string `json:"task_id"`
			}
		}
		if err := json.Unmarshal(in, &v); err != nil || v.Message == nil || len(v.Messages) != 1 || v.Messages[0].Role != "user" ||
			v.Messages[0].Content != *v.Message || v.IDs.TaskID != "t1" || v.IDs.ContextID != (core.Owner{}).Scope(m.contextID+"x") {
			t.Fatalf("readMessage(%s).input = %s (%v), want {message, messages: [its user message], ids}", params, in, err)
		}
		for _, p := range v.Parts {
			if _, err := gpart.Parse(p, config.DefaultParts); err != nil || !gpart.Is(p) {
				t.Fatalf("readMessage(%s).input's part %s: %v", params, p, err)
			}
		}
	})
}

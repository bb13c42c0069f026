package a2a

import "testing"

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

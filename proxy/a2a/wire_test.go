package a2a

import "testing"

// TestPartOf: an emit: text record {"text": …} alone and a JSON string
// are text, any other object a data part, anything else its JSON as text.
func TestPartOf(t *testing.T) {
	tests := []struct {
		record, text, data string
	}{
		{`{"text":"hi \u00e9"}`, "hi é", ""},
		{`"plain"`, "plain", ""},
		{`{"text":"hi","more":1}`, "", `{"text":"hi","more":1}`},
		{`{"text":1}`, "", `{"text":1}`},
		{`{}`, "", `{}`},
		{`[1,2]`, "[1,2]", ""},
		{`42`, "42", ""},
	}
	for _, tt := range tests {
		p := partOf([]byte(tt.record))
		if p.Text != tt.text || string(p.Data) != tt.data {
			t.Errorf("partOf(%s) = %q, %s; want %q, %s", tt.record, p.Text, p.Data, tt.text, tt.data)
		}
	}
}

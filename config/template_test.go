package config

import (
	"encoding/json"
	"testing"
)

func TestTemplateBigInteger(t *testing.T) {
	const big = "12345678901234567890123"
	tests := []struct {
		name string
		body string
	}{
		{"yaml mapping", "{n: " + big + "}"},
		{"json string", `'{"n": ` + big + `}'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    body: " + tt.body + "\n"
			c, err := Parse("sidecar.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", src, err)
			}
			tmpl, ok := c.Methods[0].Template.(map[string]any)
			if !ok {
				t.Fatalf("Template = %#v, want a map", c.Methods[0].Template)
			}
			if got := tmpl["n"]; got != json.Number(big) {
				t.Errorf("Template[n] = %#v, want json.Number(%q)", got, big)
			}
			out, err := json.Marshal(tmpl)
			if err != nil || string(out) != `{"n":`+big+`}` {
				t.Errorf("json.Marshal(Template) = %s, %v, want {\"n\":%s}", out, err, big)
			}
		})
	}
}

func TestInputRef(t *testing.T) {
	tests := []struct {
		in      string
		field   string
		ok      bool
		invalid bool // checkRef rejects it
	}{
		{"{input}", "", true, false},
		{"{input.a}", "a", true, false},
		{"{input.a.b_c}", "a.b_c", true, false},
		{"{input.}", "", true, true},
		{"{input.a b}", "a b", true, true},
		{"{input.a} and {input.b}", "a} and {input.b", true, true},
		{"{inputs}", "", false, false},
		{"{input", "", false, false},
		{"hi {input.a}", "", false, false},
	}
	for _, tt := range tests {
		field, ok := inputRef(tt.in)
		if field != tt.field || ok != tt.ok {
			t.Errorf("inputRef(%q) = %q, %v, want %q, %v", tt.in, field, ok, tt.field, tt.ok)
		}
		if err := checkRef(tt.in); (err != nil) != tt.invalid {
			t.Errorf("checkRef(%q) = %v, want error: %v", tt.in, err, tt.invalid)
		}
	}
}

package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestMethodDescriptionParameters(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(`
upstream: {url: "http://127.0.0.1:8000"}
preset: adk
adk: {app: a}
methods:
  query:
    call: POST /query/{user_id}
    description: |
      Answers one message.
    parameters:
      type: object
      properties:
        message: {type: string, description: "Say {hi}."}
        user_id: {type: string}
        limit: {type: integer, nullable: true, maximum: 10}
      required: [message, user_id]
  stream_query: {handler: adk.stream_query, description: Streams.}
  plain: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	q := c.Methods[0]
	if q.Description != "Answers one message.\n" {
		t.Errorf("description = %q", q.Description)
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"message": map[string]any{"type": "string", "description": "Say {hi}."},
			"user_id": map[string]any{"type": "string"},
			"limit":   map[string]any{"type": "integer", "nullable": true, "maximum": json.Number("10")},
		},
		"required": []any{"message", "user_id"},
	}
	if !reflect.DeepEqual(q.Parameters, want) {
		t.Errorf("parameters = %#v\nwant %#v", q.Parameters, want)
	}
	// validate --print writes them out, and what it writes reads back.
	again, err := Parse("printed.yaml", c.Expanded())
	if err != nil {
		t.Fatalf("Expanded() does not parse: %v\n%s", err, c.Expanded())
	}
	if a := again.Methods[0]; a.Description != q.Description || !reflect.DeepEqual(a.Parameters, q.Parameters) {
		t.Errorf("after Expanded: %q %#v", a.Description, a.Parameters)
	}
	if s := c.Methods[1]; s.Name != "stream_query" || s.Description != "Streams." || s.Parameters != nil {
		t.Errorf("a handler method: %q %q %v", s.Name, s.Description, s.Parameters)
	}
	if p := c.Methods[2]; p.Description != "" || p.Parameters != nil {
		t.Errorf("a method without them: %q %v", p.Description, p.Parameters)
	}

	for _, tt := range []struct{ yaml, want string }{
		{"parameters: [a]", "methods.q.parameters: want an OpenAPI schema mapping"},
		{"parameters: {type: string}", "methods.q.parameters: type string: the parameters of a method are an object"},
		{"description: [a]", "methods.q.description: want a single value, not a list"},
		{"description: " + strings.Repeat("x", maxDescription+1), "methods.q.description: longer than"},
		{"parameters: {type: object, maximum: .inf}", "methods.q.parameters.maximum: .inf is not a number JSON can carry"},
	} {
		_, err := Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {"+tt.yaml+"}\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) = %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

// TestMethodExample: a method's example is any YAML value, read as JSON
// (numbers stay numbers, strings stay strings), and validate --print
// writes it back.
func TestMethodExample(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(`
upstream: {url: "http://127.0.0.1:8000"}
methods:
  query:
    example: {message: hello, n: 3, big: 12345678901234567890, tags: [a, "1"], ok: true, none: null}
  scalar: {example: "just text"}
  list: {example: [1, x]}
  plain: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"message": "hello", "n": json.Number("3"), "big": json.Number("12345678901234567890"),
			"tags": []any{"a", "1"}, "ok": true, "none": nil},
		"just text",
		[]any{json.Number("1"), "x"},
		nil,
	}
	for i, w := range want {
		if !reflect.DeepEqual(c.Methods[i].Example, w) {
			t.Errorf("%s: example = %#v, want %#v", c.Methods[i].Name, c.Methods[i].Example, w)
		}
	}
	printed := string(c.Expanded())
	if !strings.Contains(printed, "example:") {
		t.Fatalf("Expanded() has no example:\n%s", printed)
	}
	again, err := Parse("printed.yaml", c.Expanded())
	if err != nil {
		t.Fatalf("Expanded() does not parse: %v\n%s", err, printed)
	}
	for i, w := range want {
		if !reflect.DeepEqual(again.Methods[i].Example, w) {
			t.Errorf("after Expanded, %s: example = %#v, want %#v", again.Methods[i].Name, again.Methods[i].Example, w)
		}
	}
	if _, err := Parse("sidecar.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {example: {n: .inf}}\n")); err == nil ||
		!strings.Contains(err.Error(), "methods.q.example.n: .inf is not a number JSON can carry") {
		t.Errorf("an example JSON cannot carry: %v", err)
	}
}

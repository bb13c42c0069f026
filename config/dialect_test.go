package config

import (
	"strings"
	"testing"
)

func TestParseDialect(t *testing.T) {
	src := "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  stream_query:\n    mode: stream\n    dialect: vercel-ui\n    emit: adk\n    headers: {set: {A2A-Version: \"1.0\"}}\n"
	c, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Methods[0]
	if m.Speaking() != DialectVercelUI || m.Emitting() != EmitADK || m.Headers["A2a-Version"] != "1.0" {
		t.Fatalf("method = %+v", m)
	}
	out := string(c.Expanded())
	for _, want := range []string{"dialect: vercel-ui", "emit: adk", `A2a-Version: "1.0"`} {
		if !strings.Contains(out, want) {
			t.Errorf("Expanded() lacks %q:\n%s", want, out)
		}
	}
	again, err := Parse("again.yaml", c.Expanded())
	if err != nil {
		t.Fatalf("Parse(Expanded()) = %v", err)
	}
	if again.Methods[0].Emit != EmitADK {
		t.Errorf("round trip lost emit: %+v", again.Methods[0])
	}
}

func TestParseDialectProblems(t *testing.T) {
	tests := []struct{ src, want string }{
		{"upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {dialect: klingon, emit: text}\n", `methods.q.dialect: unknown dialect "klingon"`},
		{"upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {emit: html}\n", `methods.q.emit: unknown emit "html"`},
		{"upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {dialect: openai-chat}\n", `methods.q.dialect: dialect "openai-chat" has no effect with emit: raw`},
		{"upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {dialect: a2a, emit: raw}\n", `has no effect with emit: raw`},
		{"upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {headers: {forward: [X-A]}}\n", `applies to the top-level headers only`},
		{"upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {headers: {set: {Content-Type: x}}}\n", `managed by the sidecar`},
		{"upstream: {url: \"http://127.0.0.1:8000\"}\nadk: {app: a}\nmethods:\n  q: {handler: adk.stream_query, headers: {set: {X-A: b}}}\n", `methods.q.headers: does not apply to a method with a handler`},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want %q", tt.src, err, tt.want)
		}
	}
	// An unknown dialect under emit: raw is one problem, not that and
	// its having no effect.
	src := "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {dialect: vercel, emit: raw}\n"
	want := `t.yaml:3: methods.q.dialect: unknown dialect "vercel" (want "auto", "raw", "vercel-ui", "openai-chat", "openai-responses", "openai-agents", "langgraph", "ag-ui", "a2a" or "adk")`
	if _, err := Parse("t.yaml", []byte(src)); err == nil || err.Error() != want {
		t.Errorf("Parse(%q) = %v, want the one problem %s", src, err, want)
	}
	for _, ok := range []string{"upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {dialect: auto}\n", "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {dialect: raw, emit: raw}\n", "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  q: {dialect: a2a, emit: text}\n"} {
		if _, err := Parse("t.yaml", []byte(ok)); err != nil {
			t.Errorf("Parse(%q) = %v, want nil", ok, err)
		}
	}
}

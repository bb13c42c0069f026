package upstream

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

func pathMethod() *config.Method {
	return &config.Method{Name: "m", Verb: "GET", Path: "/users/{user_id}/s", Segments: []config.PathSegment{
		{Literal: "/users/"}, {Field: "user_id"}, {Literal: "/s"},
	}}
}

// FuzzBuildPath: whatever string fills a path field, the escaped path keeps
// the template's structure — same segments, no query, no fragment — and
// decodes back to the value.
func FuzzBuildPath(f *testing.F) {
	for _, s := range []string{"u1", "..", ".", "../admin", "a/b?c#d", "%2F", "a\nb", "é", " ", "%", "\x00", "..%2F"} {
		f.Add(s)
	}
	m := pathMethod()
	f.Fuzz(func(t *testing.T, v string) {
		raw, _ := json.Marshal(v)
		json.Unmarshal(raw, &v) // the value as a JSON input carries it: invalid UTF-8 is U+FFFD
		in, err := ParseInput(json.RawMessage(`{"user_id":` + string(raw) + `}`))
		if err != nil {
			t.Fatal(err)
		}
		_, escaped, err := buildPath(m, "m", in)
		if v == "" {
			if err == nil {
				t.Fatalf("buildPath with an empty value succeeded")
			}
			return
		}
		if err != nil {
			t.Fatalf("buildPath(%q) error %v", v, err)
		}
		u, err := url.Parse("http://agent" + escaped)
		if err != nil {
			t.Fatalf("buildPath(%q) = %q does not parse: %v", v, escaped, err)
		}
		if u.RawQuery != "" || u.Fragment != "" || strings.Count(u.EscapedPath(), "/") != 3 {
			t.Fatalf("buildPath(%q) = %q changed the path structure", v, escaped)
		}
		seg := strings.Split(escaped, "/")[2]
		if seg == "." || seg == ".." {
			t.Fatalf("buildPath(%q) left a dot segment: %q", v, escaped)
		}
		if got, err := url.PathUnescape(seg); err != nil || got != v {
			t.Fatalf("segment %q decodes to %q, %v; want %q", seg, got, err, v)
		}
	})
}

// FuzzBodyTemplate: whatever input object fills a body template, the body
// is valid JSON and every leaf that named a present field carries its
// value byte-exact.
func FuzzBodyTemplate(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,"x",null]},"c":"é"}`, `{"a":null}`, `{"n":12345678901234567890123}`, `{"a":"\u2028"}`} {
		f.Add(s)
	}
	tmpl := map[string]any{
		"whole": "{input}", "a": "{input.a}", "deep": map[string]any{"b": "{input.a.b}"},
		"list": []any{"{input.c}", "{input.missing}", json.Number("1")}, "lit": "{input.a} is not a leaf",
	}
	m := &config.Method{Body: config.BodyTemplate, Template: tmpl}
	f.Fuzz(func(t *testing.T, raw string) {
		var c bytes.Buffer
		if json.Compact(&c, []byte(raw)) != nil {
			return
		}
		raw = c.String() // the proxy hands on input compacted
		in, err := ParseInput(json.RawMessage(raw))
		if err != nil {
			return
		}
		body, err := buildBody(m, "m", in)
		if err != nil {
			t.Fatalf("buildBody(%s) error %v", raw, err)
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("buildBody(%s) = %s, not a JSON object: %v", raw, body, err)
		}
		if string(out["whole"]) != raw {
			t.Fatalf("{input} = %s, want %s", out["whole"], raw)
		}
		if a, ok := in.Fields["a"]; ok && string(a) != "null" && string(out["a"]) != string(a) {
			t.Fatalf("{input.a} = %s, want %s", out["a"], a)
		}
	})
}

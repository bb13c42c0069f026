package core

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

// TestParseInputBounded: indexing an input copies no values and stops at
// MaxFields top-level fields; nested lookups build no index at all.
func TestParseInputBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range MaxFields + 1 {
		if i > 0 {
			b.WriteString(`,`)
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":1`)
	}
	b.WriteString(`}`)
	if _, err := ParseInput(json.RawMessage(b.String())); err == nil || !strings.Contains(err.Error(), "more than 10000 top-level fields") {
		t.Errorf("ParseInput of %d fields = %v, want an error naming the limit", MaxFields+1, err)
	}
	in, err := ParseInput(json.RawMessage(`{"a":{"b":{"c":7},"b":{"c":8}},"s":"x","a2":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := in.Lookup("a.b.c"); !ok || string(v) != "8" {
		t.Errorf("Lookup(a.b.c) = %s %v, want the last duplicate's 8", v, ok)
	}
	if _, ok := in.Lookup("s.x"); ok {
		t.Errorf("lookup into a string found something")
	}
	if _, err := ParseInput(json.RawMessage(`{"a":[}`)); err == nil {
		t.Errorf("ParseInput accepted invalid JSON")
	}
	// A large nested object is searched, not indexed.
	big := `{"a":{` + strings.Repeat(`"x":1,`, 200000) + `"y":2}}`
	in, _ = ParseInput(json.RawMessage(big))
	allocs := testing.AllocsPerRun(5, func() { in.Lookup("a.y") })
	if allocs > 5 {
		t.Errorf("lookup in a 200,000-key object made %v allocations, want a few", allocs)
	}
}

// TestQueryInput: the query parameters a bidi method's path names become
// its input's fields, as JSON strings; others, and absent ones, do not.
func TestQueryInput(t *testing.T) {
	m := &config.Method{Segments: []config.PathSegment{{Literal: "/run/"}, {Field: "app"}}, Query: []config.PathSegment{{Literal: "u="}, {Field: "user_id"}, {Literal: "&s="}, {Field: "session_id"}}}
	in := QueryInput(m, url.Values{"app": {"a\"1"}, "user_id": {"u 1"}, "other": {"x"}})
	if v, ok := in.Lookup("app"); !ok || string(v) != `"a\"1"` {
		t.Errorf("Lookup(app) = %s, %v; want \"a\\\"1\"", v, ok)
	}
	if v, ok := in.Lookup("user_id"); !ok || string(v) != `"u 1"` {
		t.Errorf("Lookup(user_id) = %s, %v; want \"u 1\"", v, ok)
	}
	for _, f := range []string{"session_id", "other"} {
		if v, ok := in.Lookup(f); ok {
			t.Errorf("Lookup(%s) = %s, want no such field", f, v)
		}
	}
	if !json.Valid(in.Raw) {
		t.Errorf("Raw = %s, not JSON", in.Raw)
	}
}

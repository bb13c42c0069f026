package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

func pathMethod() *config.Method {
	return &config.Method{Name: "m", Verb: "GET", Path: "/users/{user_id}/s?q={user_id}&x=1&r={route}", Segments: []config.PathSegment{
		{Literal: "/users/"}, {Field: "user_id"}, {Literal: "/s"},
	}, Query: []config.PathSegment{
		{Literal: "q="}, {Field: "user_id"}, {Literal: "&x=1&r="}, {Field: "route"},
	}}
}

// FuzzBuildPath: whatever string fills a path field and a query field, the
// escaped path keeps the template's structure — same segments, the same
// query parameters, no fragment — and both decode back to the value.
func FuzzBuildPath(f *testing.F) {
	for _, s := range []string{"u1", "..", ".", "../admin", "a/b?c#d", "%2F", "a\nb", "é", " ", "%", "\x00", "..%2F",
		"a&x=2", "a=b", "+", "a;b", "#x", "?", "x/../../admin/panel", "a/./b", "a/..b/c"} {
		f.Add(s)
	}
	m := pathMethod()
	f.Fuzz(func(t *testing.T, v string) {
		raw, _ := json.Marshal(v)
		json.Unmarshal(raw, &v) // the value as a JSON input carries it: invalid UTF-8 is U+FFFD
		in, err := core.ParseInput(json.RawMessage(`{"user_id":` + string(raw) + `}`))
		if err != nil {
			t.Fatal(err)
		}
		_, escaped, query, err := buildPath(m, "m", in, "")
		if v == "" || DotSegments(v) {
			if err == nil {
				t.Fatalf("buildPath with the path value %q succeeded", v)
			}
			return
		}
		if err != nil {
			t.Fatalf("buildPath(%q) error %v", v, err)
		}
		u, err := url.Parse("http://agent" + escaped + "?" + query)
		if err != nil {
			t.Fatalf("buildPath(%q) = %q ? %q does not parse: %v", v, escaped, query, err)
		}
		if u.Fragment != "" || u.RawQuery != query || strings.Count(u.EscapedPath(), "/") != 3 {
			t.Fatalf("buildPath(%q) = %q ? %q changed the path structure", v, escaped, query)
		}
		seg := strings.Split(escaped, "/")[2]
		if seg == "." || seg == ".." {
			t.Fatalf("buildPath(%q) left a dot segment: %q", v, escaped)
		}
		if got, err := url.PathUnescape(seg); err != nil || got != v {
			t.Fatalf("segment %q decodes to %q, %v; want %q", seg, got, err, v)
		}
		q, err := url.ParseQuery(query)
		want := url.Values{"q": {v}, "x": {"1"}, "r": {core.RouteUnary}}
		if err != nil || !reflect.DeepEqual(q, want) {
			t.Fatalf("query %q decodes to %v, %v; want %v", query, q, err, want)
		}
	})
}

// TestBuildQuery: query values are escaped as query components, an empty
// string is a value, and a missing or non-scalar one is the caller's fault.
func TestBuildQuery(t *testing.T) {
	m := &config.Method{Segments: []config.PathSegment{{Literal: "/run"}}, Query: []config.PathSegment{
		{Literal: "stream=true&user="}, {Field: "user_id"}, {Literal: "&n="}, {Field: "a.n"},
	}}
	tests := []struct {
		input, want, err string
	}{
		{`{"user_id":"u 1&x=2","a":{"n":12345678901234567890}}`, "stream=true&user=u+1%26x%3D2&n=12345678901234567890", ""},
		{`{"user_id":"","a":{"n":true}}`, "stream=true&user=&n=true", ""},
		{`{"a":{"n":1}}`, "", "input.user_id: is required by this method's query"},
		{`{"user_id":{},"a":{"n":1}}`, "", "input.user_id: must be a string, number or boolean: it fills a query parameter"},
	}
	for _, tt := range tests {
		in, err := core.ParseInput(json.RawMessage(tt.input))
		if err != nil {
			t.Fatal(err)
		}
		_, _, q, err := buildPath(m, "m", in, "")
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("buildPath(%s) error = %v, want %q", tt.input, err, tt.err)
			}
			continue
		}
		if err != nil || q != tt.want {
			t.Errorf("buildPath(%s) query = %q, %v; want %q", tt.input, q, err, tt.want)
		}
	}
	if !core.ReadsFields(m) {
		t.Errorf("ReadsFields = false for a method whose query reads input fields")
	}
}

// TestRoutePath: {route} is the route the call came on, whole, or the
// route of the method's mode when the caller does not say.
func TestRoutePath(t *testing.T) {
	m := &config.Method{Name: "*", AllRoutes: true, Segments: []config.PathSegment{{Literal: "/v1"}, {Field: config.FieldRoute}}}
	for _, tt := range []struct {
		route string
		mode  config.Mode
		want  string
	}{
		{core.RouteStream, "", "/v1/api/stream_reasoning_engine"},
		{core.RouteUnary, config.ModeStream, "/v1/api/reasoning_engine"},
		{"", config.ModeAsyncStream, "/v1/api/stream_reasoning_engine"},
		{"", config.ModeAsync, "/v1/api/reasoning_engine"},
	} {
		m.Mode = tt.mode
		path, raw, _, err := buildPath(m, "x", core.Input{}, tt.route)
		if err != nil || path != tt.want || raw != tt.want {
			t.Errorf("route %q mode %q: path %q raw %q, %v; want %q", tt.route, tt.mode, path, raw, err, tt.want)
		}
	}
	if core.ReadsFields(m) {
		t.Errorf("ReadsFields = true for a method whose path has only {route}")
	}
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
		in, err := core.ParseInput(json.RawMessage(raw))
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

// TestDotSegmentValues: a path value with a "." or ".." part once split on
// "/" is refused before the agent is called: sent as x%2F..%2F..%2Fadmin,
// it would reach /admin behind a proxy that decodes %2F (nginx with a
// proxy_pass URI). Dots inside a part are a name, sent as one segment.
func TestDotSegmentValues(t *testing.T) {
	var seen atomic.Pointer[string]
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		seen.Store(&p)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer agent.Close()
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \""+agent.URL+"\"}\nmethods:\n  q: {call: \"GET /users/{user_id}/x\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const refused = `input.user_id: must not be "." or "..", nor hold one between "/": it fills a path segment`
	tests := []struct {
		value string
		want  string // the escaped path the agent sees; "" for refused
	}{
		{"x/../../admin/panel", ""},
		{"..", ""},
		{".", ""},
		{"../admin", ""},
		{"a/./b", ""},
		{"a/.", ""},
		{"./a", ""},
		{"a/..", ""},
		{"a//..//b", ""},
		{"a/..b/c", "/users/a%2F..b%2Fc/x"},
		{"...", "/users/.../x"},
		{"a/.b", "/users/a%2F.b/x"},
		{"a..b", "/users/a..b/x"},
		{"%2E%2E", "/users/%252E%252E/x"},
	}
	for _, tt := range tests {
		seen.Store(nil)
		raw, _ := json.Marshal(tt.value)
		in, err := core.ParseInput(json.RawMessage(`{"user_id":` + string(raw) + `}`))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = c.Unary(ctx, core.Call{Method: cfg.Methods[0], Name: "q", Input: in})
		cancel()
		got := "(no call)"
		if p := seen.Load(); p != nil {
			got = *p
		}
		if tt.want == "" {
			if err == nil || err.Error() != refused || got != "(no call)" {
				t.Errorf("user_id %q: error %v, the agent saw %s; want %q and no call", tt.value, err, got, refused)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("user_id %q: error %v, the agent saw %s; want %q", tt.value, err, got, tt.want)
		}
	}
}

// TestTarget: a conversation's agent WebSocket is dialled at the path a
// call's request would take, fields escaped in their segment and query
// component; a field missing is an InputError naming it.
func TestTarget(t *testing.T) {
	in, err := core.ParseInput(json.RawMessage(`{"user_id":"a/b c"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Target(pathMethod(), "m", in, "/live")
	if want := "/users/a%2Fb%20c/s?q=a%2Fb+c&x=1&r=%2Flive"; got != want || err != nil {
		t.Errorf("Target = %q, %v; want %q", got, err, want)
	}
	_, err = Target(pathMethod(), "m", core.Input{Raw: json.RawMessage(`{}`)}, "/live")
	var ie *core.InputError
	if !errors.As(err, &ie) || ie.Field != "user_id" {
		t.Errorf("Target without user_id = %v, want an InputError naming it", err)
	}
	plain := &config.Method{Name: "m", Verb: "GET", Path: "/live?x=1", Segments: []config.PathSegment{{Literal: "/live"}}, Query: []config.PathSegment{{Literal: "x=1"}}}
	if got, err := Target(plain, "m", core.Input{}, "/"); got != "/live?x=1" || err != nil {
		t.Errorf("Target of a path without fields = %q, %v; want /live?x=1", got, err)
	}
}

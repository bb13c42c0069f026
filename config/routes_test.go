package config

import (
	"reflect"
	"testing"
)

const routeMethods = `upstream: {url: 'unix:///run/agent.sock'}
methods:
  query: {}
  stream_query: {mode: stream}
  job: {mode: async}
  tail: {mode: async_stream}
`

func TestLookup(t *testing.T) {
	type lookup struct {
		name   string
		stream bool
		want   string // the method's name, "" for nil
	}
	tests := []struct {
		name    string
		star    string // the "*" entry appended to routeMethods, if any
		lookups []lookup
		unary   []string
		stream  []string
	}{
		{
			name: "no star",
			lookups: []lookup{
				{"query", false, "query"}, {"query", true, ""},
				{"stream_query", true, "stream_query"}, {"stream_query", false, ""},
				{"job", false, "job"}, {"tail", true, "tail"},
				{"nope", false, ""}, {"nope", true, ""}, {"*", false, ""},
			},
			unary:  []string{"query", "job"},
			stream: []string{"stream_query", "tail"},
		},
		{
			name: "star without mode serves both routes",
			star: "  '*': {}\n",
			lookups: []lookup{
				{"query", false, "query"}, {"query", true, "*"},
				{"stream_query", false, "*"}, {"nope", false, "*"}, {"nope", true, "*"},
			},
			unary:  []string{"query", "job"},
			stream: []string{"stream_query", "tail"},
		},
		{
			name: "star with a streaming mode",
			star: "  '*': {mode: async_stream}\n",
			lookups: []lookup{
				{"nope", false, ""}, {"nope", true, "*"}, {"query", true, "*"}, {"tail", true, "tail"},
			},
			unary:  []string{"query", "job"},
			stream: []string{"stream_query", "tail"},
		},
		{
			name: "star with an explicit unary mode",
			star: "  '*': {mode: ''}\n",
			lookups: []lookup{
				{"nope", false, "*"}, {"nope", true, ""}, {"stream_query", false, "*"},
			},
			unary:  []string{"query", "job"},
			stream: []string{"stream_query", "tail"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("sidecar.yaml", []byte(routeMethods+tt.star))
			if err != nil {
				t.Fatalf("Parse error: %v", err)
			}
			for _, l := range tt.lookups {
				got := ""
				if m := c.Lookup(l.name, l.stream); m != nil {
					got = m.Name
				}
				if got != l.want {
					t.Errorf("Lookup(%q, %v) = %q, want %q", l.name, l.stream, got, l.want)
				}
			}
			if got := c.RouteMethods(false); !reflect.DeepEqual(got, tt.unary) {
				t.Errorf("RouteMethods(false) = %q, want %q", got, tt.unary)
			}
			if got := c.RouteMethods(true); !reflect.DeepEqual(got, tt.stream) {
				t.Errorf("RouteMethods(true) = %q, want %q", got, tt.stream)
			}
		})
	}
}

func TestRouteMethodsIsACopy(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(routeMethods))
	if err != nil {
		t.Fatal(err)
	}
	c.RouteMethods(false)[0] = "changed"
	if got := c.RouteMethods(false)[0]; got != "query" {
		t.Errorf("RouteMethods(false)[0] = %q after the caller changed its copy, want %q", got, "query")
	}
}

func TestLookupZeroConfig(t *testing.T) {
	var c Config
	if m := c.Lookup("query", false); m != nil {
		t.Errorf("Lookup on a zero Config = %v, want nil", m)
	}
	if got := c.RouteMethods(true); got != nil {
		t.Errorf("RouteMethods on a zero Config = %q, want nil", got)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		yaml string
		want string
	}{
		{routeMethods, "sidecar.yaml: ok: 4 methods (2 unary, 2 streaming), upstream unix:///run/agent.sock"},
		{"upstream: {url: 'http://127.0.0.1:8000'}\nmethods: {query: }\n",
			"sidecar.yaml: ok: 1 method (1 unary, 0 streaming), upstream http://127.0.0.1:8000"},
		{routeMethods + "  '*':\n", `sidecar.yaml: ok: 4 methods (2 unary, 2 streaming), "*" on both routes, upstream unix:///run/agent.sock`},
		{routeMethods + "  '*': {mode: stream}\n", `sidecar.yaml: ok: 4 methods (2 unary, 2 streaming), "*" on the streaming route, upstream unix:///run/agent.sock`},
		{"upstream: {url: 'http://h:1/api'}\nmethods: {'*': {mode: async}}\n", `sidecar.yaml: ok: 0 methods (0 unary, 0 streaming), "*" on the unary route, upstream http://h:1/api`},
	}
	for _, tt := range tests {
		c, err := Parse("sidecar.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatalf("Parse(%q) error: %v", tt.yaml, err)
		}
		if got := c.Summary("sidecar.yaml"); got != tt.want {
			t.Errorf("Summary(%q) =\n%s\nwant\n%s", tt.yaml, got, tt.want)
		}
	}
}

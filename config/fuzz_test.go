package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and returns either a config or
// a *Errors, never both or neither, and that a config it returns holds
// what the rest of the sidecar relies on.
func FuzzParse(f *testing.F) {
	f.Add(full)
	f.Add(minimal)
	f.Add(routeMethods + "  '*': {}\n")
	for _, tt := range validTests {
		f.Add(tt.yaml)
	}
	for _, tt := range problemTests {
		f.Add(tt.yaml)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, err := Parse("f.yaml", []byte(src))
		if err != nil {
			var errs *Errors
			if c != nil || !errors.As(err, &errs) || len(errs.Problems) == 0 {
				t.Fatalf("Parse(%q) = %v, %v (%T), want nil and a non-empty *Errors", src, c, err, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.yaml") {
					t.Fatalf("Parse(%q) error line %q does not name the file", src, line)
				}
			}
			return
		}
		if c == nil || len(c.Methods) == 0 {
			t.Fatalf("Parse(%q) = %v, nil, want a config with methods", src, c)
		}
		for i, m := range c.Methods {
			if m.Name == "*" && i != len(c.Methods)-1 {
				t.Fatalf("Parse(%q): \"*\" is method %d of %d, want it last", src, i, len(c.Methods))
			}
			if len(m.Segments) == 0 || m.Verb == "" {
				t.Fatalf("Parse(%q): method %q has no call: %+v", src, m.Name, *m)
			}
			if m.Name != "*" && c.Lookup(m.Name, m.Mode.Streaming()) != m {
				t.Fatalf("Parse(%q): Lookup(%q, %v) does not find the method", src, m.Name, m.Mode.Streaming())
			}
			if _, err := json.Marshal(m.Template); err != nil {
				t.Fatalf("Parse(%q): method %q template does not encode: %v", src, m.Name, err)
			}
		}
		_ = c.Summary("f.yaml")
	})
}

package config

import (
	"strings"
	"testing"
)

func TestParseParts(t *testing.T) {
	const head = "upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  query: {}\n"
	c, err := Parse("sidecar.yaml", []byte(head+"limits:\n  parts: {bytes: 1MiB, total: 3MiB}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if want := (Parts{Bytes: 1 << 20, Total: 3 << 20}); c.Limits.Parts != want {
		t.Errorf("Limits.Parts = %+v, want %+v", c.Limits.Parts, want)
	}
	d, err := Parse("sidecar.yaml", []byte(head))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if d.Limits.Parts != DefaultParts {
		t.Errorf("default Limits.Parts = %+v, want %+v", d.Limits.Parts, DefaultParts)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"parts: {bytes: 0}", "limits.parts.bytes: 0 must be positive"},
		{"parts: {total: 2GiB}", "larger than the most allowed, 1GiB"},
		{"parts: {bytes: lots}", "limits.parts.bytes"},
		{"parts: {bytes: 32MiB}", "total (16777216) is less than bytes (33554432)"},
		{"parts: {files: 1}", "limits.parts.files: unknown key"},
		{"parts: 5", "limits.parts"},
	} {
		_, err := Parse("sidecar.yaml", []byte(head+"limits:\n  "+tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", tc.yaml, err, tc.want)
		}
	}
}

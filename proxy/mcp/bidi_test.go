package mcp

import (
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

// TestBidiNotATool: a conversation (mode: bidi) is no tool: the door that
// lists every method leaves it out.
func TestBidiNotATool(t *testing.T) {
	cfg, err := config.Parse("test.yaml", []byte("upstream: {url: \"http://127.0.0.1:8000\"}\nmethods:\n  query: {}\n  converse: {mode: bidi, call: GET /live}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, ok := d.tools["converse"]; ok || len(d.order) != 1 {
		t.Errorf("tools = %v, want query only", d.order)
	}
}

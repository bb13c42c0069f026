package core

import (
	"net/http"
	"strings"
	"testing"
)

func TestOwnerScope(t *testing.T) {
	a := OwnerOf(http.Header{"Authorization": {"Bearer one"}})
	b := OwnerOf(http.Header{"Authorization": {"Bearer two"}})
	if a.Scope("ctx-1") != a.Scope("ctx-1") {
		t.Fatalf("Scope is not stable: %q, %q", a.Scope("ctx-1"), a.Scope("ctx-1"))
	}
	if a.Scope("ctx-1") == b.Scope("ctx-1") {
		t.Fatalf("two owners share a scoped id: %q", a.Scope("ctx-1"))
	}
	if a.Scope("ctx-1") == a.Scope("ctx-2") {
		t.Fatalf("two ids share a scoped id: %q", a.Scope("ctx-1"))
	}
	if s := a.Scope("ctx-1"); !strings.HasSuffix(s, ".ctx-1") || len(s) != 16+1+5 {
		t.Fatalf("Scope(%q) = %q, want 16 hex digits, a dot, the id", "ctx-1", s)
	}
}

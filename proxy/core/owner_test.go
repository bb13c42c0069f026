package core

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/auth"
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

// TestOwnerOfRequestIssuer (issue 37 item 1): a verified caller's owner
// is its issuer and subject: two issuers' callers of the same sub are
// two owners (one's A2A task is not the other's), one caller's tokens
// (whatever their header) one owner.
func TestOwnerOfRequestIssuer(t *testing.T) {
	as := func(iss, sub, header string) Owner {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Authorization", header)
		return OwnerOfRequest(r.WithContext(auth.WithCaller(r.Context(), &auth.Caller{Issuer: iss, Subject: sub})))
	}
	a := as("https://idp-a.example.com", "alice", "Bearer one")
	if b := as("https://idp-b.example.com", "alice", "Bearer one"); a == b {
		t.Error("alice of two issuers is one owner, want two")
	}
	if again := as("https://idp-a.example.com", "alice", "Bearer two"); a != again {
		t.Error("alice of one issuer, another token: another owner, want hers")
	}
	if a == OwnerOf(http.Header{"Authorization": {"Bearer one"}}) {
		t.Error("a verified caller's owner is its header's hash, want its identity")
	}
}

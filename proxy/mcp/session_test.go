package mcp

import (
	"fmt"
	"testing"
)

// TestSessionFlood: one host's flood of initialize (no Authorization,
// ten times limits.mcp_sessions) never forgets another host's sessions:
// the flooder's own least recently used go, the store stays at the cap,
// and a host arriving once the store is full forgets one of the
// flooder's, not the victim's.
func TestSessionFlood(t *testing.T) {
	s := serve(t, "limits: {mcp_sessions: 20}\n", Options{})
	victimHost, lateHost := clientFrom(t, "127.0.0.2"), clientFrom(t, "127.0.0.3")
	served := func(id, auth string) bool { return servedHere(t, s.url, id, auth) }
	victim := []string{openBy(t, victimHost, s.url, "Bearer victim"), openBy(t, victimHost, s.url, "Bearer victim")}
	for range 200 {
		openAs(t, s.url, "")
	}
	for i, id := range victim {
		if !served(id, "Bearer victim") {
			t.Errorf("the victim's session %d after another host's flood: not served, want served", i)
		}
	}
	if n := s.door.sessions.len(); n != 20 {
		t.Errorf("%d sessions after the flood, want the cap, 20", n)
	}
	late := openBy(t, lateHost, s.url, "Bearer late")
	if !served(late, "Bearer late") || !served(victim[0], "Bearer victim") || !served(victim[1], "Bearer victim") {
		t.Error("a host arriving at a full store: its session or the victim's not served, want both")
	}
	if n := s.door.sessions.len(); n != 20 {
		t.Errorf("%d sessions, want the cap, 20", n)
	}
}

// TestSessionIdentityFlood: identities cost nothing on a door that checks
// no tokens, so a host sending ten initialize, each with an Authorization
// of its own, is one holder to the fairness of the cap (its address), not
// ten: the victim's sessions, opened from another host, are kept, and each
// of the flood's is still bound to its own Authorization.
func TestSessionIdentityFlood(t *testing.T) {
	s := serve(t, "limits: {mcp_sessions: 5}\n", Options{})
	victimHost := clientFrom(t, "127.0.0.2")
	victim := []string{openBy(t, victimHost, s.url, "Bearer victim"), openBy(t, victimHost, s.url, "Bearer victim")}
	var flood []string
	for i := range 10 {
		flood = append(flood, openAs(t, s.url, fmt.Sprintf("Bearer flood-%d", i)))
	}
	for i, id := range victim {
		if !servedHere(t, s.url, id, "Bearer victim") {
			t.Errorf("the victim's session %d after ten identities from another host: forgotten, want kept", i)
		}
	}
	if !servedHere(t, s.url, flood[9], "Bearer flood-9") || servedHere(t, s.url, flood[9], "Bearer flood-8") {
		t.Error("the flood's last session: want served to its own Authorization only")
	}
	if n := s.door.sessions.len(); n != 5 {
		t.Errorf("%d sessions, want the cap, 5", n)
	}
}

// TestSessionFairShare: at the limit, an owner under its fair share
// (limit / owners) forgets a session of the owner holding the most, the
// least recently used of those on a tie; one at or over it forgets its
// own least recently used.
func TestSessionFairShare(t *testing.T) {
	s := newSessions(6)
	a, b, c, d := [32]byte{'a'}, [32]byte{'b'}, [32]byte{'c'}, [32]byte{'d'}
	a1, a2 := s.open(version20251125, a, a), s.open(version20251125, a, a)
	b1, b2 := s.open(version20251125, b, b), s.open(version20251125, b, b)
	c1, c2 := s.open(version20251125, c, c), s.open(version20251125, c, c)
	s.find(a1.id, a) // b1 is now the oldest of the largest (a, b and c hold two each)
	s.find(a2.id, a)
	d1 := s.open(version20251125, d, d) // d holds none: b's least recently used goes
	kept := func(id string, owner [32]byte) bool { _, ok := s.find(id, owner); return ok }
	if kept(b1.id, b) || !kept(b2.id, b) || !kept(a1.id, a) || !kept(c1.id, c) || !kept(d1.id, d) {
		t.Errorf("a new owner at the limit: want b's least recently used forgotten, every other kept")
	}
	// c holds 2 of 6, over its share (6 / 4 owners): its own least
	// recently used goes, c2 (the check above used c1).
	s.open(version20251125, c, c)
	if kept(c2.id, c) || !kept(c1.id, c) || !kept(b2.id, b) || !kept(d1.id, d) || s.len() != 6 {
		t.Errorf("an owner at its share: want its own least recently used forgotten, %d sessions", s.len())
	}

	// The oldest session of all is a small owner's: a new owner forgets
	// the largest owner's, not it.
	s = newSessions(4)
	small := s.open(version20251125, d, d)
	for range 3 {
		s.open(version20251125, a, a)
	}
	s.open(version20251125, b, b)
	if !kept(small.id, d) || s.len() != 4 {
		t.Errorf("a new owner at the limit forgot the oldest session of all, a small owner's: want the largest owner's")
	}
}

// servedHere reports whether session id of auth answers a ping on url (a
// door keeping sessions in memory): 200, else 404.
func servedHere(t *testing.T, url, id, auth string) bool {
	t.Helper()
	resp, r := legacyCall(t, url, id, auth, "ping", "")
	if resp.StatusCode != 200 && (resp.StatusCode != 404 || r.Error == nil || r.Error.Code != codeSessionNotFound) {
		t.Fatalf("ping of session %.40s = %d %+v, want 200 or 404 -32001", id, resp.StatusCode, r.Error)
	}
	return resp.StatusCode == 200
}

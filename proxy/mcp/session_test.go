package mcp

import "testing"

// TestSessionFlood: one owner's flood of initialize (no Authorization,
// ten times limits.mcp_sessions) never forgets another owner's sessions:
// the flooder's own least recently used go, the store stays at the cap,
// and an owner arriving once the store is full forgets one of the
// flooder's, not the victim's.
func TestSessionFlood(t *testing.T) {
	s := serve(t, "limits: {mcp_sessions: 20}\n", Options{})
	open := func(auth string) string {
		resp, b := post(t, s.url, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			"Authorization", auth)
		if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize (%q) = %d %s", auth, resp.StatusCode, b)
		}
		return resp.Header.Get("Mcp-Session-Id")
	}
	served := func(id, auth string) bool {
		resp, _ := post(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id", id, "Authorization", auth)
		return resp.StatusCode == 200
	}
	victim := []string{open("Bearer victim"), open("Bearer victim")}
	for range 200 {
		open("")
	}
	for i, id := range victim {
		if !served(id, "Bearer victim") {
			t.Errorf("the victim's session %d after another owner's flood: not served, want served", i)
		}
	}
	if n := s.door.sessions.len(); n != 20 {
		t.Errorf("%d sessions after the flood, want the cap, 20", n)
	}
	late := open("Bearer late")
	if !served(late, "Bearer late") || !served(victim[0], "Bearer victim") || !served(victim[1], "Bearer victim") {
		t.Error("an owner arriving at a full store: its session or the victim's not served, want both")
	}
	if n := s.door.sessions.len(); n != 20 {
		t.Errorf("%d sessions, want the cap, 20", n)
	}
}

// TestSessionFairShare: at the limit, an owner under its fair share
// (limit / owners) forgets a session of the owner holding the most, the
// least recently used of those on a tie; one at or over it forgets its
// own least recently used.
func TestSessionFairShare(t *testing.T) {
	s := newSessions(6)
	a, b, c, d := [32]byte{'a'}, [32]byte{'b'}, [32]byte{'c'}, [32]byte{'d'}
	a1, a2 := s.open(version20251125, a), s.open(version20251125, a)
	b1, b2 := s.open(version20251125, b), s.open(version20251125, b)
	c1, c2 := s.open(version20251125, c), s.open(version20251125, c)
	s.find(a1.id, a) // b1 is now the oldest of the largest (a, b and c hold two each)
	s.find(a2.id, a)
	d1 := s.open(version20251125, d) // d holds none: b's least recently used goes
	kept := func(id string, owner [32]byte) bool { _, ok := s.find(id, owner); return ok }
	if kept(b1.id, b) || !kept(b2.id, b) || !kept(a1.id, a) || !kept(c1.id, c) || !kept(d1.id, d) {
		t.Errorf("a new owner at the limit: want b's least recently used forgotten, every other kept")
	}
	// c holds 2 of 6, over its share (6 / 4 owners): its own least
	// recently used goes, c2 (the check above used c1).
	s.open(version20251125, c)
	if kept(c2.id, c) || !kept(c1.id, c) || !kept(b2.id, b) || !kept(d1.id, d) || s.len() != 6 {
		t.Errorf("an owner at its share: want its own least recently used forgotten, %d sessions", s.len())
	}

	// The oldest session of all is a small owner's: a new owner forgets
	// the largest owner's, not it.
	s = newSessions(4)
	small := s.open(version20251125, d)
	for range 3 {
		s.open(version20251125, a)
	}
	s.open(version20251125, b)
	if !kept(small.id, d) || s.len() != 4 {
		t.Errorf("a new owner at the limit forgot the oldest session of all, a small owner's: want the largest owner's")
	}
}

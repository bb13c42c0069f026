package mcp

import (
	"container/list"
	"sync"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// sessions are the sessions of the 2025 revisions, one per initialize,
// named by the Mcp-Session-Id the door issued: a bounded in-memory store of
// at most limit (limits.mcp_sessions) in all. A session answers its owner
// (core.OwnerOf: whoever opened it, by Authorization or verified caller)
// and counts against its holder (core.HolderOf: the verified caller, else
// the client's address), each holder's in a list of its own, most
// recently used first. Past the limit a session is forgotten (its client,
// answered 404, initializes again, as MCP says a client must), and which
// one is fair between holders: a holder holding its fair share or more
// (limit / the holders) forgets its own least recently used; one under it
// forgets that of the holder holding the most (the least recently used of
// them on a tie). So one host's flood of initialize, under as many
// Authorization values as it likes, only ever forgets its own sessions,
// and another's, holding fewer, are kept. Sessions live in one process:
// behind several replicas a session is found only on the one that opened
// it (2026-07-28 has none, and any replica answers any of its requests).
type sessions struct {
	limit int

	mu      sync.Mutex
	byID    map[string]*list.Element // of *session, in its holder's list
	holders map[core.Holder]*list.List
	total   int
	clock   uint64 // counts uses: a session's used is the clock at its last
}

// session is one initialized client: the protocol version it negotiated,
// whom it answers (owner), whose share it counts against (holder), and
// when it was last used (sessions.clock).
type session struct {
	id      string
	version string
	owner   core.Owner
	holder  core.Holder
	used    uint64
	modes   modes // the elicitation modes its client declared (ask.go)
}

func newSessions(limit int) *sessions {
	if limit < 1 {
		limit = 1
	}
	return &sessions{limit: limit, byID: make(map[string]*list.Element), holders: make(map[core.Holder]*list.List)}
}

// open is a new session of version for owner, counted against holder,
// with a fresh random id (a version 4 UUID: 122 random bits, not to be
// guessed). At the limit, it first forgets one: holder's own when it
// holds its fair share, else one of the holder holding the most.
func (s *sessions) open(version string, owner core.Owner, holder core.Holder) session {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock++
	ss := &session{id: core.NewID(), version: version, owner: owner, holder: holder, used: s.clock}
	own := s.holders[holder]
	if s.total >= s.limit {
		n := len(s.holders)
		if own == nil {
			n++
		}
		victim := own
		if own == nil || own.Len()*n < s.limit {
			victim = s.largest()
		}
		s.remove(victim.Back())
	}
	if own = s.holders[holder]; own == nil {
		own = list.New()
		s.holders[holder] = own
	}
	s.byID[ss.id] = own.PushFront(ss)
	s.total++
	return *ss
}

// largest is the list of the holder holding the most sessions; of
// several, the one whose least recently used session is the oldest.
func (s *sessions) largest() *list.List {
	var max *list.List
	for _, l := range s.holders {
		if max == nil || l.Len() > max.Len() ||
			l.Len() == max.Len() && l.Back().Value.(*session).used < max.Back().Value.(*session).used {
			max = l
		}
	}
	return max
}

// remove forgets the session of e, and its holder's list once empty.
func (s *sessions) remove(e *list.Element) {
	ss := e.Value.(*session)
	l := s.holders[ss.holder]
	l.Remove(e)
	if l.Len() == 0 {
		delete(s.holders, ss.holder)
	}
	delete(s.byID, ss.id)
	s.total--
}

// find is owner's session of id, which is now its most recently used;
// another owner's is not found. The session stays its opener's holder's,
// wherever it is used from.
func (s *sessions) find(id string, owner core.Owner) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok || e.Value.(*session).owner != owner {
		return session{}, false
	}
	s.clock++
	ss := e.Value.(*session)
	ss.used = s.clock
	s.holders[ss.holder].MoveToFront(e)
	return *ss, true
}

// declare records the elicitation modes the client of session id
// declared in its initialize.
func (s *sessions) declare(id string, m modes) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[id]; ok {
		e.Value.(*session).modes = m
	}
}

// end forgets owner's session of id, reporting whether there was one.
func (s *sessions) end(id string, owner core.Owner) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if ok = ok && e.Value.(*session).owner == owner; ok {
		s.remove(e)
	}
	return ok
}

// len is how many sessions the store holds.
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

package mcp

import (
	"container/list"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// sessions are the sessions of the 2025 revisions, one per initialize,
// named by the Mcp-Session-Id the door issued: a bounded in-memory store of
// at most limit (limits.mcp_sessions). Past it the least recently used is
// forgotten; its client, answered 404, initializes again, as MCP says a
// client must. Sessions live in one process: behind several replicas a
// session is found only on the one that opened it (2026-07-28 has none,
// and any replica answers any of its requests).
type sessions struct {
	limit int

	mu   sync.Mutex
	byID map[string]*list.Element // of *session
	lru  *list.List               // most recently used first
}

// session is one initialized client: the protocol version it negotiated,
// and who opened it (ownerOf).
type session struct {
	id      string
	version string
	owner   [sha256.Size]byte
}

// ownerOf is who a request comes from, as far as the door can tell: the
// hash of its Authorization header (none: the hash of nothing). A session
// answers only requests of its owner, as MCP's security practices ask
// (bind a session to the user), so a session id seen by someone else is
// no way in with another credential. The credential itself is never kept.
func ownerOf(h http.Header) [sha256.Size]byte {
	return sha256.Sum256([]byte(strings.Join(h.Values("Authorization"), "\n")))
}

func newSessions(limit int) *sessions {
	if limit < 1 {
		limit = 1
	}
	return &sessions{limit: limit, byID: make(map[string]*list.Element), lru: list.New()}
}

// open is a new session of version for owner, with a fresh random id (a
// version 4 UUID: 122 random bits, not to be guessed).
func (s *sessions) open(version string, owner [sha256.Size]byte) session {
	ss := &session{id: core.NewID(), version: version, owner: owner}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.lru.Len() >= s.limit {
		oldest := s.lru.Back()
		delete(s.byID, oldest.Value.(*session).id)
		s.lru.Remove(oldest)
	}
	s.byID[ss.id] = s.lru.PushFront(ss)
	return *ss
}

// find is owner's session of id, which is now the most recently used;
// another owner's is not found.
func (s *sessions) find(id string, owner [sha256.Size]byte) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok || e.Value.(*session).owner != owner {
		return session{}, false
	}
	s.lru.MoveToFront(e)
	return *e.Value.(*session), true
}

// end forgets owner's session of id, reporting whether there was one.
func (s *sessions) end(id string, owner [sha256.Size]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if ok = ok && e.Value.(*session).owner == owner; ok {
		delete(s.byID, id)
		s.lru.Remove(e)
	}
	return ok
}

// len is how many sessions the store holds.
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

package mcp

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/state"
)

// shared are the sessions of the 2025 revisions kept in Redis
// (state.store: redis), for every replica: a session opened on one is
// found on each, DELETE on one ends it on all, and the replicas share one
// pool of at most limit (limits.mcp_sessions), fair between holders
// (core.HolderOf) by the rule of the memory store (sessions). The keys,
// under the store's prefix:
//
//	mcp:session:{id}        hash {owner: hex, holder: hex, version, modes}:
//	                        one session, answering its owner, its client's
//	                        elicitation modes
//	mcp:holder:{holderhex}  zset id → use clock: a holder's sessions, LRU
//	                        first
//	mcp:holders             zset holderhex → its sessions: who holds how
//	                        many
//	mcp:size:{n}            zset holderhex → the use clock of its LRU
//	                        session, of the holders holding n: the victim
//	                        when several hold the most is the first of
//	                        one, not a search
//	mcp:count               string: the sessions in all
//	mcp:clock               string: counts uses, a session's score its last
//	mcp:cancel              channel "{session}\n{request id}": a
//	                        notifications/cancelled for a request another
//	                        replica serves (nothing stored)
//	mcp:answer              channel "{session}\n{request id}\n{response}": a
//	                        client's response to an elicitation/create
//	                        another replica sent (nothing stored)
//
// None has a TTL: the count bounds them as the memory store's limit bounds
// it (a session lives until DELETE or until the cap forgets it, as in
// memory): at most limit sessions, as many holders' zsets, a size zset per
// distinct n (under sqrt(2 limit) of them), and three keys. Each of open,
// find and end is one Lua script, so one round trip that no other
// replica's can interleave with, each step O(log n): the cap and its
// fairness hold across replicas. The scripts name keys they compute (the
// victim holder's, a found session's holder's), so they need one Redis,
// not a cluster.
type shared struct {
	store *state.Redis
	limit int
	// holders, count and clock are the keys every script uses; holderKey,
	// sizeKey and sessionKey the prefixes of the others.
	holders, count, clock, holderKey, sizeKey, sessionKey string
	// cancels is the channel of the notifications/cancelled every replica
	// hears (cancel.go): a session's requests may run on any replica.
	cancels string
	// answers is the channel of the clients' responses to elicitations
	// (ask.go): the call that asked may run on another replica.
	answers string

	mu       sync.Mutex
	unlisten func() // nil until the replica listens on cancels and answers
}

func newShared(store *state.Redis, limit int) *shared {
	if limit < 1 {
		limit = 1
	}
	return &shared{store: store, limit: limit,
		holders: store.Key("mcp", "holders"), count: store.Key("mcp", "count"), clock: store.Key("mcp", "clock"),
		holderKey: store.Key("mcp", "holder", ""), sizeKey: store.Key("mcp", "size", ""), sessionKey: store.Key("mcp", "session", ""),
		cancels: store.Key("mcp", "cancel"), answers: store.Key("mcp", "answer")}
}

// listen subscribes this replica to the cancels channel, once: each
// message names a session and a request id, which in ends if this
// replica serves that request. The first 2025 tools/call listens, before
// it is held, so a cancel published once it runs reaches it.
func (s *shared) listen(ctx context.Context, in *inflight, w *waiting) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unlisten != nil {
		return nil
	}
	ps := s.store.PubSub()
	unlisten, err := ps.Subscribe(ctx, s.cancels, func(msg string, lost bool) {
		if session, id, ok := strings.Cut(msg, "\n"); ok && !lost {
			in.cancel(session, json.RawMessage(id))
		}
	})
	if err != nil {
		return err
	}
	unanswer, err := ps.Subscribe(ctx, s.answers, func(msg string, lost bool) {
		session, rest, ok := strings.Cut(msg, "\n")
		id, body, ok2 := strings.Cut(rest, "\n")
		if ok && ok2 && !lost {
			w.deliver(callKey{session, id}, readResponse([]byte(body)))
		}
	})
	if err != nil {
		unlisten()
		return err
	}
	s.unlisten = func() { unlisten(); unanswer() }
	return nil
}

// answer tells every replica the client's response body to session's
// request id, an elicitation this replica did not send: one round trip.
func (s *shared) answer(ctx context.Context, session, id string, body []byte) error {
	if err := s.store.Client().Publish(ctx, s.answers, session+"\n"+id+"\n"+string(body)).Err(); err != nil {
		return s.store.Fail("passing on an MCP response", err)
	}
	return nil
}

// cancel tells every replica to end session's request id (the session's
// owner sent notifications/cancelled for it, and this replica does not
// serve it): one round trip.
func (s *shared) cancel(ctx context.Context, session string, id json.RawMessage) error {
	if err := s.store.Client().Publish(ctx, s.cancels, session+"\n"+string(id)).Err(); err != nil {
		return s.store.Fail("cancelling an MCP request", err)
	}
	return nil
}

// close stops listening.
func (s *shared) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unlisten != nil {
		s.unlisten()
		s.unlisten = nil
	}
}

// scriptPrelude starts every script: the keys and arguments each is given
// (run), and place, which keeps mcp:holders and mcp:size:{n} true.
const scriptPrelude = `
local holders, count, clock, mine, sess = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local pHolder, pSize, pSession, me, id, holder = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]

local function held(h)
  return tonumber(redis.call('ZSCORE', holders, h) or '0')
end

-- place files holder h, which held before sessions and holds n now, under
-- n: in holders, and in the rank of those holding n by the use of their
-- least recently used session; a holder holding none is in neither.
local function place(h, before, n)
  if before > 0 and before ~= n then redis.call('ZREM', pSize .. before, h) end
  local lru = redis.call('ZRANGE', pHolder .. h, 0, 0, 'WITHSCORES')
  if n <= 0 or lru[2] == nil then
    redis.call('ZREM', holders, h)
    redis.call('ZREM', pSize .. before, h)
    return
  end
  redis.call('ZADD', holders, n, h)
  redis.call('ZADD', pSize .. n, lru[2], h)
end
`

// openScript opens session id of version ARGV[7] for owner me, held by
// holder (its zset mine): while the count is at the limit ARGV[8] (a
// replica with a lower limit may find more), it first forgets one, as
// sessions.open does: a holder holding its fair share or more (limit /
// the holders, itself counted) its own least recently used, else the
// holder holding the most (of several, the one whose least recently used
// is the oldest: the first of their size's rank).
var openScript = redis.NewScript(scriptPrelude + `
local limit = tonumber(ARGV[8])
local total = tonumber(redis.call('GET', count) or '0')
while total >= limit do
  local own = held(holder)
  local n_holders = redis.call('ZCARD', holders)
  if own == 0 then n_holders = n_holders + 1 end
  local victim, n = holder, own
  if own * n_holders < limit then
    local top = redis.call('ZREVRANGE', holders, 0, 0, 'WITHSCORES')
    if top[1] == nil then total = 0 break end
    n = tonumber(top[2])
    victim = redis.call('ZRANGE', pSize .. n, 0, 0)[1] or top[1]
  end
  local gone = redis.call('ZPOPMIN', pHolder .. victim)
  if gone[1] == nil then
    place(victim, n, 0)
  else
    redis.call('DEL', pSession .. gone[1])
    total = total - 1
    place(victim, n, n - 1)
  end
end
redis.call('HSET', sess, 'owner', me, 'holder', holder, 'version', ARGV[7], 'modes', ARGV[9])
redis.call('ZADD', mine, redis.call('INCR', clock), id)
local n = held(holder)
place(holder, n, n + 1)
redis.call('SET', count, total + 1)
return 1
`)

// findScript is the version of session id when owner me opened it and the
// elicitation modes its client declared, now its most recently used in
// its holder's zset; nil for one not there or another owner's.
var findScript = redis.NewScript(scriptPrelude + `
local s = redis.call('HMGET', sess, 'owner', 'version', 'holder', 'modes')
if s[1] ~= me or not s[3] then return false end
redis.call('ZADD', pHolder .. s[3], 'XX', redis.call('INCR', clock), id)
local n = held(s[3])
place(s[3], n, n)
return {s[2], s[4] or '0'}
`)

// endScript forgets session id when owner me opened it: 1, else 0.
var endScript = redis.NewScript(scriptPrelude + `
local s = redis.call('HMGET', sess, 'owner', 'holder')
if s[1] ~= me or not s[2] then return 0 end
redis.call('DEL', sess)
redis.call('ZREM', pHolder .. s[2], id)
local n = held(s[2])
place(s[2], n, n - 1)
if tonumber(redis.call('DECR', count)) < 0 then redis.call('SET', count, 0) end
return 1
`)

// run runs script for owner's session id, counted against holder (of
// version, for open): one round trip (two when Redis has not loaded it
// yet: NOSCRIPT, then EVAL).
func (s *shared) run(ctx context.Context, script *redis.Script, id, version string, owner core.Owner, holder core.Holder, m modes) *redis.Cmd {
	o, h := hex.EncodeToString(owner[:]), hex.EncodeToString(holder[:])
	return script.Run(ctx, s.store.Client(),
		[]string{s.holders, s.count, s.clock, s.holderKey + h, s.sessionKey + id},
		s.holderKey, s.sizeKey, s.sessionKey, o, id, h, version, s.limit, int(m))
}

// open is a new session of version for owner, counted against holder,
// with a fresh random id, in one round trip; at the limit it first
// forgets one (openScript).
func (s *shared) open(ctx context.Context, version string, owner core.Owner, holder core.Holder, m modes) (session, error) {
	ss := session{id: core.NewID(), version: version, owner: owner, holder: holder, modes: m}
	if err := s.run(ctx, openScript, ss.id, version, owner, holder, m).Err(); err != nil {
		return session{}, s.store.Fail("opening an MCP session", err)
	}
	return ss, nil
}

// idLen is the length of the ids the door issues (core.NewID's UUIDs):
// an id of another length is no session, found without a round trip, so
// a caller's megabyte of header is never sent to Redis as a key.
const idLen = 36

// find is owner's session of id, now its most recently used, in one round
// trip; another owner's is not found, as an unknown one.
func (s *shared) find(ctx context.Context, id string, owner core.Owner) (session, bool, error) {
	if len(id) != idLen {
		return session{}, false, nil
	}
	v, err := s.run(ctx, findScript, id, "", owner, core.Holder{}, 0).StringSlice()
	if errors.Is(err, redis.Nil) {
		return session{}, false, nil
	}
	if err != nil || len(v) != 2 {
		return session{}, false, s.store.Fail("finding MCP session "+strconv.Quote(id), err)
	}
	m, _ := strconv.Atoi(v[1])
	return session{id: id, version: v[0], owner: owner, modes: modes(m)}, true, nil
}

// end forgets owner's session of id on every replica, reporting whether
// there was one, in one round trip.
func (s *shared) end(ctx context.Context, id string, owner core.Owner) (bool, error) {
	if len(id) != idLen {
		return false, nil
	}
	n, err := s.run(ctx, endScript, id, "", owner, core.Holder{}, 0).Int()
	if err != nil {
		return false, s.store.Fail("ending MCP session "+strconv.Quote(id), err)
	}
	return n == 1, nil
}

// storeFailed is the answer to a request that needs a session while the
// store fails it: 503, a JSON-RPC error to the request's id (-32603, an
// internal error: the request was fine) saying state.Message, its log
// line's reason state.Reason and its error err.
func storeFailed(id json.RawMessage, err error) *core.Answer {
	a := reply(id, http.StatusServiceUnavailable, nil, &rpcError{code: codeInternal, message: state.Message})
	a.Outcome, a.Reason, a.Err = metrics.NotReady, state.Reason, err
	return a
}

package mcp

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/state"
)

// shared are the sessions of the 2025 revisions kept in Redis
// (state.store: redis), for every replica: a session opened on one is
// found on each, DELETE on one ends it on all, and the replicas share one
// pool of at most limit (limits.mcp_sessions), fair between owners by the
// rule of the memory store (sessions). The keys, under the store's
// prefix:
//
//	mcp:session:{id}      hash {owner: hex, version}: one session
//	mcp:owner:{ownerhex}  zset id → use clock: an owner's sessions, LRU first
//	mcp:owners            zset ownerhex → its sessions: who holds how many
//	mcp:count             string: the sessions in all
//	mcp:clock             string: counts uses, a session's score its last
//
// None has a TTL: the count bounds them as the memory store's limit bounds
// it (a session lives until DELETE or until the cap forgets it, as in
// memory). Each of open, find and end is one Lua script, so one round
// trip that no other replica's can interleave with: the cap and its
// fairness hold across replicas. The scripts name keys they compute (the
// victim owner's, its session's), so they need one Redis, not a cluster.
type shared struct {
	store *state.Redis
	limit int
	// clock, count and owners are the keys every script uses; ownerKey
	// and sessionKey the prefixes of the others.
	clock, count, owners, ownerKey, sessionKey string
}

func newShared(store *state.Redis, limit int) *shared {
	if limit < 1 {
		limit = 1
	}
	return &shared{store: store, limit: limit,
		clock: store.Key("mcp", "clock"), count: store.Key("mcp", "count"), owners: store.Key("mcp", "owners"),
		ownerKey: store.Key("mcp", "owner", ""), sessionKey: store.Key("mcp", "session", "")}
}

// openScript opens session ARGV[4] of version ARGV[3] for owner ARGV[2]:
// while the count is at the limit ARGV[1] (a replica with a lower limit
// may find more), it first forgets one, as sessions.open does: an owner
// holding its fair share or more (limit / the owners holding sessions,
// itself counted) its own least recently used, else the owner holding the
// most (of several, the one whose least recently used is the oldest).
// KEYS: clock, count, owners, the owner's zset, the session's hash; ARGV[5]
// and ARGV[6] the prefixes of owner and session keys.
var openScript = redis.NewScript(`
local limit = tonumber(ARGV[1])
local total = tonumber(redis.call('GET', KEYS[2]) or '0')
while total >= limit do
  local own = tonumber(redis.call('ZSCORE', KEYS[3], ARGV[2]) or '0')
  local holders = redis.call('ZCARD', KEYS[3])
  if own == 0 then holders = holders + 1 end
  local victim = ARGV[2]
  if own * holders < limit then
    local top = redis.call('ZREVRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    if top[1] == nil then total = 0 break end
    local oldest
    victim = top[1]
    for _, o in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], top[2], top[2])) do
      local lru = redis.call('ZRANGE', ARGV[5] .. o, 0, 0, 'WITHSCORES')
      if lru[2] ~= nil and (oldest == nil or tonumber(lru[2]) < oldest) then
        oldest, victim = tonumber(lru[2]), o
      end
    end
  end
  local gone = redis.call('ZPOPMIN', ARGV[5] .. victim)
  if gone[1] ~= nil then
    redis.call('DEL', ARGV[6] .. gone[1])
    total = total - 1
  end
  if gone[1] == nil or tonumber(redis.call('ZINCRBY', KEYS[3], -1, victim)) <= 0 then
    redis.call('ZREM', KEYS[3], victim)
  end
end
local now = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[5], 'owner', ARGV[2], 'version', ARGV[3])
redis.call('ZADD', KEYS[4], now, ARGV[4])
redis.call('ZINCRBY', KEYS[3], 1, ARGV[2])
redis.call('SET', KEYS[2], total + 1)
return 1
`)

// findScript is the version of session ARGV[2] when owner ARGV[1] opened
// it, now its most recently used; nil for one not there or another
// owner's. KEYS: the session's hash, the owner's zset, clock.
var findScript = redis.NewScript(`
local s = redis.call('HMGET', KEYS[1], 'owner', 'version')
if s[1] ~= ARGV[1] then return false end
redis.call('ZADD', KEYS[2], 'XX', redis.call('INCR', KEYS[3]), ARGV[2])
return s[2]
`)

// endScript forgets session ARGV[2] when owner ARGV[1] opened it: 1, else
// 0. KEYS: the session's hash, the owner's zset, owners, count.
var endScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
if tonumber(redis.call('ZINCRBY', KEYS[3], -1, ARGV[1])) <= 0 then
  redis.call('ZREM', KEYS[3], ARGV[1])
end
if tonumber(redis.call('DECR', KEYS[4])) < 0 then redis.call('SET', KEYS[4], 0) end
return 1
`)

// open is a new session of version for owner, with a fresh random id, in
// one round trip; at the limit it first forgets one (openScript).
func (s *shared) open(ctx context.Context, version string, owner core.Owner) (session, error) {
	o := hex.EncodeToString(owner[:])
	ss := session{id: core.NewID(), version: version, owner: owner}
	err := openScript.Run(ctx, s.store.Client(),
		[]string{s.clock, s.count, s.owners, s.ownerKey + o, s.sessionKey + ss.id},
		s.limit, o, version, ss.id, s.ownerKey, s.sessionKey).Err()
	if err != nil {
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
	o := hex.EncodeToString(owner[:])
	v, err := findScript.Run(ctx, s.store.Client(), []string{s.sessionKey + id, s.ownerKey + o, s.clock}, o, id).Text()
	if errors.Is(err, redis.Nil) {
		return session{}, false, nil
	}
	if err != nil {
		return session{}, false, s.store.Fail("finding MCP session "+strconv.Quote(core.Clip(id)), err)
	}
	return session{id: id, version: v, owner: owner}, true, nil
}

// end forgets owner's session of id on every replica, reporting whether
// there was one, in one round trip.
func (s *shared) end(ctx context.Context, id string, owner core.Owner) (bool, error) {
	if len(id) != idLen {
		return false, nil
	}
	o := hex.EncodeToString(owner[:])
	n, err := endScript.Run(ctx, s.store.Client(), []string{s.sessionKey + id, s.ownerKey + o, s.owners, s.count}, o, id).Int()
	if err != nil {
		return false, s.store.Fail("ending MCP session "+strconv.Quote(core.Clip(id)), err)
	}
	return n == 1, nil
}

// storeFailed is the answer to a request that needs a session while the
// store fails it: 503, a JSON-RPC error to the request's id (-32603, an
// internal error: the request was fine) saying state.Message, its log
// line's reason state.Reason.
func storeFailed(id json.RawMessage) *core.Answer {
	a := reply(id, http.StatusServiceUnavailable, nil, &rpcError{code: codeInternal, message: state.Message})
	a.Outcome, a.Reason = metrics.NotReady, state.Reason
	return a
}

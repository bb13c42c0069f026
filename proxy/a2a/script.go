package a2a

import "github.com/redis/go-redis/v9"

// writeScript is every write of a task's status in Redis after it was
// opened, each one atomic, so the task's hash, its artifact's list, its
// events' seq numbers and the store's byte count never disagree:
//
//   - "run": the replica running the task appends its events (the parts
//     to the list, the batch published with its first seq number), and
//     sets the state given (ending it when terminal), unless the task is
//     terminal already (canceled by another replica, or failed when its
//     lease lapsed): then nothing is written, and the answer says so.
//   - "cancel": the task ends canceled unless it is terminal or not the
//     owner's; the replica running it is told on its cancel channel.
//   - "lease": the task ends failed if it is not terminal and its lease
//     is past.
//   - "forget": the task is deleted (a message refused before the agent
//     was called).
//   - "park": as "run", for a task whose agent asked a question and that
//     now waits (input-required, auth-required): the question, the
//     task's history and its deadline (in lease: limits.questions.wait)
//     are written with its events and state (ARGV after the parts).
//   - "claim": a waiting task is taken by the replica answering it:
//     working again, its replica and lease that replica's, its history
//     the one given (with the answer; ARGV 10-12: replica, lease,
//     history), its status published; a task not waiting is left as it
//     is, its state answered.
//   - "expire": a waiting task ends failed with the message given, its
//     deadline past or not (a replica's waiting tasks past
//     limits.questions.waiting); any other is left as it is.
//
// Ending a task publishes its final status, gives its keys the TTL, counts
// its bytes, and deletes ended tasks older than the TTL and then the
// oldest ended tasks while the count is over the cap.
//
// KEYS: the task's hash, its parts list, its owner's index, the byte
// counter, the ended tasks (a zset by end time), their costs (a hash: id →
// "cost ownerhex").
// ARGV: mode, now (unix ms), ttl (s), cap (bytes), the keys' prefix
// ("p:a2a:"), the task id, the owner (hex), the state ("" none), its
// message, the artifact's size, dropped ("1"), the number of parts, the
// batch's events (JSON array, "" none), their number, the parts.
//
// It returns {state, message, updated, seq, ended}: the task as it is
// after, ended "1" when this call ended it (for "claim": claimed it);
// state "" for no such task (of the owner's).
var writeScript = redis.NewScript(`
local h, parts, owners, bytes, ended, costs = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local mode, now, ttl, cap, prefix, id, owner = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7]
local function terminal(s) return s == 'completed' or s == 'failed' or s == 'canceled' end
local function waiting(s) return s == 'input-required' or s == 'auth-required' end
local function forget(x)
  local c = redis.call('HGET', costs, x)
  redis.call('DEL', prefix .. 'task:' .. x, prefix .. 'parts:' .. x)
  redis.call('ZREM', ended, x)
  if c then
    local sp = string.find(c, ' ')
    redis.call('ZREM', prefix .. 'owner:' .. string.sub(c, sp + 1), x)
    redis.call('HDEL', costs, x)
    return redis.call('DECRBY', bytes, tonumber(string.sub(c, 1, sp - 1)))
  end
  return tonumber(redis.call('GET', bytes) or '0')
end
local f = redis.call('HMGET', h, 'state', 'message', 'updated', 'seq', 'owner', 'context', 'size', 'replica')
local st, msg, upd, seq = f[1], f[2] or '', f[3] or '0', tonumber(f[4] or '0')
if mode == 'forget' then
  if st then
    redis.call('ZREM', owners, id)
    forget(id)
  end
  return {'', '', '0', '0', '0'}
end
if not st or (mode == 'cancel' and f[5] ~= owner) then return {'', '', '0', '0', '0'} end
if terminal(st) then return {st, msg, upd, tostring(seq), '0'} end
if mode == 'claim' or mode == 'expire' then
  if f[5] ~= owner or not waiting(st) then return {st, msg, upd, tostring(seq), '0'} end
end
if mode == 'claim' then
  upd = tostring(now)
  seq = seq + 1
  redis.call('HSET', h, 'state', 'working', 'message', '', 'updated', upd, 'seq', seq, 'replica', ARGV[10], 'lease', ARGV[11], 'history', ARGV[12], 'question', '')
  redis.call('ZADD', owners, now, id)
  redis.call('PUBLISH', prefix .. 'events:' .. id, seq .. ' ' .. cjson.encode({{s = true, st = 'working', m = '', u = now}}))
  return {'working', '', upd, tostring(seq), '1'}
end
if mode == 'lease' then
  local lease = tonumber(redis.call('HGET', h, 'lease') or '0')
  if lease >= now then return {st, msg, upd, tostring(seq), '0'} end
end
local ns, nm = ARGV[8], ARGV[9]
if mode == 'run' or mode == 'park' then
  local n = tonumber(ARGV[12])
  if mode == 'park' then
    local deadline = tonumber(ARGV[17 + n])
    redis.call('HSET', h, 'question', ARGV[15 + n], 'history', ARGV[16 + n], 'lease', deadline)
    -- kept past its deadline by the TTL, however long it waits
    redis.call('PEXPIREAT', h, deadline + ttl * 1000)
    if redis.call('EXISTS', parts) == 1 then redis.call('PEXPIREAT', parts, deadline + ttl * 1000) end
  end
  if ARGV[11] == '1' then
    redis.call('DEL', parts)
  elseif n > 0 then
    for i = 15, 14 + n do redis.call('RPUSH', parts, ARGV[i]) end
    redis.call('EXPIRE', parts, ttl)
  end
  redis.call('HSET', h, 'size', ARGV[10], 'dropped', ARGV[11])
  f[7] = ARGV[10]
  local ne = tonumber(ARGV[14])
  if ne > 0 then
    redis.call('PUBLISH', prefix .. 'events:' .. id, (seq + 1) .. ' ' .. ARGV[13])
    seq = seq + ne
  end
  redis.call('HSET', h, 'seq', seq)
end
if ns == '' or ns == st then return {st, msg, upd, tostring(seq), '0'} end
upd = tostring(now)
redis.call('ZADD', owners, now, id)
if not terminal(ns) then
  redis.call('HSET', h, 'state', ns, 'message', nm, 'updated', upd)
  return {ns, nm, upd, tostring(seq), '0'}
end
seq = seq + 1
redis.call('HSET', h, 'state', ns, 'message', nm, 'updated', upd, 'seq', seq)
redis.call('PUBLISH', prefix .. 'events:' .. id, seq .. ' ' .. cjson.encode({{s = true, st = ns, m = nm, u = now}}))
if mode == 'cancel' and f[8] then
  redis.call('PUBLISH', prefix .. 'cancel:' .. f[8], id)
end
local cost = 512 + #id + #(f[6] or '') + #nm + tonumber(f[7] or '0') + #(redis.call('HGET', h, 'history') or '')
redis.call('EXPIRE', h, ttl)
redis.call('EXPIRE', parts, ttl)
redis.call('EXPIRE', owners, ttl)
redis.call('ZADD', ended, now, id)
redis.call('HSET', costs, id, cost .. ' ' .. (f[5] or ''))
local total = redis.call('INCRBY', bytes, cost)
for _, x in ipairs(redis.call('ZRANGEBYSCORE', ended, '-inf', now - ttl * 1000, 'LIMIT', 0, 1000)) do
  total = forget(x)
end
while total > cap do
  local oldest = redis.call('ZRANGE', ended, 0, 0)
  if #oldest == 0 then break end
  total = forget(oldest[1])
end
return {ns, nm, upd, tostring(seq), '1'}
`)

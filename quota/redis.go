package quota

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-dev/sidecar/state"
)

// take is GCRA in Redis, on the server's clock (replicas' clocks differ):
// KEYS[1] holds the caller's theoretical arrival time in microseconds,
// expiring when it lapses. ARGV: interval and window in microseconds.
// It returns {allowed, remaining, reset µs, retry µs}.
var take = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local ahead = tat - now
local nxt = ahead + interval
if nxt > window then
  return {0, 0, ahead, nxt - window}
end
redis.call('SET', KEYS[1], tat + interval, 'PX', math.ceil(nxt / 1000))
return {1, math.floor((window - nxt) / interval), nxt, 0}
`)

// Redis counts the rate in the state store for every replica, one round
// trip a call, under the key {prefix}:quota:{caller}.
type Redis struct{ Store *state.Redis }

// Take is GCRA of the caller key in Redis.
func (r Redis) Take(ctx context.Context, key string, interval, window time.Duration) (Decision, error) {
	v, err := take.Run(ctx, r.Store.Client(), []string{r.Store.Key("quota", key)}, interval.Microseconds(), window.Microseconds()).Int64Slice()
	if err != nil {
		return Decision{}, r.Store.Fail("counting a caller's calls", err)
	}
	return Decision{Allowed: v[0] == 1, Remaining: int(v[1]), Reset: time.Duration(v[2]) * time.Microsecond,
		RetryAfter: time.Duration(v[3]) * time.Microsecond}, nil
}

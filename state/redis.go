// Package state is where the state that must outlive one replica is kept
// with state.store: redis: the Redis client, its bounds, and the checks of
// its reachability at start and by /healthz.
package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/sidecar-dev/sidecar/config"
)

// The bounds of every round trip to Redis: a call that needs the store
// fails within them instead of hanging on a server that is gone
// (docs/config.md says them).
const (
	DialTimeout  = 2 * time.Second
	ReadTimeout  = 2 * time.Second
	WriteTimeout = 2 * time.Second
)

// go-redis logs its pool's failures in plain text on stderr, where the
// sidecar's lines are JSON: the failures reach the sidecar as errors of
// the commands instead, and are logged or answered there.
func init() { redis.SetLogger(&logging.VoidLogger{}) }

// Redis is the client of the state.redis server.
type Redis struct {
	client *redis.Client
	// host is the URL's host:port, the one part of it a message shows.
	host string
	// Prefix starts every key (state.redis.key_prefix).
	Prefix string
	// TaskTTL and Lease are state.redis.task_ttl and state.redis.lease.
	TaskTTL, Lease time.Duration
	// Replica names this process among the replicas sharing the store:
	// random, new at every start.
	Replica string

	psOnce sync.Once
	ps     *PubSub // the shared Pub/Sub connection (pubsub.go), once asked
}

// Open builds the client of st's server, its URL's ${NAME} references
// taken from getenv. It does not connect: Ping does. Its errors name the
// URL's host at most, never its password.
func Open(st config.State, getenv func(string) string) (*Redis, error) {
	raw, missing := st.Redis.ResolveURL(getenv)
	if len(missing) > 0 {
		return nil, fmt.Errorf("resolving state.redis.url: %s unset or empty (want a redis:// or rediss:// URL in it)", strings.Join(missing, ", "))
	}
	if err := config.CheckRedisURL(raw); err != nil {
		return nil, fmt.Errorf("resolving state.redis.url: %w", err)
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("resolving state.redis.url: %s", hidePassword(err.Error(), raw))
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = DialTimeout, ReadTimeout, WriteTimeout
	// One retry at most (go-redis' default is 3): it bounds a command to
	// two attempts' timeouts while the server is gone.
	opts.MaxRetries = 1
	// One dial per attempt (go-redis' default is 5, 100 ms apart): a
	// server that is gone costs DialTimeout, not five of it.
	opts.DialerRetries = 1
	// A ctx deadline shorter than the bounds wins (a /healthz probe's).
	opts.ContextTimeoutEnabled = true
	// Identify as nothing: CLIENT SETINFO is refused by older servers and
	// by Valkey's, and costs a round trip per connection.
	opts.DisableIdentity = true
	client := redis.NewClient(opts)
	client.AddHook(spans{addr: opts.Addr})
	return &Redis{client: client, host: opts.Addr, Prefix: st.Redis.KeyPrefix, TaskTTL: st.Redis.TaskTTL,
		Lease: st.Redis.Lease, Replica: replicaID()}, nil
}

// Client is the go-redis client, for the doors' commands: each bounded as
// Open says, each a span of the call whose ctx it is given.
func (r *Redis) Client() *redis.Client { return r.client }

// Key is the key of parts under the prefix: Key("a2a", "task", id) is
// "{prefix}:a2a:task:{id}".
func (r *Redis) Key(parts ...string) string {
	return r.Prefix + ":" + strings.Join(parts, ":")
}

// replicaID is 16 random hex digits.
func replicaID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Host is the server's host:port, as messages name it.
func (r *Redis) Host() string { return r.host }

// Ping checks that the server answers, within ctx and the bounds.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("pinging redis at %s: %w", r.host, err)
	}
	return nil
}

// Close closes the client's connections, the Pub/Sub one too.
func (r *Redis) Close() error {
	r.PubSub().close()
	if err := r.client.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("closing the redis client: %w", err)
	}
	return nil
}

// hidePassword takes the URL's password out of a message, should a
// library quote it.
func hidePassword(msg, raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return msg
	}
	if p, ok := u.User.Password(); ok && p != "" {
		msg = strings.ReplaceAll(msg, p, "xxxxx")
	}
	return msg
}

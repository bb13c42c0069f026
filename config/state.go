package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The stores of state.store.
const (
	// StoreMemory keeps A2A tasks and MCP sessions in the process: one
	// replica needs nothing more. The default.
	StoreMemory = "memory"
	// StoreRedis keeps them in Redis, so that any replica answers any call.
	StoreRedis = "redis"
)

// DefaultKeyPrefix is state.redis.key_prefix when the file sets none.
const DefaultKeyPrefix = "sidecar"

// The defaults of state.redis.task_ttl and state.redis.lease.
const (
	// DefaultTaskTTL is how long an ended A2A task stays in the store.
	DefaultTaskTTL = 24 * time.Hour
	// DefaultLease is how long a running A2A task's replica may go
	// silent before the other replicas take the task as failed.
	DefaultLease = 15 * time.Second
	// MinLease is the shortest lease: it is renewed a third of it
	// apart, and a renewal is a round trip to Redis.
	MinLease = time.Second
)

// State is where the state that outlives one call lives (state).
type State struct {
	// Store is StoreMemory or StoreRedis. Default: StoreMemory.
	Store string
	// Redis is the store's server when Store is StoreRedis.
	Redis RedisState
	// Line is where the section is declared, for messages; 0 when the
	// file has none.
	Line int
}

// RedisState is state.redis.
type RedisState struct {
	// URL is the server's redis:// or rediss:// URL as written: a ${NAME}
	// reference to the environment (resolved by ResolveURL when the
	// sidecar starts), or a literal without a password, which the file
	// must never hold. User, password, TLS (rediss) and database are as
	// the resolved URL says.
	URL string
	// KeyPrefix starts every key the sidecar writes, so that deployments
	// can share a server. Default: DefaultKeyPrefix.
	KeyPrefix string
	// TaskTTL is how long an ended A2A task is kept (tasks/get, list)
	// after it ended. Default: DefaultTaskTTL.
	TaskTTL time.Duration
	// Lease is how long a replica's hold of a running A2A task lasts
	// unless renewed (it is, a third of it apart, while the task runs):
	// a task whose replica died shows failed on the others within it.
	// Default: DefaultLease.
	Lease time.Duration
	// Line is where the redis section is declared, for messages.
	Line int
}

// ResolveURL is the URL with its ${NAME} references taken from getenv;
// missing names the variables that were unset or empty.
func (r RedisState) ResolveURL(getenv func(string) string) (resolved string, missing []string) {
	resolved = envRef.ReplaceAllStringFunc(r.URL, func(ref string) string {
		name := envRef.FindStringSubmatch(ref)[1]
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	return resolved, missing
}

// CheckRedisURL checks a resolved URL: redis:// or rediss://, a host, and
// a database number if it names one. Its message never shows the
// password.
func CheckRedisURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL (want redis://[user[:password]@]host[:port][/db] or rediss://…)")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("scheme %q is not redis or rediss (want redis://host:6379/0, or rediss:// for TLS)", u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%q names no host (want redis://host:6379/0)", u.Redacted())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q is not 1 to 65535", u.Redacted(), p)
		}
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return fmt.Errorf("%q: the path %q is not a database number (want /0, /1, …)", u.Redacted(), u.Path)
		}
	}
	return nil
}

// state decodes the state section.
func (p *parser) state(e entry, s *State) {
	if !p.mapping(e.val, e.name, "a mapping with store and redis") {
		return
	}
	s.Line = e.key.Line
	var storeLine int
	for _, f := range p.entries(e.val, e.name) {
		key := join(e.name, f.name)
		switch f.name {
		case "store":
			v, ok := p.scalar(f, key)
			if !ok {
				continue
			}
			if v != StoreMemory && v != StoreRedis {
				p.addf(f.val.Line, key, "unknown store %q (want %s or %s)", v, StoreMemory, StoreRedis)
				continue
			}
			s.Store, storeLine = v, f.val.Line
		case "redis":
			p.redisState(f, key, &s.Redis)
		default:
			p.unknown(f, e.name, "store", "redis")
		}
	}
	switch {
	case s.Redis.Line > 0 && s.Store != StoreRedis:
		p.addf(s.Redis.Line, join(e.name, "redis"), "set, but state.store is not redis (want store: redis beside it, or no redis section)")
	case s.Store == StoreRedis && s.Redis.URL == "":
		line := s.Redis.Line
		if line == 0 {
			line = storeLine
		}
		p.addf(line, join(e.name, "redis.url"), "missing: store redis needs the server (want redis: {url: \"${REDIS_URL}\"})")
	}
}

// redisState decodes state.redis.
func (p *parser) redisState(e entry, path string, r *RedisState) {
	if !p.mapping(e.val, path, "a mapping with url, key_prefix, task_ttl and lease") {
		return
	}
	r.Line = e.key.Line
	for _, f := range p.entries(e.val, path) {
		key := join(path, f.name)
		switch f.name {
		case "url":
			v, ok := p.scalar(f, key)
			if !ok {
				continue
			}
			if err := checkRedisURLAsWritten(v); err != nil {
				p.addf(f.val.Line, key, "%v", err)
				continue
			}
			r.URL = v
		case "key_prefix":
			v, ok := p.scalar(f, key)
			if !ok {
				continue
			}
			if v == "" || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
				p.addf(f.val.Line, key, "%q: want a non-empty prefix without spaces or control characters, e.g. sidecar", v)
				continue
			}
			r.KeyPrefix = v
		case "task_ttl", "lease":
			d, err := duration(f.val)
			if err != nil {
				p.addf(f.val.Line, key, "%v", err)
				continue
			}
			if f.name == "task_ttl" {
				if d < time.Minute {
					p.addf(f.val.Line, key, "%s is shorter than 1m: an ended task must outlive its caller's next tasks/get", d)
					continue
				}
				r.TaskTTL = d
				continue
			}
			if d < MinLease || d > 10*time.Minute {
				p.addf(f.val.Line, key, "%s is not 1s to 10m (want e.g. 15s: a dead replica's tasks show failed within it)", d)
				continue
			}
			r.Lease = d
		default:
			p.unknown(f, path, "url", "key_prefix", "task_ttl", "lease")
		}
	}
}

// checkRedisURLAsWritten accepts ${NAME} references (checked once
// resolved, when the sidecar starts) or a literal URL without a password:
// validate --print and sidecar dev show the file, so a password is only
// ever in the environment.
func checkRedisURLAsWritten(v string) error {
	if envRef.MatchString(v) {
		if strings.Contains(envRef.ReplaceAllString(v, ""), "${") {
			return fmt.Errorf("a \"${\" that is no reference (want \"${NAME}\", e.g. \"${REDIS_URL}\")")
		}
		return nil
	}
	if u, err := url.Parse(v); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			return fmt.Errorf("%q holds a password: a secret is never written in the file (want the URL in an environment variable, url: \"${REDIS_URL}\")", u.Redacted())
		}
	}
	return CheckRedisURL(v)
}

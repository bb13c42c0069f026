package config

import (
	"strings"
	"testing"
	"time"
)

// TestState: the state section decodes store and redis (memory and the
// prefix sidecar by default, and without the section), and is printed
// back with its URL as written.
func TestState(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       State
	}{
		{"none", minimal, State{Store: StoreMemory, Redis: RedisState{KeyPrefix: DefaultKeyPrefix, TaskTTL: DefaultTaskTTL, Lease: DefaultLease}}},
		{"memory", minimal + "state: {store: memory}\n", State{Store: StoreMemory, Redis: RedisState{KeyPrefix: DefaultKeyPrefix, TaskTTL: DefaultTaskTTL, Lease: DefaultLease}, Line: 3}},
		{"redis from the environment", minimal + "state: {store: redis, redis: {url: \"${REDIS_URL}\", key_prefix: sidecar}}\n",
			State{Store: StoreRedis, Redis: RedisState{URL: "${REDIS_URL}", KeyPrefix: "sidecar", TaskTTL: DefaultTaskTTL, Lease: DefaultLease, Line: 3}, Line: 3}},
		{"redis literal", minimal + "state:\n  store: redis\n  redis:\n    url: rediss://agent@cache.internal:6380/2\n    key_prefix: prod:agents\n    task_ttl: 2h\n    lease: 5s\n",
			State{Store: StoreRedis, Redis: RedisState{URL: "rediss://agent@cache.internal:6380/2", KeyPrefix: "prod:agents", TaskTTL: 2 * time.Hour, Lease: 5 * time.Second, Line: 5}, Line: 3}},
		{"default prefix", minimal + "state: {store: redis, redis: {url: \"redis://127.0.0.1\"}}\n",
			State{Store: StoreRedis, Redis: RedisState{URL: "redis://127.0.0.1", KeyPrefix: DefaultKeyPrefix, TaskTTL: DefaultTaskTTL, Lease: DefaultLease, Line: 3}, Line: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("sidecar.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if c.State != tt.want {
				t.Errorf("Parse(%q).State = %+v, want %+v", tt.yaml, c.State, tt.want)
			}
			again, err := Parse("printed.yaml", c.Expanded())
			if err != nil {
				t.Fatalf("the expanded map: %v\n%s", err, c.Expanded())
			}
			if again.State.Store != tt.want.Store || again.State.Redis.URL != tt.want.Redis.URL || again.State.Redis.KeyPrefix != tt.want.Redis.KeyPrefix ||
				again.State.Redis.TaskTTL != tt.want.Redis.TaskTTL || again.State.Redis.Lease != tt.want.Redis.Lease {
				t.Errorf("expanded and parsed again: %+v, want %+v\n%s", again.State, tt.want, c.Expanded())
			}
		})
	}
}

// TestStateProblems: an unknown store, a redis section without store:
// redis, store: redis without a URL, a URL of another scheme, one that
// does not parse, a literal with a password, an empty or spaced prefix and
// unknown keys are each refused, with the line; no message shows the
// password.
func TestStateProblems(t *testing.T) {
	tests := []struct{ name, section, want string }{
		{"unknown store", "{store: memcached}", `sidecar.yaml:3: state.store: unknown store "memcached" (want memory or redis)`},
		{"redis without store", "{redis: {url: \"${REDIS_URL}\"}}", `sidecar.yaml:3: state.redis: set, but state.store is not redis`},
		{"redis beside memory", "\n  store: memory\n  redis: {url: \"${REDIS_URL}\"}", `sidecar.yaml:5: state.redis: set, but state.store is not redis`},
		{"no url", "{store: redis}", `sidecar.yaml:3: state.redis.url: missing: store redis needs the server`},
		{"no url in redis", "\n  store: redis\n  redis: {key_prefix: a}", `sidecar.yaml:5: state.redis.url: missing`},
		{"other scheme", "{store: redis, redis: {url: \"http://cache:6379\"}}", `sidecar.yaml:3: state.redis.url: scheme "http" is not redis or rediss`},
		{"no scheme", "{store: redis, redis: {url: \"cache:6379\"}}", `scheme "cache" is not redis or rediss`},
		{"not a url", "{store: redis, redis: {url: \"redis://cache:6379/%zz\"}}", `state.redis.url: not a URL`},
		{"no host", "{store: redis, redis: {url: \"redis:///0\"}}", `names no host`},
		{"bad port", "{store: redis, redis: {url: \"redis://cache:99999\"}}", `port "99999" is not 1 to 65535`},
		{"bad db", "{store: redis, redis: {url: \"redis://cache:6379/x\"}}", `the path "/x" is not a database number`},
		{"password", "{store: redis, redis: {url: \"redis://agent:hunter2@cache:6379/0\"}}", `sidecar.yaml:3: state.redis.url: "redis://agent:xxxxx@cache:6379/0" holds a password: a secret is never written in the file (want the URL in an environment variable, url: "${REDIS_URL}")`},
		{"stray reference", "{store: redis, redis: {url: \"${REDIS_URL}${\"}}", `a "${" that is no reference`},
		{"empty prefix", "{store: redis, redis: {url: \"${REDIS_URL}\", key_prefix: \"\"}}", `sidecar.yaml:3: state.redis.key_prefix: "": want a non-empty prefix without spaces`},
		{"spaced prefix", "{store: redis, redis: {url: \"${REDIS_URL}\", key_prefix: \"my app\"}}", `state.redis.key_prefix: "my app": want a non-empty prefix without spaces`},
		{"unknown key", "{store: redis, redis: {url: \"${REDIS_URL}\"}, ttl: 1h}", `state.ttl: unknown key (want store or redis)`},
		{"unknown redis key", "{store: redis, redis: {url: \"${REDIS_URL}\", db: 1}}", `state.redis.db: unknown key (want url, key_prefix, task_ttl or lease)`},
		{"short ttl", "{store: redis, redis: {url: \"${REDIS_URL}\", task_ttl: 10s}}", `state.redis.task_ttl: 10s is shorter than 1m`},
		{"ttl no unit", "{store: redis, redis: {url: \"${REDIS_URL}\", task_ttl: 60}}", `state.redis.task_ttl: 60 has no unit`},
		{"short lease", "{store: redis, redis: {url: \"${REDIS_URL}\", lease: 100ms}}", `state.redis.lease: 100ms is not 1s to 10m`},
		{"long lease", "{store: redis, redis: {url: \"${REDIS_URL}\", lease: 1h}}", `state.redis.lease: 1h0m0s is not 1s to 10m`},
		{"not a mapping", "redis", `sidecar.yaml:3: state: want a mapping with store and redis`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := minimal + "state: " + tt.section + "\n"
			_, err := Parse("sidecar.yaml", []byte(yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %v, want a problem containing %q", yaml, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the problem shows the password: %v", err)
			}
		})
	}
}

// TestResolveRedisURL: the URL's references come from the environment,
// the unset ones named, and the result is checked as a URL.
func TestResolveRedisURL(t *testing.T) {
	r := RedisState{URL: "${REDIS_URL}"}
	env := map[string]string{"REDIS_URL": "rediss://u:p@cache:6380/1"}
	got, missing := r.ResolveURL(func(k string) string { return env[k] })
	if got != env["REDIS_URL"] || len(missing) != 0 {
		t.Errorf("ResolveURL = %q, %v", got, missing)
	}
	if err := CheckRedisURL(got); err != nil {
		t.Errorf("CheckRedisURL(%q) = %v", got, err)
	}
	if _, missing := r.ResolveURL(func(string) string { return "" }); len(missing) != 1 || missing[0] != "REDIS_URL" {
		t.Errorf("ResolveURL with REDIS_URL unset: missing %v, want [REDIS_URL]", missing)
	}
	if err := CheckRedisURL("http://u:secret@cache"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("CheckRedisURL(http://u:secret@cache) = %v, want an error without the password", err)
	}
}

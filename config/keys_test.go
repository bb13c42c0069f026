package config_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// Parse is config.Parse with the program's doors, whose keys the table
// documents beside config's own.
func Parse(name string, data []byte) (*config.Config, error) {
	return config.Parse(name, data, doors.Kinds(doors.All)...)
}

// keysTable is the method map's reference: its "Every key" table.
const keysTable = "../docs/config.md"

// docKeys reads the keys table: each row's key and the literal of its
// default (the first `…` of the cell), "" when the cell has none.
func docKeys(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(keysTable)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(src), "\n## Every key\n")
	if !ok {
		t.Fatalf("%s: no ## Every key section", keysTable)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]*) \\|")
	literal := regexp.MustCompile("`([^`]*)`")
	keys := map[string]string{}
	for _, l := range strings.Split(table, "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		def := ""
		if d := literal.FindStringSubmatch(m[2]); d != nil {
			def = d[1]
		}
		keys[m[1]] = def
	}
	if len(keys) == 0 {
		t.Fatalf("%s: no rows in the keys table", keysTable)
	}
	return keys
}

// sections are where the parser takes keys, and a map that reaches each
// with an unknown key zz_unknown in it.
var sections = map[string]string{
	"":                         "zz_unknown: 1\n",
	"upstream":                 "upstream: {url: http://127.0.0.1:8000, zz_unknown: 1}\n",
	"upstream.ready":           "upstream: {url: http://127.0.0.1:8000, ready: {zz_unknown: 1}}\n",
	"upstream.restart":         "upstream: {url: http://127.0.0.1:8000, restart: {zz_unknown: 1}}\n",
	"timeouts":                 "timeouts: {zz_unknown: 1}\n",
	"limits":                   "limits: {zz_unknown: 1}\n",
	"limits.per_caller":        "limits: {per_caller: {zz_unknown: 1}}\n",
	"limits.live":              "limits: {live: {zz_unknown: 1}}\n",
	"limits.questions":         "limits: {questions: {zz_unknown: 1}}\n",
	"limits.parts":             "limits: {parts: {zz_unknown: 1}}\n",
	"shutdown":                 "shutdown: {zz_unknown: 1}\n",
	"headers":                  "headers: {zz_unknown: 1}\n",
	"admin":                    "admin: {zz_unknown: 1}\n",
	"adk":                      "adk: {zz_unknown: 1}\n",
	"protocols":                "protocols: {zz_unknown: 1}\n",
	"protocols.agent_platform": "protocols: {agent_platform: {zz_unknown: 1}}\n",
	"protocols.agentcore":      "protocols: {agentcore: {method: query, zz_unknown: 1}}\n",
	"protocols.foundry":        "protocols: {foundry: {method: query, zz_unknown: 1}}\n",
	"protocols.a2a":            "protocols: {a2a: {method: query, zz_unknown: 1}}\n",
	"protocols.mcp":            "protocols: {mcp: {zz_unknown: 1}}\n",
	"keep_alive_probe":         "keep_alive_probe: {path: /busy, zz_unknown: 1}\n",
	"state":                    "state: {zz_unknown: 1}\n",
	"state.redis":              "state: {store: redis, redis: {url: \"${REDIS_URL}\", zz_unknown: 1}}\n",
	"auth":                     "auth: {zz_unknown: 1}\n",
	"methods.<name>":           "methods: {query: {zz_unknown: 1}}\n",
	"methods.<name>.timeouts":  "methods: {query: {timeouts: {zz_unknown: 1}}}\n",
	"methods.<name>.headers":   "methods: {query: {headers: {zz_unknown: 1}}}\n",
}

var wantKeys = regexp.MustCompile(`zz_unknown: unknown key \(want ([^)]*)\)`)

// parserKeys are the keys the parser takes, by their dotted path, found
// from what it says of a key it does not know.
func parserKeys(t *testing.T) []string {
	t.Helper()
	var keys []string
	for section, yaml := range sections {
		if !strings.Contains(yaml, "upstream:") {
			yaml = "upstream: {url: http://127.0.0.1:8000}\n" + yaml
		}
		if !strings.Contains(yaml, "methods:") {
			yaml += "methods: {query: {}}\n"
		}
		_, err := Parse("keys.yaml", []byte(yaml))
		m := wantKeys.FindStringSubmatch(fmt.Sprint(err))
		if m == nil {
			t.Fatalf("section %q: no unknown-key problem for zz_unknown: %v", section, err)
		}
		list := strings.ReplaceAll(m[1], " or ", ", ")
		for _, k := range strings.Split(list, ", ") {
			if section != "" {
				k = section + "." + k
			}
			keys = append(keys, k)
		}
	}
	// mount is taken out of a door's section before its Kind decodes the
	// rest, so no door's unknown-key message lists it: a door takes it
	// when no problem of a section that mounts it names the key.
	for _, door := range doors.Kinds(doors.All) {
		yaml := fmt.Sprintf("upstream: {url: http://127.0.0.1:8000}\nmethods: {query: {}}\nprotocols: {%s: {mount: /zz_mount, method: query}}\n", door.Name)
		if _, err := Parse("keys.yaml", []byte(yaml)); !strings.Contains(fmt.Sprint(err), "protocols."+door.Name+".mount") {
			keys = append(keys, "protocols."+door.Name+".mount")
		}
	}
	for i, k := range keys {
		keys[i] = oneDoor(k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// doorMount is a door's mount key; the table has one row for every door's.
var doorMount = regexp.MustCompile(`^protocols\.[a-z0-9_]+\.mount$`)

// oneDoor is k with a door's mount key written as the table's row names
// it, protocols.<door>.mount.
func oneDoor(k string) string {
	return doorMount.ReplaceAllString(k, "protocols.<door>.mount")
}

// TestKeysTable holds docs/config.md's keys table to the parser: every key
// the parser takes is documented (itself, a key it is part of, such as
// protocols.a2a for protocols.a2a.card, or the keys of its section), every documented key is one the
// parser takes (or a section of them), and each default the table gives
// is the one a map that leaves the key out gets.
func TestKeysTable(t *testing.T) {
	doc := docKeys(t)
	code := parserKeys(t)
	documented := func(k string) bool {
		for d := range doc {
			if strings.HasPrefix(d, k+".") {
				return true // a section, its keys in rows of their own
			}
		}
		for {
			if _, ok := doc[k]; ok {
				return true
			}
			i := strings.LastIndex(k, ".")
			if i < 0 {
				return false
			}
			k = k[:i]
		}
	}
	for _, k := range code {
		if !documented(k) {
			t.Errorf("%s: the keys table has no row for %s (nor for a key it is part of)", keysTable, k)
		}
	}
	for k := range doc {
		known := slices.ContainsFunc(code, func(c string) bool { return c == k || strings.HasPrefix(c, k+".") })
		if !known {
			t.Errorf("%s: the keys table has a row for %s, a key the parser does not take", keysTable, k)
		}
	}

	c, err := Parse("defaults.yaml", []byte("upstream: {url: http://127.0.0.1:8000}\nmethods: {query: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Methods[0]
	defaults := map[string]any{
		"listen":                           c.Listen,
		"upstream.ready.path":              c.Upstream.Ready.Path,
		"upstream.ready.interval":          c.Upstream.Ready.Interval,
		"upstream.ready.timeout":           c.Upstream.Ready.Timeout,
		"upstream.ready.wait":              c.Upstream.Ready.Wait,
		"upstream.idle_timeout":            c.Upstream.IdleTimeout,
		"upstream.restart.policy":          c.Upstream.Restart.Policy,
		"upstream.restart.max":             c.Upstream.Restart.Max,
		"upstream.restart.backoff":         c.Upstream.Restart.Backoff,
		"timeouts.connect":                 c.Timeouts.Connect,
		"timeouts.first_byte":              c.Timeouts.FirstByte,
		"timeouts.idle":                    c.Timeouts.Idle,
		"timeouts.total":                   c.Timeouts.Total,
		"limits.request_bytes":             c.Limits.RequestBytes,
		"limits.record_bytes":              int64(c.Limits.RecordBytes),
		"limits.reply_bytes":               c.Limits.ReplyBytes,
		"limits.header_bytes":              int64(c.Limits.HeaderBytes),
		"limits.header_timeout":            c.Limits.HeaderTimeout,
		"limits.concurrency":               c.Limits.Concurrency,
		"limits.queue":                     c.Limits.Queue,
		"limits.queue_timeout":             c.Limits.QueueTimeout,
		"limits.body_timeout":              c.Limits.BodyTimeout,
		"limits.task_store_bytes":          c.Limits.TaskStoreBytes,
		"limits.mcp_sessions":              c.Limits.MCPSessions,
		"limits.subscriptions":             c.Limits.Subscriptions,
		"limits.per_caller.requests":       c.Limits.PerCaller.Requests,
		"limits.per_caller.concurrent":     c.Limits.PerCaller.Concurrent,
		"limits.per_caller.per":            c.Limits.PerCaller.Per,
		"admin.listen":                     c.Admin.Listen,
		"shutdown.drain":                   c.Shutdown.Drain,
		"shutdown.agent_grace":             c.Shutdown.AgentGrace,
		"protocols.agent_platform.enabled": c.Protocols.AgentPlatform,
		"adk.keys":                         c.ADK.Keys,
		"state.store":                      c.State.Store,
		"state.redis.key_prefix":           c.State.Redis.KeyPrefix,
		"state.redis.task_ttl":             c.State.Redis.TaskTTL,
		"state.redis.lease":                c.State.Redis.Lease,
		"methods.<name>.mode":              string(m.Mode),
		"methods.<name>.call":              strings.Replace(m.Verb+" "+m.Path, "/query", "/<name>", 1),
		"methods.<name>.body":              string(m.Body),
		"methods.<name>.reply":             string(m.Reply),
		"methods.<name>.output":            string(m.Output),
		"methods.<name>.idempotent":        m.Idempotent,
		"methods.<name>.emit":              string(m.Emitting()),
		"methods.<name>.dialect":           string(m.Speaking()),
	}
	for key, got := range defaults {
		lit, ok := doc[key]
		if !ok {
			t.Errorf("%s: no row for %s", keysTable, key)
			continue
		}
		if lit == `""` {
			lit = ""
		}
		var want any
		var err error
		switch got.(type) {
		case time.Duration:
			want, err = time.ParseDuration(lit)
		case int64:
			want, err = parseSize(lit)
		case int:
			want, err = strconv.Atoi(lit)
		case bool:
			want, err = strconv.ParseBool(lit)
		default:
			want = lit
		}
		if err != nil || want != got {
			t.Errorf("%s: %s's default is `%s` (%v), the parser's %v", keysTable, key, lit, err, got)
		}
	}
}

// parseSize reads a size as the method map writes it (10MiB, 64KiB).
func parseSize(s string) (int64, error) {
	c, err := Parse("size.yaml", []byte("upstream: {url: http://127.0.0.1:8000}\nlimits: {request_bytes: "+s+"}\nmethods: {query: {}}\n"))
	if err != nil {
		return 0, err
	}
	return c.Limits.RequestBytes, nil
}

// TestKeysInOneMap: the map of "Every key in one map" in docs/config.md
// sets every key of its keys table (sidecar validate checks it is valid).
func TestKeysInOneMap(t *testing.T) {
	src, err := os.ReadFile(keysTable)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(src), "\n## Every key in one map\n")
	if !ok {
		t.Fatalf("%s: no ## Every key in one map section", keysTable)
	}
	_, block, _ := strings.Cut(section, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	var m map[string]any
	if err := yaml.Unmarshal([]byte(block), &m); err != nil {
		t.Fatalf("%s: the map of every key: %v", keysTable, err)
	}
	set := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		set[oneDoor(prefix)] = true
		mm, ok := v.(map[string]any)
		if !ok || prefix == "methods.<name>.parameters" || prefix == "methods.<name>.example" {
			return
		}
		for k, sub := range mm {
			if prefix == "methods" {
				k = "<name>"
			}
			if prefix != "" {
				k = prefix + "." + k
			}
			walk(k, sub)
		}
	}
	walk("", m)
	for k := range docKeys(t) {
		if !set[k] {
			t.Errorf("%s: the map of every key does not set %s", keysTable, k)
		}
	}
}

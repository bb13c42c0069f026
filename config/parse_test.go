package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// full uses every key of the schema.
const full = `listen: "127.0.0.1:9090"
upstream:
  url: http://127.0.0.1:8000/api/
  ready: {path: /health, interval: 2s, timeout: 500ms}
timeouts: {connect: 1s, first_byte: 2m, idle: 30s, total: 0}
limits: {request_bytes: 1MiB, record_bytes: 65536, reply_bytes: "2 MB"}
methods:
  query:
    mode: ""
    call: post /query/{user_id}/{class_method}
    body: input
    reply: json
    output: as_is
    timeouts: {first_byte: 30s, total: 1h}
  stream_query:
    mode: stream
    call: POST /chat/{session.id}/stream
    body: envelope
    reply: sse
  "*":
    mode: stream
  create_session:
    mode: async
    call: PUT /sessions
    body: {user: "{input.user_id}", meta: {source: platform, n: 12345678901234567890123}, tags: [a, 1, true, null]}
  delete_session:
    mode: async_stream
    call: DELETE /sessions/{id}
    reply: ndjson
  get_state:
    call: GET /state
    body: '{"q": "{input}", "n": 1.5e3}'
    reply: text
`

func TestParseFull(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(full))
	if err != nil {
		t.Fatalf("Parse(full) error: %v", err)
	}
	if c.Listen != "127.0.0.1:9090" {
		t.Errorf("Listen = %q, want %q", c.Listen, "127.0.0.1:9090")
	}
	wantUp := Upstream{
		URL:         "http://127.0.0.1:8000/api/",
		Network:     "tcp",
		Address:     "127.0.0.1:8000",
		BaseURL:     "http://127.0.0.1:8000/api",
		Ready:       Ready{Path: "/health", Interval: 2 * time.Second, Timeout: 500 * time.Millisecond, Wait: 30 * time.Second},
		IdleTimeout: 4 * time.Second,
		Restart:     Restart{Policy: RestartNever, Max: 5, Backoff: time.Second},
	}
	if !reflect.DeepEqual(c.Upstream, wantUp) {
		t.Errorf("Upstream = %+v, want %+v", c.Upstream, wantUp)
	}
	top := Timeouts{Connect: time.Second, FirstByte: 2 * time.Minute, Idle: 30 * time.Second, Total: 0}
	if c.Timeouts != top {
		t.Errorf("Timeouts = %+v, want %+v", c.Timeouts, top)
	}
	wantLimits := Limits{RequestBytes: 1 << 20, RecordBytes: 65536, ReplyBytes: 2e6, HeaderBytes: 64 << 10, HeaderTimeout: 10 * time.Second, Queue: 100, QueueTimeout: 10 * time.Second, BodyTimeout: 30 * time.Second, TaskStoreBytes: 64 << 20, MCPSessions: 10000, Subscriptions: 256, PerCaller: PerCaller{Per: time.Minute}, Live: DefaultLive, Questions: DefaultQuestions, Parts: DefaultParts}
	if c.Limits != wantLimits {
		t.Errorf("Limits = %+v, want %+v", c.Limits, wantLimits)
	}

	want := []*Method{{
		Name: "query", Mode: ModeSync, Verb: "POST", Path: "/query/{user_id}/{class_method}",
		Segments: []PathSegment{{Literal: "/query/"}, {Field: "user_id"}, {Literal: "/"}, {Field: "class_method"}},
		Body:     BodyInput, Reply: ReplyJSON, Output: OutputAsIs,
		Timeouts: Timeouts{Connect: time.Second, FirstByte: 30 * time.Second, Idle: 30 * time.Second, Total: time.Hour},
		Line:     8,
	}, {
		Name: "stream_query", Mode: ModeStream, Verb: "POST", Path: "/chat/{session.id}/stream",
		Segments: []PathSegment{{Literal: "/chat/"}, {Field: "session.id"}, {Literal: "/stream"}},
		Body:     BodyEnvelope, Reply: ReplySSE, Output: OutputWrap, Timeouts: top, Line: 15,
	}, {
		Name: "create_session", Mode: ModeAsync, Verb: "PUT", Path: "/sessions",
		Segments: []PathSegment{{Literal: "/sessions"}},
		Body:     BodyTemplate,
		Template: map[string]any{
			"user": "{input.user_id}",
			"meta": map[string]any{"source": "platform", "n": json.Number("12345678901234567890123")},
			"tags": []any{"a", json.Number("1"), true, nil},
		},
		Reply: ReplyAuto, Output: OutputWrap, Timeouts: top, Line: 22,
	}, {
		Name: "delete_session", Mode: ModeAsyncStream, Verb: "DELETE", Path: "/sessions/{id}",
		Segments: []PathSegment{{Literal: "/sessions/"}, {Field: "id"}},
		Body:     BodyNone, Reply: ReplyNDJSON, Output: OutputWrap, Timeouts: top, Line: 26,
	}, {
		Name: "get_state", Mode: ModeSync, Verb: "GET", Path: "/state",
		Segments: []PathSegment{{Literal: "/state"}},
		Body:     BodyTemplate, Template: map[string]any{"q": "{input}", "n": json.Number("1.5e3")},
		Reply: ReplyText, Output: OutputWrap, Timeouts: top, Line: 30,
	}, {
		Name: "*", Mode: ModeStream, Verb: "POST", Path: "/{class_method}",
		Segments: []PathSegment{{Literal: "/"}, {Field: "class_method"}},
		Body:     BodyInput, Reply: ReplyAuto, Output: OutputWrap, Timeouts: top, Line: 20,
	}}
	if len(c.Methods) != len(want) {
		t.Fatalf("Parse(full) has %d methods, want %d", len(c.Methods), len(want))
	}
	for i, m := range c.Methods {
		if !reflect.DeepEqual(m, want[i]) {
			t.Errorf("Methods[%d] =\n  %+v\nwant\n  %+v", i, *m, *want[i])
		}
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte("upstream: {url: 'unix:///run/agent.sock'}\nmethods:\n  query:\n  other: {}\n  \"*\":\n"))
	if err != nil {
		t.Fatalf("Parse error: %v", err)
	}
	if c.Listen != ":8080" {
		t.Errorf("Listen = %q, want %q", c.Listen, ":8080")
	}
	wantUp := Upstream{
		URL: "unix:///run/agent.sock", Network: "unix", Address: "/run/agent.sock", BaseURL: "http://agent",
		Ready:       Ready{Interval: time.Second, Timeout: time.Second, Wait: 30 * time.Second},
		IdleTimeout: 4 * time.Second,
		Restart:     Restart{Policy: RestartNever, Max: 5, Backoff: time.Second},
	}
	if !reflect.DeepEqual(c.Upstream, wantUp) {
		t.Errorf("Upstream = %+v, want %+v", c.Upstream, wantUp)
	}
	if want := (Shutdown{Drain: 6 * time.Second, AgentGrace: 3 * time.Second}); c.Shutdown != want {
		t.Errorf("Shutdown = %+v, want %+v", c.Shutdown, want)
	}
	def := Timeouts{Connect: 5 * time.Second, FirstByte: 5 * time.Minute, Idle: 5 * time.Minute, Total: 14*time.Minute + 50*time.Second}
	if c.Timeouts != def {
		t.Errorf("Timeouts = %+v, want %+v", c.Timeouts, def)
	}
	if want := (Limits{RequestBytes: 10 << 20, RecordBytes: 8 << 20, ReplyBytes: 32 << 20, HeaderBytes: 64 << 10, HeaderTimeout: 10 * time.Second, Queue: 100, QueueTimeout: 10 * time.Second, BodyTimeout: 30 * time.Second, TaskStoreBytes: 64 << 20, MCPSessions: 10000, Subscriptions: 256, PerCaller: PerCaller{Per: time.Minute}, Live: DefaultLive, Questions: DefaultQuestions, Parts: DefaultParts}); c.Limits != want {
		t.Errorf("Limits = %+v, want %+v", c.Limits, want)
	}
	want := []*Method{
		{Name: "query", Verb: "POST", Path: "/query", Segments: []PathSegment{{Literal: "/query"}},
			Body: BodyInput, Reply: ReplyAuto, Output: OutputWrap, Timeouts: def, Line: 3},
		{Name: "other", Verb: "POST", Path: "/other", Segments: []PathSegment{{Literal: "/other"}},
			Body: BodyInput, Reply: ReplyAuto, Output: OutputWrap, Timeouts: def, Line: 4},
		{Name: "*", AllRoutes: true, Verb: "POST", Path: "/{class_method}",
			Segments: []PathSegment{{Literal: "/"}, {Field: "class_method"}},
			Body:     BodyInput, Reply: ReplyAuto, Output: OutputWrap, Timeouts: def, Line: 5},
	}
	if !reflect.DeepEqual(c.Methods, want) {
		for i, m := range c.Methods {
			t.Errorf("Methods[%d] = %+v", i, *m)
		}
		t.Errorf("want %d methods: query, other, *", len(want))
	}
}

// validTests are small files that parse; check inspects one detail.
var validTests = []struct {
	name  string
	yaml  string
	check func(*Config) (got, want any)
}{
	{"listen any host", "listen: ':0'\n" + minimal,
		func(c *Config) (any, any) { return c.Listen, ":0" }},
	{"listen ipv6", "listen: '[::1]:80'\n" + minimal,
		func(c *Config) (any, any) { return c.Listen, "[::1]:80" }},
	{"tcp url without base", "upstream: {url: 'http://localhost:8000'}\nmethods: {q: }\n",
		func(c *Config) (any, any) { return c.Upstream.BaseURL, "http://localhost:8000" }},
	{"tcp url root slash", "upstream: {url: 'HTTP://localhost:8000/'}\nmethods: {q: }\n",
		func(c *Config) (any, any) {
			return [2]string{c.Upstream.Address, c.Upstream.BaseURL}, [2]string{"localhost:8000", "http://localhost:8000"}
		}},
	{"tcp ipv6", "upstream: {url: 'http://[::1]:8000/v1//'}\nmethods: {q: }\n",
		func(c *Config) (any, any) {
			return [2]string{c.Upstream.Address, c.Upstream.BaseURL}, [2]string{"[::1]:8000", "http://[::1]:8000/v1"}
		}},
	{"unix longest path", "upstream: {url: 'unix:///" + strings.Repeat("s", 106) + "'}\nmethods: {q: }\n",
		func(c *Config) (any, any) { return len(c.Upstream.Address), 107 }},
	{"timeouts 0s and 0", "timeouts: {connect: 0s, total: 0}\n" + minimal,
		func(c *Config) (any, any) {
			return c.Timeouts, Timeouts{FirstByte: 5 * time.Minute, Idle: 5 * time.Minute}
		}},
	{"method timeouts merge over top after methods", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {timeouts: {idle: 1s}}\ntimeouts: {connect: 2s}\n",
		func(c *Config) (any, any) {
			return c.Methods[0].Timeouts, Timeouts{Connect: 2 * time.Second, FirstByte: 5 * time.Minute, Idle: time.Second, Total: 14*time.Minute + 50*time.Second}
		}},
	{"sizes", "limits: {request_bytes: 1KB, record_bytes: 2 KiB, reply_bytes: 1GiB}\n" + minimal,
		func(c *Config) (any, any) {
			return c.Limits, Limits{RequestBytes: 1000, RecordBytes: 2048, ReplyBytes: 1 << 30, HeaderBytes: 64 << 10, HeaderTimeout: 10 * time.Second, Queue: 100, QueueTimeout: 10 * time.Second, BodyTimeout: 30 * time.Second, TaskStoreBytes: 64 << 20, MCPSessions: 10000, Subscriptions: 256, PerCaller: PerCaller{Per: time.Minute}, Live: DefaultLive, Questions: DefaultQuestions, Parts: DefaultParts}
		}},
	{"task store", "limits: {task_store_bytes: 1MiB}\n" + minimal,
		func(c *Config) (any, any) { return c.Limits.TaskStoreBytes, int64(1 << 20) }},
	{"size in bytes", "limits: {request_bytes: 10B, reply_bytes: '7'}\n" + minimal,
		func(c *Config) (any, any) {
			return [2]int64{c.Limits.RequestBytes, c.Limits.ReplyBytes}, [2]int64{10, 7}
		}},
	{"verb any case", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {call: Patch /x}\n",
		func(c *Config) (any, any) { return c.Methods[0].Verb, "PATCH" }},
	{"GET keeps an explicit body", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {call: GET /x, body: input}\n",
		func(c *Config) (any, any) { return c.Methods[0].Body, BodyInput }},
	{"path of pchars", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    call: POST /a-b.c_d~e/!$&'()*+,;=:@/{x}{y}\n",
		func(c *Config) (any, any) {
			return c.Methods[0].Segments, []PathSegment{{Literal: "/a-b.c_d~e/!$&'()*+,;=:@/"}, {Field: "x"}, {Field: "y"}}
		}},
	{"query string", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    call: POST /run/{a}?stream=true&user={user.id}&m={class_method}&x=/?:@\n",
		func(c *Config) (any, any) {
			m := c.Methods[0]
			return [3]any{m.Path, m.Segments, m.Query}, [3]any{"/run/{a}?stream=true&user={user.id}&m={class_method}&x=/?:@",
				[]PathSegment{{Literal: "/run/"}, {Field: "a"}},
				[]PathSegment{{Literal: "stream=true&user="}, {Field: "user.id"}, {Literal: "&m="}, {Field: "class_method"}, {Literal: "&x=/?:@"}}}
		}},
	{"route path", "upstream: {url: 'http://h:1'}\nmethods:\n  '*': {call: 'POST {route}', body: envelope}\n",
		func(c *Config) (any, any) {
			return c.Methods[0].Segments, []PathSegment{{Field: FieldRoute}}
		}},
	{"star with mode empty is unary only", "upstream: {url: 'http://h:1'}\nmethods:\n  '*': {mode: ''}\n",
		func(c *Config) (any, any) { return c.Methods[0].AllRoutes, false }},
	{"star with null mode serves both", "upstream: {url: 'http://h:1'}\nmethods:\n  '*': {mode: }\n",
		func(c *Config) (any, any) { return c.Methods[0].AllRoutes, true }},
	{"star output on both routes", "upstream: {url: 'http://h:1'}\nmethods:\n  '*': {output: as_is}\n",
		func(c *Config) (any, any) { return c.Methods[0].Output, OutputAsIs }},
	{"star call", "upstream: {url: 'http://h:1'}\nmethods:\n  '*': {call: POST /invoke, body: envelope}\n",
		func(c *Config) (any, any) { return c.Methods[0].Segments, []PathSegment{{Literal: "/invoke"}} }},
	{"body sequence", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {body: ['{input.a}', x]}\n",
		func(c *Config) (any, any) { return c.Methods[0].Template, []any{"{input.a}", "x"} }},
	{"body JSON array", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {body: '[1, {\"a\": [true, null]}]'}\n",
		func(c *Config) (any, any) {
			return c.Methods[0].Template, []any{json.Number("1"), map[string]any{"a": []any{true, nil}}}
		}},
	{"template YAML numbers", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    body: {a: 0x1F, b: 0o17, c: 1_000, d: +5, e: .5, f: -0.0, g: 1e3, h: +12345678901234567890123}\n",
		func(c *Config) (any, any) {
			return c.Methods[0].Template, map[string]any{
				"a": json.Number("31"), "b": json.Number("15"), "c": json.Number("1000"), "d": json.Number("5"),
				"e": json.Number("0.5"), "f": json.Number("-0.0"), "g": json.Number("1e3"), "h": json.Number("12345678901234567890123"),
			}
		}},
	{"template scalars", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    body: {a: ~, b: True, c: 2001-12-14, d: !!str 12, e: '{input', f: 'hi {input.x}', 1: one, g: '{input.a.b_2}'}\n",
		func(c *Config) (any, any) {
			return c.Methods[0].Template, map[string]any{
				"a": nil, "b": true, "c": "2001-12-14", "d": "12", "e": "{input", "f": "hi {input.x}", "1": "one", "g": "{input.a.b_2}",
			}
		}},
	{"anchors, aliases and merge keys", `upstream: {url: 'http://h:1'}
methods:
  a: &base
    mode: stream
    call: POST /run
    timeouts: &slow {first_byte: 1h}
  b:
    <<: *base
    call: POST /other
  c: {mode: async, timeouts: *slow, body: {x: &v [1]}}
  d: {<<: [{reply: sse}, {reply: json, mode: stream}], body: {y: *v}}
`, func(c *Config) (any, any) {
		var got []string
		for _, m := range c.Methods {
			got = append(got, m.Name+" "+string(m.Mode)+" "+m.Path+" "+string(m.Reply)+" "+m.Timeouts.FirstByte.String())
		}
		return got, []string{"a stream /run auto 1h0m0s", "b stream /other auto 1h0m0s", "c async /c auto 1h0m0s", "d stream /d sse 5m0s"}
	}},
	{"comments and document marker", "# the map\n---\n" + minimal + "...\n",
		func(c *Config) (any, any) { return len(c.Methods), 1 }},
}

// minimal is the least a valid file says.
const minimal = "upstream: {url: 'http://127.0.0.1:8000'}\nmethods: {query: }\n"

func TestParseValid(t *testing.T) {
	for _, tt := range validTests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("sidecar.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatalf("Parse(%q) error:\n%v", tt.yaml, err)
			}
			if got, want := tt.check(c); !reflect.DeepEqual(got, want) {
				t.Errorf("Parse(%q): got %#v, want %#v", tt.yaml, got, want)
			}
		})
	}
}

// problemTests are files with problems and the exact message Parse gives.
var problemTests = []struct {
	name string
	yaml string
	want string
}{
	// The file as a whole.
	{"empty file", "", "sidecar.yaml: empty file (want a mapping with upstream and methods)"},
	{"only comments", "# nothing\n\n", "sidecar.yaml: empty file (want a mapping with upstream and methods)"},
	{"null document", "~\n", "sidecar.yaml: empty file (want a mapping with upstream and methods)"},
	{"not a mapping", "- a\n- b\n", "sidecar.yaml:1: want a mapping with upstream and methods, not a list"},
	{"trusted_hosts not a list", minimal + "trusted_hosts: agents.example.com\n",
		"sidecar.yaml:3: trusted_hosts: want a list of host names such as [a, b], not a string"},
	{"trusted_hosts with a scheme", minimal + "trusted_hosts: [agents.example.com, \"https://agents.example.com\"]\n",
		`sidecar.yaml:3: trusted_hosts: "https://agents.example.com" is not a host name (want a name such as agents.example.com: no scheme, port, path or wildcard)`},
	{"trusted_hosts with a port", minimal + "trusted_hosts: [\"agents.example.com:443\"]\n",
		`sidecar.yaml:3: trusted_hosts: "agents.example.com:443" is not a host name (want a name such as agents.example.com: no scheme, port, path or wildcard)`},
	{"trusted_hosts with a wildcard", minimal + "trusted_hosts: [\"*.example.com\"]\n",
		`sidecar.yaml:3: trusted_hosts: "*.example.com" is not a host name (want a name such as agents.example.com: no scheme, port, path or wildcard)`},
	{"trusted_hosts twice", minimal + "trusted_hosts: [a.example, a.example]\n", `sidecar.yaml:3: trusted_hosts: "a.example" is listed twice`},
	{"two documents", minimal + "---\n" + minimal, "sidecar.yaml:3: a second YAML document (want one method map per file)"},
	{"tab indent", "upstream:\n\turl: http://h:1\n",
		"sidecar.yaml:2: invalid YAML: found character that cannot start any token (indent with spaces: YAML does not allow tabs)"},
	{"tab after spaces", "methods:\n  a: 1\n\tb: 2\n",
		"sidecar.yaml:3: invalid YAML: found a tab character that violates indentation (indent with spaces: YAML does not allow tabs)"},
	{"unclosed flow", "upstream: {url: 'http://h:1'\nmethods: {q: }\n",
		"sidecar.yaml:1: invalid YAML: did not find expected ',' or '}'"},
	{"unquoted star", "upstream: {url: 'http://h:1'}\nmethods:\n  *: {}\n",
		`sidecar.yaml:3: invalid YAML: did not find expected alphabetic or numeric character (quote a "*" key: "*":)`},
	{"unknown anchor", "upstream: *nope\n", "sidecar.yaml: invalid YAML: unknown anchor 'nope' referenced"},
	{"missing everything", "listen: ':1'\n",
		"sidecar.yaml:1: upstream: missing (want upstream.url: http://host:port or unix:///path/to.sock)\n" +
			"sidecar.yaml:1: methods: missing (want at least one method, e.g. methods: {query: {}})"},

	{"control characters stay on one line", "!%0A", `sidecar.yaml:1: want a mapping with upstream and methods, not a value tagged !\n`},

	// Unknown keys at every level.
	{"unknown top key", minimal + "presets: adk\n",
		"sidecar.yaml:3: presets: unknown key: did you mean preset? (want listen, upstream, timeouts, limits, shutdown, headers, admin, preset, adk, protocols, trusted_hosts, trusted_proxies, keep_alive_probe, state, auth or methods)"},
	{"preset without app", minimal + "preset: adk\n",
		"sidecar.yaml:3: adk.app: missing: the ADK handlers need the ADK app name (want adk: {app: my_agent})"},
	{"unknown preset", minimal + "preset: langchain\nadk: {app: a, keys: camel, model: x}\n",
		"sidecar.yaml:3: preset: unknown preset \"langchain\" (want \"adk\")\n" +
			"sidecar.yaml:4: adk.keys: unknown key case \"camel\" (want \"as_is\" or \"snake\")\n" +
			"sidecar.yaml:4: adk.model: unknown key (want app or keys)"},
	{"handler problems", "upstream: {url: 'http://127.0.0.1:8000'}\nmethods:\n  q: {handler: adk.nope, call: POST /x}\n  \"*\": {handler: adk.get_session}\n",
		"sidecar.yaml:3: methods.q.handler: unknown handler \"adk.nope\" (want \"adk.add_session_to_memory\", \"adk.async_stream_query\", \"adk.bidi_stream_query\", \"adk.create_session\", \"adk.delete_session\", \"adk.get_session\", \"adk.list_sessions\", \"adk.search_memory\", \"adk.stream_query\" or \"adk.streaming_agent_run_with_events\")\n" +
			"sidecar.yaml:3: methods.q.call: does not apply to a method with a handler (adk.nope builds its own requests)\n" +
			"sidecar.yaml:3: adk.app: missing: the ADK handlers need the ADK app name (want adk: {app: my_agent})\n" +
			"sidecar.yaml:4: methods.*.handler: a \"*\" method cannot have a handler"},
	{"unknown key with a newline", minimal + "\"a\\nb\": 1\n",
		`sidecar.yaml:3: a\nb: unknown key (want listen, upstream, timeouts, limits, shutdown, headers, admin, preset, adk, protocols, trusted_hosts, trusted_proxies, keep_alive_probe, state, auth or methods)`},
	{"unknown upstream key", "upstream:\n  url: http://h:1\n  cmd: [python3, agent.py]\nmethods: {q: }\n",
		"sidecar.yaml:3: upstream.cmd: unknown key (want url, ready, command, restart or idle_timeout)"},
	{"command not a list", "upstream:\n  url: http://h:1\n  command: python3 agent.py\nmethods: {q: }\n",
		"sidecar.yaml:3: upstream.command: want a list such as [python3, agent.py], not a string"},
	{"empty command", "upstream:\n  url: http://h:1\n  command: []\nmethods: {q: }\n",
		"sidecar.yaml:3: upstream.command: empty command (want a list such as [python3, agent.py])"},
	{"bad restart", "upstream:\n  url: http://h:1\n  restart: {policy: always, max: -1, backoff: 0s, jitter: 1}\nmethods: {q: }\n",
		"sidecar.yaml:3: upstream.restart.policy: unknown policy \"always\" (want \"never\" or \"on-failure\")\n" +
			"sidecar.yaml:3: upstream.restart.max: \"-1\" is not a whole number ≥ 0 (0 means no limit)\n" +
			"sidecar.yaml:3: upstream.restart.backoff: must be positive\n" +
			"sidecar.yaml:3: upstream.restart.jitter: unknown key (want policy, max or backoff)"},
	{"bad shutdown", minimal + "shutdown: {drain: -1s, agent_grace: soon, linger: 1s}\n",
		"sidecar.yaml:3: shutdown.drain: \"-1s\" is negative\n" +
			"sidecar.yaml:3: shutdown.agent_grace: invalid duration \"soon\" (want a duration such as \"30s\" or \"1m30s\")\n" +
			"sidecar.yaml:3: shutdown.linger: unknown key (want drain or agent_grace)"},
	{"unknown ready key", "upstream:\n  url: http://h:1\n  ready: {path: /h, retries: 3}\nmethods: {q: }\n",
		"sidecar.yaml:3: upstream.ready.retries: unknown key (want path, interval, timeout or wait)"},
	{"unknown timeouts key", minimal + "timeouts:\n  read: 1s\n",
		"sidecar.yaml:4: timeouts.read: unknown key (want connect, first_byte, idle or total)"},
	{"unknown limits key", minimal + "limits:\n  body_bytes: 1\n",
		"sidecar.yaml:4: limits.body_bytes: unknown key (want request_bytes, record_bytes, reply_bytes, header_bytes, header_timeout, concurrency, queue, queue_timeout, body_timeout, task_store_bytes, mcp_sessions, subscriptions, per_caller, live, questions or parts)"},
	{"unknown headers key", minimal + "headers:\n  forwards: [X-Tenant]\n",
		"sidecar.yaml:4: headers.forwards: unknown key: did you mean forward? (want forward or set)"},
	{"unknown admin key", minimal + "admin: {listen: '127.0.0.1:9090', port: 9091}\n",
		"sidecar.yaml:3: admin.port: unknown key (want listen)"},
	{"unknown method key", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    mode: stream\n    timeout: 1s\n",
		"sidecar.yaml:5: methods.q.timeout: unknown key: did you mean timeouts? (want mode, call, body, reply, output, timeouts, handler, idempotent, description, parameters, example, dialect, emit, headers or scopes)"},
	{"unknown method timeouts key", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    timeouts:\n      firstbyte: 1s\n",
		"sidecar.yaml:5: methods.q.timeouts.firstbyte: unknown key: did you mean first_byte? (want connect, first_byte, idle or total)"},

	// A near key is named: at the top, in a section, in a method, in its
	// timeouts; case aside; not when nothing is near.
	{"near top key", "upsteam: {url: 'http://h:1'}\nmethods: {q: }\n",
		"sidecar.yaml:1: upsteam: unknown key: did you mean upstream? (want listen, upstream, timeouts, limits, shutdown, headers, admin, preset, adk, protocols, trusted_hosts, trusted_proxies, keep_alive_probe, state, auth or methods)\n" +
			"sidecar.yaml:1: upstream: missing (want upstream.url: http://host:port or unix:///path/to.sock)"},
	{"near top key, transposed", minimal + "timeuots: {total: 1s}\n",
		"sidecar.yaml:3: timeuots: unknown key: did you mean timeouts? (want listen, upstream, timeouts, limits, shutdown, headers, admin, preset, adk, protocols, trusted_hosts, trusted_proxies, keep_alive_probe, state, auth or methods)"},
	{"near section key", "upstream:\n  url: http://h:1\n  ready: {path: /h, inteval: 1s}\nmethods: {q: }\n",
		"sidecar.yaml:3: upstream.ready.inteval: unknown key: did you mean interval? (want path, interval, timeout or wait)"},
	{"near key in another case", minimal + "Limits: {queue: 1}\n",
		"sidecar.yaml:3: Limits: unknown key: did you mean limits? (want listen, upstream, timeouts, limits, shutdown, headers, admin, preset, adk, protocols, trusted_hosts, trusted_proxies, keep_alive_probe, state, auth or methods)"},
	{"a far key is not near", minimal + "shutdown: {drian: 1s, grace: 1s}\n",
		"sidecar.yaml:3: shutdown.drian: unknown key: did you mean drain? (want drain or agent_grace)\n" +
			"sidecar.yaml:3: shutdown.grace: unknown key (want drain or agent_grace)"},

	// Duplicate keys.
	{"duplicate top key", minimal + "listen: ':1'\nlisten: ':2'\n",
		"sidecar.yaml:4: listen: duplicate key (first written on line 3)"},
	{"duplicate method", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {}\n  r: {}\n  q: {mode: stream}\n",
		"sidecar.yaml:5: methods.q: duplicate key (first written on line 3)"},
	{"duplicate method key", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {mode: stream, mode: async}\n",
		"sidecar.yaml:3: methods.q.mode: duplicate key (first written on line 3)"},
	{"duplicate template key", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    body:\n      a: 1\n      a: 2\n",
		"sidecar.yaml:6: methods.q.body.a: duplicate key (first written on line 5)"},
	{"duplicate JSON template key", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    body: '{\"a\": 1, \"a\": 2}'\n",
		`sidecar.yaml:4: methods.q.body: invalid JSON template: duplicate key "a"`},
	{"non-string key", "upstream: {url: 'http://h:1'}\nmethods:\n  ? [a]\n  : {}\n",
		"sidecar.yaml:3: methods: a key must be a plain string, not a list"},

	// listen and upstream.
	{"listen without port", "listen: 8080\n" + minimal,
		`sidecar.yaml:1: listen: "8080" is not host:port (want e.g. ":8080" or "127.0.0.1:8080")`},
	{"listen named port", "listen: ':http'\n" + minimal,
		`sidecar.yaml:1: listen: ":http": port "http" is not a number from 0 to 65535`},
	{"listen as list", "listen: [a]\n" + minimal, "sidecar.yaml:1: listen: want a single value, not a list"},
	{"upstream null", "upstream:\nmethods: {q: }\n",
		"sidecar.yaml:1: upstream.url: missing (want http://host:port or unix:///path/to.sock)"},
	{"upstream string", "upstream: http://h:1\nmethods: {q: }\n",
		"sidecar.yaml:1: upstream: want a mapping with url and ready, not a string"},
	{"url missing", "upstream:\n  ready: {path: /h}\nmethods: {q: }\n",
		"sidecar.yaml:1: upstream.url: missing (want http://host:port or unix:///path/to.sock)"},
	{"url null", "upstream:\n  url:\nmethods: {q: }\n",
		"sidecar.yaml:2: upstream.url: missing (want http://host:port or unix:///path/to.sock)"},
	{"url https", "upstream: {url: 'https://h:1'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: scheme "https" is not supported (want http://host:port[/base] or unix:///path/to.sock)`},
	{"url no scheme", "upstream: {url: '127.0.0.1:8000'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: invalid URL "127.0.0.1:8000": first path segment in URL cannot contain colon (want http://host:port[/base] or unix:///path/to.sock)`},
	{"url no scheme host", "upstream: {url: 'localhost'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: "localhost" has no scheme (want http://host:port[/base] or unix:///path/to.sock)`},
	{"url no port", "upstream: {url: 'http://localhost/x'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: "http://localhost/x" has no port (want http://host:port, e.g. http://127.0.0.1:8000)`},
	{"url port 0", "upstream: {url: 'http://localhost:0'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: "http://localhost:0": port "0" is not a number from 1 to 65535`},
	{"url no host", "upstream: {url: 'http://:80'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: "http://:80" has no host (want http://host:port[/base] or unix:///path/to.sock)`},
	{"url query", "upstream: {url: 'http://h:1/?a=b'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: "http://h:1/?a=b": a query or fragment is not allowed (want http://host:port[/base] or unix:///path/to.sock)`},
	{"url user", "upstream: {url: 'http://u:p@h:1'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: "http://u:p@h:1": user info is not allowed (want http://host:port[/base] or unix:///path/to.sock)`},
	{"unix two slashes", "upstream: {url: 'unix://agent.sock'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: "unix://agent.sock": the socket path must be absolute, but this names host "agent.sock" (want unix:///path/to.sock, three slashes)`},
	{"unix relative", "upstream: {url: 'unix:agent.sock'}\nmethods: {q: }\n",
		`sidecar.yaml:1: upstream.url: "unix:agent.sock": the socket path must be absolute (want unix:///path/to.sock)`},
	{"unix too long", "upstream: {url: 'unix:///" + strings.Repeat("s", 107) + "'}\nmethods: {q: }\n",
		"sidecar.yaml:1: upstream.url: socket path is 108 bytes, longer than the 107 a Unix socket allows"},
	{"ready path", "upstream:\n  url: http://h:1\n  ready:\n    path: health\n    interval: 0s\n    timeout: -1s\nmethods: {q: }\n",
		"sidecar.yaml:4: upstream.ready.path: \"health\" must start with \"/\"\n" +
			"sidecar.yaml:5: upstream.ready.interval: \"0s\" must be positive\n" +
			"sidecar.yaml:6: upstream.ready.timeout: \"-1s\" must be positive"},
	{"idle timeout", "upstream: {url: http://h:1, idle_timeout: 0s}\nmethods: {q: }\n",
		"sidecar.yaml:1: upstream.idle_timeout: \"0s\" must be positive"},

	// timeouts and limits.
	{"timeouts", minimal + "timeouts:\n  connect: -1s\n  first_byte: 5\n  idle: 5 minutes\n  total: [1]\n",
		"sidecar.yaml:4: timeouts.connect: \"-1s\" is negative (want a positive duration, or 0 for no limit)\n" +
			"sidecar.yaml:5: timeouts.first_byte: 5 has no unit (want a duration such as \"30s\" or \"1m30s\", or 0 for no limit)\n" +
			"sidecar.yaml:6: timeouts.idle: invalid duration \"5 minutes\" (want a duration such as \"30s\" or \"1m30s\")\n" +
			"sidecar.yaml:7: timeouts.total: want a duration such as \"30s\" or \"1m30s\", not a list"},
	{"timeouts not a mapping", minimal + "timeouts: 5s\n",
		"sidecar.yaml:3: timeouts: want a mapping with connect, first_byte, idle and total, not a string"},
	{"limits", minimal + "limits:\n  request_bytes: 0\n  record_bytes: -5\n  reply_bytes: 10 megs\n",
		"sidecar.yaml:4: limits.request_bytes: 0 must be positive\n" +
			"sidecar.yaml:5: limits.record_bytes: -5 must be positive\n" +
			"sidecar.yaml:6: limits.reply_bytes: invalid size \"10 megs\": unknown unit \"megs\" (want a whole number of bytes, or a size such as \"512KiB\" or \"10MB\" (units B, KB, MB, GB, KiB, MiB, GiB))"},
	{"limits odd sizes", minimal + "limits:\n  request_bytes: 1.5MiB\n  record_bytes: 1.5\n  reply_bytes: 99999999999GiB\n",
		"sidecar.yaml:4: limits.request_bytes: invalid size \"1.5MiB\" (want a whole number of bytes, or a size such as \"512KiB\" or \"10MB\" (units B, KB, MB, GB, KiB, MiB, GiB))\n" +
			"sidecar.yaml:5: limits.record_bytes: invalid size 1.5 (want a whole number of bytes, or a size such as \"512KiB\" or \"10MB\" (units B, KB, MB, GB, KiB, MiB, GiB))\n" +
			"sidecar.yaml:6: limits.reply_bytes: 99999999999GiB is out of range"},

	{"limits above their maxima", minimal + "limits:\n  request_bytes: 1025MiB\n  record_bytes: 2GiB\n  reply_bytes: 9223372036854775807\n  header_bytes: 1048577\n",
		"sidecar.yaml:4: limits.request_bytes: 1025MiB is larger than the most allowed, 1GiB\n" +
			"sidecar.yaml:5: limits.record_bytes: 2GiB is larger than the most allowed, 1GiB\n" +
			"sidecar.yaml:6: limits.reply_bytes: 9223372036854775807 is larger than the most allowed, 1GiB\n" +
			"sidecar.yaml:7: limits.header_bytes: 1048577 is larger than the most allowed, 1MiB"},

	// methods.
	{"methods null", "upstream: {url: 'http://h:1'}\nmethods:\n",
		"sidecar.yaml:2: methods: no methods (want a mapping of class_method names to methods, at least one)"},
	{"methods empty", "upstream: {url: 'http://h:1'}\nmethods: {}\n",
		"sidecar.yaml:2: methods: no methods (want a mapping of class_method names to methods, at least one)"},
	{"methods list", "upstream: {url: 'http://h:1'}\nmethods: [query]\n",
		"sidecar.yaml:2: methods: want a mapping of class_method names to methods, not a list"},
	{"method name", "upstream: {url: 'http://h:1'}\nmethods:\n  my-method: {}\n  2fa: {}\n",
		"sidecar.yaml:3: methods.my-method: invalid class_method name (want letters, digits and \"_\", not starting with a digit; or \"*\" for every other name)\n" +
			"sidecar.yaml:4: methods.2fa: invalid class_method name (want letters, digits and \"_\", not starting with a digit; or \"*\" for every other name)"},
	{"method not a mapping", "upstream: {url: 'http://h:1'}\nmethods:\n  q: stream\n",
		"sidecar.yaml:3: methods.q: want a mapping of mode, call, body, reply, output and timeouts (or nothing, for all defaults), not a string"},
	{"mode", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {mode: sync}\n",
		`sidecar.yaml:3: methods.q.mode: unknown mode "sync" (want "", "async", "stream" or "async_stream")`},
	{"bidi mode", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {mode: bidi_stream}\n",
		`sidecar.yaml:3: methods.q.mode: bidi streaming is not supported (want "", "async", "stream" or "async_stream")`},
	{"reply and output", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    reply: xml\n    output: raw\n",
		"sidecar.yaml:4: methods.q.reply: unknown reply \"xml\" (want \"auto\", \"json\", \"sse\", \"ndjson\" or \"text\")\n" +
			"sidecar.yaml:5: methods.q.output: unknown output \"raw\" (want \"wrap\" or \"as_is\")"},
	{"output on a stream method", "upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    output: as_is\n    mode: async_stream\n  '*': {mode: stream, output: wrap}\n",
		"sidecar.yaml:4: methods.q.output: applies to unary methods only (mode \"async_stream\" is served on /api/stream_reasoning_engine)\n" +
			"sidecar.yaml:6: methods.*.output: applies to unary methods only (mode \"stream\" is served on /api/stream_reasoning_engine)"},
	{"calls", `upstream: {url: 'http://h:1'}
methods:
  a:
    call: "POST"
  b:
    call: "FETCH /x"
  c:
    call: "POST x"
  d:
    call: "POST /x?"
  e:
    call: "POST /x?a=1#top"
  f:
    call: "POST /x/{y"
  g:
    call: "POST /x/y}"
  h:
    call: "POST /x/{}"
  i:
    call: "POST /x/{a-b}"
  j:
    call: "POST /x/{a.}"
  k:
    call: "POST /x/{{a}}"
  l:
    call: "POST /x%20y"
  m:
    call: "POST /x/ä"
  n:
    call: "POST /a /b"
  o:
    call: "POST /x#top"
  p:
    call: "POST /x?a=%20"
  q:
    call: "POST /x?a={b c}"
`,
		`sidecar.yaml:4: methods.a.call: "POST" is not "VERB /path" (e.g. "POST /query/{user_id}")
sidecar.yaml:6: methods.b.call: unknown verb "FETCH" (want GET, POST, PUT, PATCH or DELETE)
sidecar.yaml:8: methods.c.call: path "x" must start with "/" (or {route})
sidecar.yaml:10: methods.d.call: path "/x?": empty query after "?" (want ?name=value or ?name={field})
sidecar.yaml:12: methods.e.call: path "/x?a=1#top": '#' is not allowed (no fragment)
sidecar.yaml:14: methods.f.call: path "/x/{y": unbalanced "{" (want {field})
sidecar.yaml:16: methods.g.call: path "/x/y}": unbalanced "}" (want {field})
sidecar.yaml:18: methods.h.call: path "/x/{}": empty {} (want {field})
sidecar.yaml:20: methods.i.call: path "/x/{a-b}": invalid field {a-b} (want {name} or {a.b}: names of letters, digits and "_")
sidecar.yaml:22: methods.j.call: path "/x/{a.}": invalid field {a.} (want {name} or {a.b}: names of letters, digits and "_")
sidecar.yaml:24: methods.k.call: path "/x/{{a}}": unbalanced "{" (want {field})
sidecar.yaml:26: methods.l.call: path "/x%20y": '%' is not allowed (want letters, digits, {field} and -._~!$&'()*+,;=:@/)
sidecar.yaml:28: methods.m.call: path "/x/ä": 'ä' is not allowed (want letters, digits, {field} and -._~!$&'()*+,;=:@/)
sidecar.yaml:30: methods.n.call: "POST /a /b" is not "VERB /path" (e.g. "POST /query/{user_id}")
sidecar.yaml:32: methods.o.call: path "/x#top": '#' is not allowed (no fragment)
sidecar.yaml:34: methods.p.call: path "/x?a=%20": '%' is not allowed (want letters, digits, {field} and -._~!$&'()*+,;=:@/?)
sidecar.yaml:36: methods.q.call: "POST /x?a={b c}" is not "VERB /path" (e.g. "POST /query/{user_id}")`},
	{"bodies", `upstream: {url: 'http://h:1'}
methods:
  a: {body: raw}
  b: {body: 5}
  c: {body: '{"a": }'}
  d: {body: '[1] [2]'}
  e: {body: "{input.x}"}
  f: {body: {input.user_id}}
  g: {body: {a: '{input.}', b: ['{input.a..b}']}}
  h: {body: '{"a": ["{input.1x}"]}'}
  i: {body: {a: .inf, b: !!binary aGk=, c: !!bool maybe}}
`,
		`sidecar.yaml:3: methods.a.body: unknown body "raw" (want "input", "envelope", "none", or a template: a mapping, a list, or a JSON string)
sidecar.yaml:4: methods.b.body: unknown body "5" (want "input", "envelope", "none", or a template: a mapping, a list, or a JSON string)
sidecar.yaml:5: methods.c.body: invalid JSON template: invalid character '}' looking for beginning of value
sidecar.yaml:6: methods.d.body: invalid JSON template: more than one JSON value
sidecar.yaml:7: methods.e.body: "{input.x}" is not JSON (want body: input for the whole input, or the leaf inside a template: {x: "{input.x}"})
sidecar.yaml:8: methods.f.body: {input.user_id} is a YAML mapping here; quote it to substitute the input: "{input.user_id}"
sidecar.yaml:9: methods.g.body.a: "{input.}": invalid input field "" (want "{input}" or "{input.a.b}": names of letters, digits and "_")
sidecar.yaml:9: methods.g.body.b[0]: "{input.a..b}": invalid input field "a..b" (want "{input}" or "{input.a.b}": names of letters, digits and "_")
sidecar.yaml:10: methods.h.body: a[0]: "{input.1x}": invalid input field "1x" (want "{input}" or "{input.a.b}": names of letters, digits and "_")
sidecar.yaml:11: methods.i.body.a: .inf is not a number JSON can carry (quote it to send a string)
sidecar.yaml:11: methods.i.body.b: unsupported tag !!binary (want a string, number, boolean or null)
sidecar.yaml:11: methods.i.body.c: "maybe" is not a boolean (want true or false)`},

	{"template too deep", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {body: " + strings.Repeat("[", 102) + strings.Repeat("]", 102) + "}\n",
		"sidecar.yaml:3: methods.q.body" + strings.Repeat("[0]", 101) + ": nested deeper than 100 levels"},
	{"JSON template too deep", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {body: '" + strings.Repeat("[", 102) + strings.Repeat("]", 102) + "'}\n",
		"sidecar.yaml:3: methods.q.body: invalid JSON template: nested deeper than 100 levels"},
	{"JSON template cut short", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {body: '{\"a\": [1'}\n",
		"sidecar.yaml:3: methods.q.body: invalid JSON template: unexpected EOF"},

	// Aliases and merges gone wrong.
	{"alias cycle in template", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {body: &b {a: [*b]}}\n",
		"sidecar.yaml:3: methods.q.body.a[0]: an alias refers to a node that contains it"},
	{"merge into itself", "upstream: {url: 'http://h:1'}\nmethods:\n  q: &q {<<: *q}\n",
		"sidecar.yaml:3: methods.q.<<: merges a mapping into itself"},
	{"merge a scalar", "upstream: {url: 'http://h:1'}\nmethods:\n  q: {<<: 5}\n  r: {<<: [{}, 6]}\n",
		"sidecar.yaml:3: methods.q.<<: can merge only a mapping or a list of mappings (e.g. <<: *defaults), not a number\n" +
			"sidecar.yaml:4: methods.r.<<: can merge only mappings, not a number"},

	// Many problems at once, in line order, across methods and sections.
	{"several at once", `methods:
  a:
    mode: sync
    call: POST x
  b:
    reply: xml
    bogus: 1
limits: {request_bytes: 0}
upstream:
  url: https://h
listen: nope
`,
		`sidecar.yaml:3: methods.a.mode: unknown mode "sync" (want "", "async", "stream" or "async_stream")
sidecar.yaml:4: methods.a.call: path "x" must start with "/" (or {route})
sidecar.yaml:6: methods.b.reply: unknown reply "xml" (want "auto", "json", "sse", "ndjson" or "text")
sidecar.yaml:7: methods.b.bogus: unknown key (want mode, call, body, reply, output, timeouts, handler, idempotent, description, parameters, example, dialect, emit, headers or scopes)
sidecar.yaml:8: limits.request_bytes: 0 must be positive
sidecar.yaml:10: upstream.url: scheme "https" is not supported (want http://host:port[/base] or unix:///path/to.sock)
sidecar.yaml:11: listen: "nope" is not host:port (want e.g. ":8080" or "127.0.0.1:8080")`},
}

func TestParseProblems(t *testing.T) {
	for _, tt := range problemTests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("sidecar.yaml", []byte(tt.yaml))
			if c != nil {
				t.Errorf("Parse(%q) returned a config with an error", tt.yaml)
			}
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse(%q) error = %v (%T), want *Errors", tt.yaml, err, err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Parse(%q) =\n%s\nwant\n%s", tt.yaml, got, tt.want)
			}
			for i := 1; i < len(errs.Problems); i++ {
				if errs.Problems[i].Line < errs.Problems[i-1].Line {
					t.Errorf("Parse(%q) problems out of line order: %+v", tt.yaml, errs.Problems)
				}
			}
		})
	}
}

func TestParseAliasBomb(t *testing.T) {
	// Each level doubles the last: 2^20 nodes from twenty lines.
	var b strings.Builder
	b.WriteString("upstream: {url: 'http://h:1'}\nmethods:\n  q:\n    body:\n      l0: &l0 [x, x]\n")
	for i := 1; i <= 20; i++ {
		b.WriteString("      l" + strconv.Itoa(i) + ": &l" + strconv.Itoa(i) + " [*l" + strconv.Itoa(i-1) + ", *l" + strconv.Itoa(i-1) + "]\n")
	}
	_, err := Parse("sidecar.yaml", []byte(b.String()))
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse(alias bomb) error = %v, want *Errors", err)
	}
	if want := "sidecar.yaml: the file expands to more than 100000 YAML nodes (through aliases or merge keys?)"; err.Error() != want {
		t.Errorf("Parse(alias bomb) =\n%v\nwant\n%s", err, want)
	}
}

func TestErrorsFormat(t *testing.T) {
	e := &Errors{File: "a.yaml", Problems: []Problem{
		{Line: 0, Msg: "empty file"},
		{Line: 3, Path: "methods.q", Msg: "bad"},
		{Line: 4, Msg: "invalid YAML: oops"},
	}}
	want := "a.yaml: empty file\na.yaml:3: methods.q: bad\na.yaml:4: invalid YAML: oops"
	if got := e.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content string // "" means the file does not exist
		wantErr string
	}{
		{"valid", full, ""},
		{"invalid", "upstream: {url: 'http://h:1'}\nmethods: {q: {mode: sync}}\n",
			`:2: methods.q.mode: unknown mode "sync" (want "", "async", "stream" or "async_stream")`},
		{"missing", "", "reading method map: open "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".yaml")
			if tt.content != "" {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Load(path)
			if tt.wantErr == "" {
				if err != nil || c == nil {
					t.Fatalf("Load(%q) = %v, %v, want a config", path, c, err)
				}
				if len(c.Methods) != 6 {
					t.Errorf("Load(%q) has %d methods, want 6", path, len(c.Methods))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load(%q) error = %v, want it to contain %q", path, err, tt.wantErr)
			}
			if tt.content != "" && !strings.HasPrefix(err.Error(), path+":") {
				t.Errorf("Load(%q) error = %q, want it to start with the path", path, err)
			}
		})
	}
}

// TestDefaultTotalBeforePlatformCut: the platform severs a stream at 15
// minutes, so the default total ends a call first, with room for the
// sidecar's final timeout line.
func TestDefaultTotalBeforePlatformCut(t *testing.T) {
	c, err := Parse("sidecar.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	const cut, room = 15 * time.Minute, 5 * time.Second
	for _, got := range []time.Duration{c.Timeouts.Total, c.Methods[0].Timeouts.Total} {
		if got <= 0 || got > cut-room {
			t.Errorf("default timeouts.total = %s, want at most %s (the platform cuts at %s)", got, cut-room, cut)
		}
	}
}

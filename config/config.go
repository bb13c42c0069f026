package config

import (
	"net/netip"
	"time"
)

// Config is a parsed, validated method map. Build it with Parse or Load;
// the zero value is not useful.
type Config struct {
	// Listen is the address the platform calls. $PORT wins when set.
	// Default: ":8080".
	Listen string

	// Upstream says where the agent listens and how to probe it.
	Upstream Upstream

	// Timeouts are the defaults for every method.
	Timeouts Timeouts

	// Limits bound what one call may cost.
	Limits Limits

	// Shutdown is the drain after SIGTERM.
	Shutdown Shutdown

	// Headers are what the agent's requests carry besides the body.
	Headers Headers

	// Admin is the private listener for /metrics.
	Admin Admin

	// KeepAlive is the keep-alive probe the platform's listener serves
	// (keep_alive_probe); its zero value serves none.
	KeepAlive KeepAlive

	// Protocols are the front doors served, each on its own listener.
	Protocols Protocols

	// State is where A2A tasks and MCP sessions are kept (state).
	State State

	// Auth is who may call the protected doors (auth); its Issuer is ""
	// without the section.
	Auth Auth

	// TrustedHosts are host names (lower case, no port) a request on a
	// loopback connection may carry as its Host besides localhost and the
	// loopback IPs: the public name a gateway on the same machine or pod
	// forwards with. A page of one of them may also POST (its Origin),
	// on the doors that hold Origin on every connection too.
	TrustedHosts []string
	// TrustedProxies are the peers (IP prefixes) whose X-Forwarded-Proto,
	// -Host and -Prefix a door believes when it names its own public URL
	// (the A2A card, MCP's resource metadata): a reverse proxy in front.
	// Default: none, the connection's and its Host only.
	TrustedProxies []netip.Prefix
	// kinds are the protocols Parse was given, for Expanded.
	kinds []Kind

	// Methods in the order the file lists them. The method named "*", if
	// any, is last and serves every name not listed.
	Methods []*Method

	// Preset is "adk" or "". The ADK preset adds the 14 AdkApp methods the
	// file does not declare itself, each served by an "adk.*" handler.
	Preset string

	// ADK configures the "adk.*" handlers.
	ADK ADK

	// routes indexes Methods by inbound route, unary then streaming;
	// Parse builds it once, for Lookup and RouteMethods.
	routes [2]route
}

// ADK configures how the sidecar talks to an ADK api server.
type ADK struct {
	// App is the ADK app name (the agent's folder name for the api
	// server). Required with preset adk or any adk handler.
	App string
	// Keys is "as_is" (sessions and events as the api server writes them,
	// camelCase) or "snake" (AdkApp's snake_case field names; user data
	// such as state keys and tool arguments is never renamed).
	// Default: "as_is".
	Keys string
}

// Upstream is the agent's address and readiness probe.
type Upstream struct {
	// URL is "http://127.0.0.1:N" (any http URL) or "unix:///path/to.sock".
	URL string

	// Network and Address are derived from URL: ("tcp", "127.0.0.1:N") or
	// ("unix", "/path/to.sock").
	Network string
	Address string

	// BaseURL is the http URL requests are built on: URL itself for TCP,
	// "http://agent" for a Unix socket. It carries no trailing slash.
	BaseURL string

	// Ready is the readiness probe.
	Ready Ready

	// IdleTimeout closes a connection to the agent unused this long (or
	// sooner, when the agent is seen to close idle connections sooner).
	// Keep it below the agent's own keep-alive. Default: 4s.
	IdleTimeout time.Duration

	// Command, when set, is the agent's command line: the sidecar starts
	// and supervises it. `sidecar -- CMD ARGS…` sets it too, and wins.
	// Default: none (the agent is started by someone else).
	Command []string

	// Restart is what happens when a started agent exits.
	Restart Restart
}

// Restart is the restart policy of a started agent.
type Restart struct {
	// Policy is "never" (the sidecar drains and exits with the agent's
	// exit code) or "on-failure" (a non-zero exit restarts it).
	// Default: "never".
	Policy string
	// Max is how many restarts are allowed before giving up; 0 means no
	// limit. Default: 5.
	Max int
	// Backoff is the first restart delay, doubling up to 30s.
	// Default: 1s.
	Backoff time.Duration
}

// Shutdown is the drain that follows SIGTERM, SIGINT, SIGHUP or SIGQUIT.
type Shutdown struct {
	// Drain is how long the calls in flight have: unary calls finish
	// within it; calls still running in its last second (its last quarter
	// when it is shorter than 4s) are ended, streams with a final
	// "shutting_down" error line; at its end every connection still open
	// is closed. Default: 6s.
	Drain time.Duration
	// AgentGrace is how long a started agent has to exit after its
	// SIGTERM (sent at the end of the drain) before SIGKILL. Default: 3s.
	AgentGrace time.Duration
}

// ShutdownMargin is what the sidecar allows itself past the drain and the
// agent's grace to reap the agent and exit.
const ShutdownMargin = 500 * time.Millisecond

// Budget is the longest a shutdown takes, from the signal to the sidecar's
// exit, whatever the callers and the agent do: Drain + AgentGrace +
// ShutdownMargin. The defaults' 9.5s fits Cloud Run's fixed 10s between
// SIGTERM and SIGKILL.
func (s Shutdown) Budget() time.Duration { return s.Drain + s.AgentGrace + ShutdownMargin }

// Ready configures how the agent's readiness is probed.
type Ready struct {
	// Path is an HTTP path probed with GET; any 2xx means ready. Empty
	// means a plain connect to the agent's address. Default: "" (connect).
	Path string

	// Interval between probes once the agent is ready. Default: 1s.
	Interval time.Duration

	// Timeout for one probe. Default: 1s.
	Timeout time.Duration

	// Wait is how long a call waits for an agent that is not ready before
	// it is answered 503 with Retry-After. Default: 30s; 0 means no wait.
	Wait time.Duration
}

// Timeouts are the clocks of one call. Zero means no limit.
type Timeouts struct {
	// Connect bounds dialing the agent, retries included. Default: 5s.
	Connect time.Duration
	// FirstByte bounds the wait for the agent's response headers. Default: 5m.
	FirstByte time.Duration
	// Idle bounds the gap between two reads of a streamed reply. Default: 5m.
	Idle time.Duration
	// Total bounds the whole call. Default: 14m50s, DefaultTotal: the
	// platform cuts streams at 15m, and the final line must come first.
	Total time.Duration
}

// Limits bound request and reply sizes.
type Limits struct {
	// RequestBytes caps an inbound request body. Default: 10 MiB.
	RequestBytes int64
	// RecordBytes caps one streamed record (one line out). Default: 8 MiB.
	RecordBytes int
	// ReplyBytes caps a unary reply from the agent. Default: 32 MiB.
	ReplyBytes int64
	// HeaderBytes caps an inbound request's headers. Default: 64 KiB.
	HeaderBytes int
	// HeaderTimeout bounds reading an inbound request's headers, so a
	// slow client cannot hold a connection. Default: 10s.
	HeaderTimeout time.Duration
	// Concurrency caps the calls served at once; 0 means
	// 2 × GOMAXPROCS + 1 (proxy.Concurrency). Default: 0.
	Concurrency int
	// Queue is how many calls may wait for a free slot when Concurrency
	// is reached; more get 503 at once. Default: 100.
	Queue int
	// QueueTimeout is how long a call waits in the queue before it gets
	// 503 with Retry-After. Default: 10s.
	QueueTimeout time.Duration
	// BodyTimeout bounds reading a request body once its call holds a
	// concurrency slot (a body over 64 KiB, or of unknown length, is read
	// only then): a caller that sends it slowly gets 408 and the slot is
	// freed, instead of holding it for as long as it trickles. Default: 30s.
	BodyTimeout time.Duration
	// TaskStoreBytes caps the A2A door's task store: the tasks kept for
	// tasks/get and tasks/cancel, each counted by its ids, status message
	// and artifact. Over it the oldest ended tasks are forgotten first.
	// Default: 64 MiB.
	TaskStoreBytes int64
	// MCPSessions caps the MCP door's sessions of its 2025 revisions (the
	// Mcp-Session-Id each initialize opens): past it the least recently
	// used is forgotten, and its client, answered 404, initializes again.
	// Default: 10000.
	MCPSessions int
	// Subscriptions caps the task subscriptions served at once (A2A's
	// SubscribeToTask and tasks/resubscribe): each holds a connection, a
	// goroutine and a queue of the task's events (parts shared with the
	// task store, never copied). Past it a subscription is refused.
	// Default: 256.
	Subscriptions int
	// PerCaller limits each caller's calls on the front doors; zero
	// fields: no such limit.
	PerCaller PerCaller
	// Live caps the conversations of bidi methods (limits.live).
	Live Live
	// Questions caps the questions agents ask (limits.questions).
	Questions Questions
	// Parts caps the parts that are not text, each way (limits.parts).
	Parts Parts
}

// PerCaller is limits.per_caller: each caller (a token's subject, an API
// key, else the client's address) may start Requests calls in every
// Per, and hold Concurrent at once.
type PerCaller struct {
	// Requests a caller may start in each Per; 0: no rate limit.
	Requests int
	// Per is the window Requests are counted in. Default: 1m.
	Per time.Duration
	// Concurrent calls a caller may hold at once; 0: no limit.
	Concurrent int
}

// On reports whether any per-caller limit is set.
func (p PerCaller) On() bool { return p.Requests > 0 || p.Concurrent > 0 }

// Admin is the private listener: /metrics and /healthz, never on the
// public port.
type Admin struct {
	// Listen is its address, e.g. "127.0.0.1:9090". Default: "" (off).
	Listen string
}

// Headers are what the agent's requests carry besides the body.
type Headers struct {
	// Forward lists inbound request headers passed on to the agent, on top
	// of the built-in allow-list (traceparent, tracestate,
	// X-Cloud-Trace-Context, X-Request-Id). Authorization and cookies
	// reach the agent only when listed here. Default: none.
	Forward []string
	// Set are headers added to every request to the agent. A value may
	// reference the environment as ${NAME}, resolved when the file is
	// loaded (for secrets: they are never printed or logged).
	Set map[string]string
	// SetTemplates are the values of Set as written, before ${NAME}
	// expansion.
	SetTemplates map[string]string
}

// Mode is a method's api_mode; it decides the route the method is served on.
type Mode string

// The four api_mode values of the platform.
const (
	ModeSync        Mode = ""
	ModeAsync       Mode = "async"
	ModeStream      Mode = "stream"
	ModeAsyncStream Mode = "async_stream"
	// ModeBidi is a conversation, not a platform api_mode: frames each
	// way over a WebSocket until either side closes (docs/live.md). It
	// serves neither call route; the doors that converse name it.
	ModeBidi Mode = "bidi"
)

// Streaming reports whether the mode is served on the streaming route.
func (m Mode) Streaming() bool { return m == ModeStream || m == ModeAsyncStream }

// BodyKind says what the agent receives as the request body.
type BodyKind string

// Body kinds.
const (
	BodyInput    BodyKind = "input"    // the envelope's input object (default)
	BodyEnvelope BodyKind = "envelope" // {"class_method", "input"} unchanged
	BodyNone     BodyKind = "none"     // no body
	BodyTemplate BodyKind = "template" // a JSON template with "{input.x}" leaves
)

// Reply says how the agent's response is deframed.
type Reply string

// Reply formats.
const (
	ReplyAuto   Reply = "auto" // by the response's media type (default)
	ReplyJSON   Reply = "json"
	ReplySSE    Reply = "sse"
	ReplyNDJSON Reply = "ndjson"
	ReplyText   Reply = "text"
)

// Output says how a unary reply becomes the platform's {"output": …}.
type Output string

// Output policies.
const (
	OutputWrap Output = "wrap"  // the reply becomes {"output": reply} (default)
	OutputAsIs Output = "as_is" // the agent already answers {"output": …}
)

// Method is one class_method and how it reaches the agent.
type Method struct {
	// Name is the class_method; "*" serves every name not listed.
	Name string
	// Scopes are the scopes a caller's token must grant to call the
	// method on a door the auth section protects (403 insufficient_scope
	// else; MCP's tools/list shows such a caller no tool it may not
	// call); nil: any verified caller. ScopesLine is where they are
	// declared.
	Scopes     []string
	ScopesLine int
	// Mode is the api_mode. Default: "" (unary).
	Mode Mode
	// AllRoutes is set for a "*" method declared without a mode: it then
	// serves unlisted names on both routes.
	AllRoutes bool
	// Verb and Path come from "call: VERB /path/{field}". Default: "POST /<name>".
	Verb string
	Path string
	// Segments is Path, up to a "?", split at its {field} placeholders,
	// built once. The placeholder {class_method} takes the called method's
	// name, {route} the inbound route the call came on (FieldRoute).
	Segments []PathSegment
	// Query is the part of Path after a "?", split the same way; nil for
	// none. Its {field} values are escaped as query components.
	Query []PathSegment
	// Body is what the agent receives; Template is set for BodyTemplate.
	// Default: BodyInput, or BodyNone when Verb is GET or DELETE.
	Body     BodyKind
	Template any
	// Reply is how the response is deframed. Default: ReplyAuto.
	Reply Reply
	// Output applies to unary methods only. Default: OutputWrap (set on
	// every method).
	Output Output
	// Timeouts are the method's clocks, defaults filled in.
	Timeouts Timeouts
	// Idempotent allows retrying a 429 or 503 that carries Retry-After:
	// the agent did not act on the request. Default: false.
	Idempotent bool
	// Handler, when set, names built-in code that serves the method with
	// requests of its own (the ADK preset's "adk.*" handlers); Verb, Path,
	// Body, Reply and Output do not apply then.
	Handler string
	// Description and Parameters (an OpenAPI schema object) describe the
	// method in the deploy request's spec.classMethods, for the platform's
	// SDK, and as MCP's tool; sidecar dev's playground shows the
	// description with the method. They do not change how a call is
	// served. Default: none.
	Description string
	Parameters  map[string]any
	// Example is an input for the method (any JSON value, nil when not
	// given): sidecar dev's playground pre-fills its editor with it. It
	// changes nothing about how a call is served.
	Example any
	// Dialect is the stream dialect the agent speaks, for the mapping
	// stage. Default: "", read as DialectAuto (detected from the reply;
	// see Speaking).
	Dialect Dialect
	// Emit is what the caller gets: the agent's records (EmitRaw), text
	// lines (EmitText) or ADK events (EmitADK). Default: "", read as EmitRaw
	// (see Emitting).
	Emit Emit
	// Headers are added to this method's requests to the agent, after the
	// top-level Headers.Set (values already expanded); HeaderTemplates are
	// them as written. Default: none.
	Headers         map[string]string
	HeaderTemplates map[string]string
	// Line is where the method is declared in the file, for messages; 0
	// for a method a preset added.
	Line int
}

// Placeholders of a call path that are not input fields.
const (
	FieldClassMethod = "class_method" // the called method's name
	FieldRoute       = "route"        // the inbound route the call came on
)

// PathSegment is a literal piece of a path or a {field} placeholder.
type PathSegment struct {
	Literal string // set when Field is empty
	Field   string // input field whose value fills this segment
}

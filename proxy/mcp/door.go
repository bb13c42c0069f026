package mcp

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The protocol versions the door speaks: the stateless revision, and the
// two revisions of the initialize handshake clients still use.
const (
	version20260728 = "2026-07-28"
	version20251125 = "2025-11-25"
	version20250618 = "2025-06-18"
)

// supported lists the versions, newest first: the data.supported of an
// UnsupportedProtocolVersionError, server/discover's supportedVersions.
var supported = []string{version20260728, version20251125, version20250618}

// RouteHealth is the door's health route, besides the MCP endpoint.
const RouteHealth = "/healthz"

// listTTL is the ttlMs of tools/list and server/discover (2026-07-28):
// the tools are the method map's, fixed while the sidecar runs.
const listTTL = 60_000

// Door is the MCP front door (a proxy.Door). Build it with New.
type Door struct {
	opts     Options
	tools    map[string]*tool
	sessions *sessions
	shared   *shared      // with state.store: redis, the sessions every replica finds (sessions unused)
	inflight *inflight    // the 2025 sessions' tools/calls, for notifications/cancelled
	maxText  int64        // the most of a streamed answer's text a result keeps: limits.reply_bytes
	parts    config.Parts // limits.parts: the agent's parts a call's result carries

	// questions are limits.questions; waiting the elicitations sent and
	// not yet answered (ask.go); stateKey signs the requestState of
	// 2026-07-28's input-required results (stateless.go): the process's
	// own, or with the Redis store every replica's, read once (keyShared).
	questions config.Questions
	waiting   *waiting
	stateKey  atomic.Pointer[[]byte]
	keyMu     sync.Mutex
	keyShared bool
	keyTried  time.Time

	// The answers that need no agent, made once: tools/list's result in
	// each era, server/discover's, the server's info.
	listLegacy, listModern, discover, info []byte
	metadata                               []byte // the protected resource metadata: nil unless auth protects the door
	// order is the tools' names as listed; scopes are those the tools
	// need, each once, on a door auth protects (ScopesSupported): with
	// any, tools/list is the caller's (listFor).
	order  []string
	scopes []string
}

// Close ends what the door runs besides its calls: with the Redis store,
// its listening for other replicas' cancels.
func (d *Door) Close() error {
	if d.shared != nil {
		d.shared.close()
	}
	return nil
}

// New is the MCP door serving opts.Methods of cfg's map (nil: every method
// the map lists) as tools: each the entry of that name, else the "*"
// entry (streaming first). Its sessions are at most limits.mcp_sessions.
func New(cfg *config.Config, opts Options) (*Door, error) {
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	d := &Door{opts: opts, tools: make(map[string]*tool), sessions: newSessions(cfg.Limits.MCPSessions),
		inflight: newInflight(cfg.Limits),
		maxText:  cfg.Limits.ReplyBytes, parts: cfg.Limits.Parts, questions: cfg.Limits.Questions, waiting: newWaiting(cfg.Limits.Questions.Waiting)}
	key := newStateKey()
	d.stateKey.Store(&key)
	if opts.Store != nil {
		d.shared = newShared(opts.Store, cfg.Limits.MCPSessions)
	}
	protected := cfg.Auth.Protects(Name)
	names := opts.Methods
	if names == nil {
		for _, m := range cfg.Methods {
			if m.Name != "*" && m.Mode != config.ModeBidi { // a conversation is no tool
				names = append(names, m.Name)
			}
		}
	}
	var entries []byte
	for _, name := range names {
		m := methodOf(cfg, name)
		if m == nil {
			return nil, fmt.Errorf("method %q is not in the method map", name)
		}
		t := &tool{name: name, method: m, stream: m.Mode.Streaming()}
		if t.stream && m.Emitting() != config.EmitText {
			// Any dialect the agent streams is read as text: the stage
			// maps it, as emit: text would.
			c := *m
			c.Emit = config.EmitText
			t.method = &c
		}
		d.tools[name] = t
		d.order = append(d.order, name)
		for _, sc := range m.Scopes {
			if protected && !slices.Contains(d.scopes, sc) {
				d.scopes = append(d.scopes, sc)
			}
		}
		if len(entries) > 0 {
			entries = append(entries, ',')
		}
		entries = appendTool(entries, name, m)
	}
	d.metadata = resourceMetadata(cfg, d.scopes)
	list := append(append([]byte(`{"tools":[`), entries...), ']')
	d.listLegacy = append(list[:len(list):len(list)], '}')
	d.listModern = fmt.Appendf(list, `,"resultType":"complete","ttlMs":%d,"cacheScope":"public"}`, listTTL)
	version := opts.Version
	if version == "" {
		version = buildVersion()
	}
	d.info = fmt.Appendf(nil, `{"name":"sidecar","version":%q}`, version)
	versions, _ := json.Marshal(supported)
	d.discover = fmt.Appendf(nil, `{"resultType":"complete","supportedVersions":%s,"capabilities":{"tools":{}},"_meta":{%q:%s},"ttlMs":%d,"cacheScope":"public"}`,
		versions, metaServerInfo, d.info, listTTL)
	return d, nil
}

// buildVersion is the sidecar's version for serverInfo: its module's, or
// "dev" for a build from a work tree.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Protocol names the door in the call's log line and metrics.
func (*Door) Protocol() string { return Name }

// Handler serves the MCP endpoint (POST: every message served by the
// Server's call handler, which reads the body and has Open decode it;
// DELETE: ends a session; GET: 405, as the door opens no server-initiated
// stream) and /healthz. The endpoint refuses a POST whose Accept lacks
// either of MCP's two types (406); what a web page of another site could
// send (a foreign Host on loopback, a foreign Origin: the transport's
// MUST) the Server refused before (hostcheck). Every request answered here, health probes
// aside, goes through refuse: the log line and metrics of a call.
func (d *Door) Handler(call func(route string, stream bool) http.Handler, health http.Handler, refuse core.Refuse) http.Handler {
	calls := call(d.opts.Path, false)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case d.opts.Path:
			switch r.Method {
			case http.MethodPost:
				if !accepts(r.Header.Values("Accept")) {
					refuse(w, r, d.opts.Path, core.Failure{Status: http.StatusNotAcceptable, Reason: "NOT_ACCEPTABLE", Outcome: metrics.BadRequest,
						Message: "Not Acceptable: the Accept header must list both application/json and text/event-stream"})
					return
				}
				calls.ServeHTTP(w, r)
			case http.MethodDelete:
				refuse(w, r, d.opts.Path, d.endSession(r))
			default:
				d.notAllowed(w, r, refuse, "POST, DELETE")
			}
		case RouteHealth:
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				d.notAllowed(w, r, refuse, "GET, HEAD")
				return
			}
			health.ServeHTTP(w, r)
		default:
			if d.isMetadata(r.URL.Path) {
				d.serveMetadata(w, r, refuse)
				return
			}
			refuse(w, r, "", core.NoRoute(r.URL.Path, "POST "+d.opts.Path+" (MCP, Streamable HTTP) and GET "+RouteHealth))
		}
	})
}

// notAllowed refuses a method the route, the request's path, does not
// take: 405 with Allow.
func (d *Door) notAllowed(w http.ResponseWriter, r *http.Request, refuse core.Refuse, allow string) {
	w.Header().Set("Allow", allow)
	f := core.NotAllowed(r.Method, r.URL.Path, allow)
	if r.Method == http.MethodGet && r.URL.Path == d.opts.Path {
		f.Message += ": this server opens no server-initiated SSE stream"
	}
	refuse(w, r, r.URL.Path, f)
}

// accepts reports whether Accept lists both application/json and
// text/event-stream (the Streamable HTTP transport's MUST), wildcards
// counting for what they cover.
func accepts(values []string) bool {
	var json, sse bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch mt {
			case "*/*":
				json, sse = true, true
			case "application/*", "application/json":
				json = true
			case "text/*", "text/event-stream":
				sse = true
			}
		}
	}
	return json && sse
}

// endSession is the answer to DELETE: it ends the session its
// Mcp-Session-Id names (200), unknown 404, none 400; a store that fails
// it 503 (storeFailed).
func (d *Door) endSession(r *http.Request) *core.Answer {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return reply(nil, http.StatusBadRequest, nil, &rpcError{code: codeInvalidRequest,
			message: "Bad Request: DELETE ends a session, and the Mcp-Session-Id header naming it is missing"})
	}
	ended := false
	if d.shared == nil {
		ended = d.sessions.end(id, core.OwnerOfRequest(r))
	} else {
		var err error
		if ended, err = d.shared.end(r.Context(), id, core.OwnerOfRequest(r)); err != nil {
			return storeFailed(nil, err)
		}
	}
	if !ended {
		return reply(nil, http.StatusNotFound, nil, &rpcError{code: codeSessionNotFound,
			message: "Session not found: " + strconv.Quote(core.Clip(id)) + " has ended or was never opened here"})
	}
	return &core.Answer{Status: http.StatusOK, Outcome: metrics.OK}
}

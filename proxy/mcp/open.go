package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Open decodes one JSON-RPC message, its body read by the Server. A
// tools/call is the call for the agent, its exchange the writer of the
// tool's result; everything else (initialize, server/discover, tools/list,
// ping, notifications, every error) is answered here, a *core.Answer.
// The revision is the request's: initialize opens a session of a 2025
// revision (under 2026-07-28, an unknown method); MCP-Protocol-Version
// 2026-07-28 is the stateless revision;
// a 2025 version, or none, needs the session's Mcp-Session-Id.
func (d *Door) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	req, rerr := readRequest(body)
	if rerr != nil {
		return core.Exchange{}, reply(nil, http.StatusBadRequest, nil, rerr)
	}
	name := core.Call{Name: core.Clip(req.method)}
	p, perr := readParams(req.params)
	hv, hvSent := headerValue(r.Header, "Mcp-Protocol-Version")
	var a *core.Answer
	switch {
	case req.method == "initialize" && !(hvSent && hv == version20260728):
		// Whatever its MCP-Protocol-Version says, but 2026-07-28: that
		// revision removed initialize, and modern answers it 404 -32601.
		a = d.initialize(r, req, p, perr)
	case hvSent && hv == version20260728:
		return d.modern(cfg, route, r, req, p, perr)
	case hvSent && hv != version20251125 && hv != version20250618:
		a = unsupportedVersion(req.id, hv)
	case !hvSent && p.versionSet:
		a = reply(req.id, http.StatusBadRequest, nil, &rpcError{code: codeHeaderMismatch,
			message: "Header mismatch: the MCP-Protocol-Version header is missing (the body's _meta names " + strconv.Quote(core.Clip(p.version)) + ")"})
	default:
		return d.legacy(cfg, route, r, req, p, perr, hv, body)
	}
	return core.Exchange{Call: name}, a
}

// headerValue is the one value of header name; sent is false when it is
// absent. Several values are one value joined, which matches nothing.
func headerValue(h http.Header, name string) (v string, sent bool) {
	vs := h.Values(name)
	return strings.Join(vs, ", "), len(vs) > 0
}

// unsupportedVersion is the answer to a request of a protocol version the
// door does not speak: 400, -32022 with the versions it does.
func unsupportedVersion(id json.RawMessage, v string) *core.Answer {
	data, _ := json.Marshal(map[string]any{"supported": supported, "requested": core.Clip(v)})
	msg := "Unsupported protocol version " + strconv.Quote(core.Clip(v)) + ": this server speaks " + strings.Join(supported, ", ")
	if !wellFormed(v) {
		msg = "Malformed protocol version " + strconv.Quote(core.Clip(v)) + " (want a date such as 2026-07-28): this server speaks " + strings.Join(supported, ", ")
	}
	return reply(id, http.StatusBadRequest, nil, &rpcError{code: codeUnsupportedVersion, message: msg, data: data})
}

// wellFormed reports whether v is a protocol version's shape, YYYY-MM-DD.
func wellFormed(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range v {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// initialize opens a session of a 2025 revision, the request's
// Authorization its owner: the version the client asked when the door
// speaks it, else the newest 2025 one (the client then decides whether it
// speaks that). Its answer carries the session's Mcp-Session-Id, the
// server's tools capability and info.
func (d *Door) initialize(r *http.Request, req request, p params, perr *rpcError) *core.Answer {
	switch {
	case req.notification():
		return reply(nil, http.StatusBadRequest, nil, &rpcError{code: codeInvalidRequest, message: "initialize is a request: it needs an id"})
	case perr != nil:
		return reply(req.id, http.StatusBadRequest, nil, perr)
	}
	v := version20251125
	if p.protocol == version20250618 {
		v = version20250618
	}
	var s session
	if d.shared == nil {
		s = d.sessions.open(v, core.OwnerOfRequest(r), core.HolderOf(r))
		d.sessions.declare(s.id, modesOf(p.caps, v))
	} else {
		var err error
		if s, err = d.shared.open(r.Context(), v, core.OwnerOfRequest(r), core.HolderOf(r), modesOf(p.caps, v)); err != nil {
			return storeFailed(req.id, err)
		}
	}
	result := fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":%s}`, v, d.info)
	a := reply(req.id, http.StatusOK, result, nil)
	a.Header.Set("Mcp-Session-Id", s.id)
	return a
}

// legacy serves a message of a 2025 revision: it needs the
// Mcp-Session-Id of an initialized session (400 without, 404 for one the
// door does not hold, or that another Authorization opened), and the
// session's version if it names one.
func (d *Door) legacy(cfg *config.Config, route string, r *http.Request, req request, p params, perr *rpcError, hv string, body []byte) (core.Exchange, error) {
	name := core.Call{Name: core.Clip(req.method)}
	id, _ := headerValue(r.Header, "Mcp-Session-Id")
	if id == "" {
		return core.Exchange{Call: name}, reply(req.id, http.StatusBadRequest, nil, &rpcError{code: codeInvalidRequest,
			message: "Bad Request: Mcp-Session-Id header is required (send initialize first, or MCP-Protocol-Version: 2026-07-28 and its _meta)"})
	}
	var s session
	var ok bool
	if d.shared == nil {
		s, ok = d.sessions.find(id, core.OwnerOfRequest(r))
	} else {
		var err error
		if s, ok, err = d.shared.find(r.Context(), id, core.OwnerOfRequest(r)); err != nil {
			return core.Exchange{Call: name}, storeFailed(req.id, err)
		}
	}
	if !ok {
		why := "the session ended, was forgotten past limits.mcp_sessions, or is another replica's"
		if d.shared != nil {
			why = "the session ended, or was forgotten past limits.mcp_sessions"
		}
		return core.Exchange{Call: name}, reply(req.id, http.StatusNotFound, nil, &rpcError{code: codeSessionNotFound,
			message: "Session not found: initialize again (" + why + ")"})
	}
	if hv != "" && hv != s.version {
		return core.Exchange{Call: name}, reply(req.id, http.StatusBadRequest, nil, &rpcError{code: codeInvalidRequest,
			message: fmt.Sprintf("Bad Request: MCP-Protocol-Version %q is not the session's (%s)", hv, s.version)})
	}
	if req.method == "notifications/cancelled" && perr == nil && p.requestID != nil && !d.inflight.cancel(id, p.requestID) && d.shared != nil {
		// Not served here: the replica serving it hears it.
		if err := d.shared.cancel(r.Context(), id, p.requestID); err != nil {
			return core.Exchange{Call: name}, storeFailed(req.id, err)
		}
	}
	if req.response {
		return core.Exchange{Call: name}, d.responded(r.Context(), id, body)
	}
	if req.notification() {
		return core.Exchange{Call: name}, accepted()
	}
	if perr != nil {
		return core.Exchange{Call: name}, reply(req.id, http.StatusOK, nil, perr)
	}
	switch req.method {
	case "ping":
		return core.Exchange{Call: name}, reply(req.id, http.StatusOK, []byte(`{}`), nil)
	case "tools/list":
		return core.Exchange{Call: name}, reply(req.id, http.StatusOK, d.listFor(r, false), nil)
	case "tools/call":
		return d.call(route, r, req, p, id, s.modes)
	}
	return core.Exchange{Call: name}, reply(req.id, http.StatusOK, nil, &rpcError{code: codeMethodNotFound,
		message: fmt.Sprintf("Method not found: %q (this server serves tools: tools/list and tools/call)", core.Clip(req.method))})
}

// modern serves a message of the stateless revision, 2026-07-28: the
// version in its _meta, and its Mcp-Method (and for tools/call Mcp-Name)
// header must be the body's (400, -32020); an unknown method is 404
// -32601 before any of that is checked.
func (d *Door) modern(cfg *config.Config, route string, r *http.Request, req request, p params, perr *rpcError) (core.Exchange, error) {
	name := core.Call{Name: core.Clip(req.method)}
	mismatch := func(format string, args ...any) (core.Exchange, error) {
		return core.Exchange{Call: name}, reply(req.id, http.StatusBadRequest, nil, &rpcError{code: codeHeaderMismatch, message: "Header mismatch: " + fmt.Sprintf(format, args...)})
	}
	// The _meta a 2026-07-28 request must carry, missing: invalid params
	// (the suite's SEP-2575 checks), 400 as every refusal before serving.
	invalid := func(format string, args ...any) (core.Exchange, error) {
		return core.Exchange{Call: name}, reply(req.id, http.StatusBadRequest, nil, &rpcError{code: codeInvalidParams, message: "Invalid params: " + fmt.Sprintf(format, args...)})
	}
	switch {
	case req.response:
		return core.Exchange{Call: name}, reply(nil, http.StatusBadRequest, nil, &rpcError{code: codeInvalidRequest,
			message: "Bad Request: a 2026-07-28 client sends no JSON-RPC responses"})
	case req.notification():
		return core.Exchange{Call: name}, accepted()
	case req.method != "server/discover" && req.method != "tools/list" && req.method != "tools/call":
		// Before _meta: a method the revision removed (ping, initialize)
		// is not found whatever its params, so that a client sending
		// ping without _meta (the Go SDK v1.8.0) sees -32601.
		return core.Exchange{Call: name}, reply(req.id, http.StatusNotFound, nil, &rpcError{code: codeMethodNotFound,
			message: fmt.Sprintf("Method not found: %q (this server serves server/discover, tools/list and tools/call)", core.Clip(req.method))})
	case perr != nil:
		return core.Exchange{Call: name}, reply(req.id, http.StatusOK, nil, perr)
	case !p.metaSet:
		return invalid("params._meta is missing (a 2026-07-28 request names its protocol version and client capabilities there)")
	case !p.versionSet:
		return invalid("params._meta[%q] is missing (MCP-Protocol-Version is %s)", metaVersion, version20260728)
	case p.version != version20260728:
		return mismatch("MCP-Protocol-Version %s is not the _meta's %q", version20260728, core.Clip(p.version))
	case !p.capsSet:
		return invalid("params._meta[%q] is missing (a 2026-07-28 request declares its client capabilities, {} for none)", metaCapabilities)
	}
	if mm, sent := headerValue(r.Header, "Mcp-Method"); !sent {
		return mismatch("the Mcp-Method header is missing (the body's method is %q)", core.Clip(req.method))
	} else if mm != req.method {
		return mismatch("Mcp-Method %q is not the body's method %q", core.Clip(mm), core.Clip(req.method))
	}
	switch req.method {
	case "server/discover":
		return core.Exchange{Call: name}, reply(req.id, http.StatusOK, d.discover, nil)
	case "tools/list":
		return core.Exchange{Call: name}, reply(req.id, http.StatusOK, d.listFor(r, true), nil)
	default: // tools/call
		h, sent := headerValue(r.Header, "Mcp-Name")
		n, ok := headerName(h)
		switch {
		case !sent:
			return mismatch("the Mcp-Name header is missing (the body's params.name is %q)", core.Clip(p.name))
		case !ok:
			return mismatch("Mcp-Name %q is neither plain ASCII nor =?base64?…?=", core.Clip(h))
		case n != p.name:
			return mismatch("Mcp-Name %q is not the body's params.name %q", core.Clip(n), core.Clip(p.name))
		}
	}
	return d.call(route, r, req, p, "", 0) // tools/call
}

// call opens a tools/call: the tool's method called with the arguments as
// its input, its exchange the writer of the tool's result; in a 2025
// session (session, its id; "" for 2026-07-28) one notifications/cancelled
// can end. An unknown tool, or no name, is invalid params.
func (d *Door) call(route string, r *http.Request, req request, p params, session string, modes modes) (core.Exchange, error) {
	name := core.Call{Name: core.Clip(p.name)}
	if !p.nameSet {
		return core.Exchange{Call: core.Call{Name: req.method}}, reply(req.id, http.StatusOK, nil, &rpcError{code: codeInvalidParams, message: "tools/call needs params.name, the tool to call"})
	}
	t := d.tools[p.name]
	if t == nil {
		return core.Exchange{Call: name}, reply(req.id, http.StatusOK, nil, &rpcError{code: codeInvalidParams,
			message: fmt.Sprintf("Unknown tool %q (tools/list lists this server's)", core.Clip(p.name))})
	}
	input := p.arguments
	if input == nil {
		input = json.RawMessage(`{}`)
	}
	ex := &exchange{id: req.id, token: p.progressToken, modern: session == "", maxText: d.maxText,
		door: d, stream: t.stream, modes: modes, opened: time.Now(), args: input}
	if session == "" {
		ex.modes = modesOf(p.caps, version20260728)
		var a *core.Answer
		if input, a = d.answers(r, req, p, t, input, ex); a != nil {
			return core.Exchange{Call: name}, a
		}
	}
	c := core.Call{Method: t.method, Name: t.name, Input: core.Input{Raw: input}, Header: r.Header, Route: route}
	ex.call = c
	if session == "" {
		return core.Exchange{Call: c, Stream: t.stream, Writer: ex}, nil
	}
	if d.shared != nil {
		if err := d.shared.listen(r.Context(), d.inflight, d.waiting); err != nil {
			return core.Exchange{Call: name}, storeFailed(req.id, err)
		}
	}
	ex.inflight, ex.key = d.inflight, callKey{session, string(req.id)}
	return core.Exchange{Call: c, Stream: t.stream, Writer: ex, Context: ex.context}, nil
}

// reply is the door's own answer: a JSON-RPC response (result, or e) with
// status. Its outcome is OK for a result, a bad request for an error, its
// log line's reason NOT_FOUND for a 404 (a method, a session), else
// BAD_REQUEST.
func reply(id json.RawMessage, status int, result []byte, e *rpcError) *core.Answer {
	a := &core.Answer{Status: status, Outcome: metrics.OK, Header: http.Header{"Content-Type": {"application/json"}}}
	if e != nil {
		a.Outcome, a.Reason = metrics.BadRequest, "BAD_REQUEST"
		if status == http.StatusNotFound {
			a.Reason = "NOT_FOUND"
		}
	}
	a.Body = append(response(id, result, e), '\n')
	return a
}

// accepted is the answer to a notification or a client's response: 202,
// no body.
func accepted() *core.Answer { return &core.Answer{Status: http.StatusAccepted, Outcome: metrics.OK} }

func writeRPC(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

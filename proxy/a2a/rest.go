package a2a

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The HTTP+JSON binding's routes (A2A 1.0 §11.3, a2a.proto's
// google.api.http rules), each also under one /{tenant} segment, which
// the door takes and ignores: it serves one agent. A2A 0.3's binding is
// the same routes under /v1 (/v1/message:send, …), which 1.0 reads as
// the tenant "v1": the version (A2A-Version) says which shapes answer,
// the path only which operation. Each is the route label of its calls'
// log lines and metrics, never the request's own path.
const (
	RouteSend         = "/message:send"
	RouteStream       = "/message:stream"
	RouteTask         = "/tasks/{id}"
	RouteTasks        = "/tasks"
	RouteCancel       = "/tasks/{id}:cancel"
	RouteSubscribe    = "/tasks/{id}:subscribe"
	RoutePushConfigs  = "/tasks/{id}/pushNotificationConfigs"
	RouteExtendedCard = "/extendedAgentCard"
	// RouteV1Card is A2A 0.3's HTTP+JSON card, which Gemini Enterprise
	// and Agent Platform's A2A surface read: the card the well-known path
	// serves.
	RouteV1Card = "/v1/card"
)

// restRoutes are the routes, the methods each takes, the A2A 1.0 method
// each is (the call's name in its log line), and whether it streams.
var restRoutes = map[string]struct {
	allow, name string
	stream      bool
}{
	RouteSend:         {"POST", "SendMessage", false},
	RouteStream:       {"POST", "SendStreamingMessage", true},
	RouteTask:         {"GET", "GetTask", false},
	RouteTasks:        {"GET", "ListTasks", false},
	RouteCancel:       {"POST", "CancelTask", false},
	RouteSubscribe:    {"GET, POST", "SubscribeToTask", true},
	RoutePushConfigs:  {"GET, POST, DELETE", "TaskPushNotificationConfig", false},
	RouteExtendedCard: {"GET", "GetExtendedAgentCard", false},
}

// restRoute is the HTTP+JSON route of an escaped path and the task id
// it names ("" for none), ok false for a path that is none of them. A
// path is read without a tenant first: /tasks/tasks is the task "tasks",
// not the list of the tenant "tasks".
func restRoute(escaped string) (route, id string, ok bool) {
	if escaped == RouteV1Card {
		return RouteV1Card, "", true
	}
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	if route, id, ok = matchREST(segs); !ok && len(segs) > 1 && segs[0] != "" {
		route, id, ok = matchREST(segs[1:])
	}
	return route, id, ok
}

// matchREST matches the segments of a path without its tenant.
func matchREST(segs []string) (route, id string, ok bool) {
	switch {
	case len(segs) == 1:
		switch segs[0] {
		case "message:send":
			return RouteSend, "", true
		case "message:stream":
			return RouteStream, "", true
		case "tasks":
			return RouteTasks, "", true
		case "extendedAgentCard":
			return RouteExtendedCard, "", true
		}
	case segs[0] != "tasks" || segs[1] == "":
	case len(segs) == 2:
		id, route = segs[1], RouteTask
		if s, found := strings.CutSuffix(id, ":cancel"); found {
			id, route = s, RouteCancel
		} else if s, found := strings.CutSuffix(id, ":subscribe"); found {
			id, route = s, RouteSubscribe
		}
		if id, err := url.PathUnescape(id); err == nil && id != "" {
			return route, id, true
		}
	case (len(segs) == 3 || len(segs) == 4) && segs[2] == "pushNotificationConfigs":
		if id, err := url.PathUnescape(segs[1]); err == nil {
			return RoutePushConfigs, id, true
		}
	}
	return "", "", false
}

// allows reports whether allow, a route's methods, has method (HEAD
// where GET is).
func allows(allow, method string) bool {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	for m := range strings.SplitSeq(allow, ", ") {
		if m == method {
			return true
		}
	}
	return false
}

// restHandlers are the Server's call handlers of the HTTP+JSON routes:
// every route, the ones answered without the agent too, is a call, so
// each has the gate's limits, drain, log line and metrics, as JSON-RPC's
// tasks/get has.
func restHandlers(call func(route string, stream bool) http.Handler) map[string]http.Handler {
	h := make(map[string]http.Handler, len(restRoutes))
	for route, r := range restRoutes {
		h[route] = call(route, r.stream)
	}
	return h
}

// serveREST serves an HTTP+JSON route. It reports false for a path that
// is none.
func (d *Door) serveREST(w http.ResponseWriter, r *http.Request, calls map[string]http.Handler, refuse core.Refuse) bool {
	route, _, ok := restRoute(r.URL.EscapedPath())
	if !ok {
		return false
	}
	w = restWriter{w}
	allow := "GET, HEAD"
	if route != RouteV1Card {
		allow = restRoutes[route].allow
	}
	if !allows(allow, r.Method) {
		w.Header().Set("Allow", allow)
		refuse(w, r, route, core.NotAllowed(r.Method, r.URL.Path, allow))
		return true
	}
	if route == RouteV1Card {
		d.serveCard(w, r)
		return true
	}
	calls[route].ServeHTTP(w, r)
	return true
}

// RefusalWriter is w marked as the HTTP+JSON binding's when r is on one
// of its routes (proxy.Bindings): a token or a per-caller limit refused
// there is a google.rpc.Status, as the binding's other refusals are.
func (d *Door) RefusalWriter(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if _, _, ok := restRoute(r.URL.EscapedPath()); ok {
		return restWriter{w}
	}
	return w
}

// restWriter marks a response of the HTTP+JSON binding, for the door's
// WriteError, which answers refusals made before the request was opened
// (busy, draining, a body over the limit) and is given only the writer.
type restWriter struct{ http.ResponseWriter }

// Unwrap is for http.NewResponseController, and onREST.
func (w restWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// onREST reports whether w writes an HTTP+JSON response: whether it is,
// or wraps, a restWriter.
func onREST(w http.ResponseWriter) bool {
	for w != nil {
		if _, ok := w.(restWriter); ok {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
	return false
}

// requestVersion is the A2A-Version a request asks: its header, else its
// query parameter, as the specification allows (§3.6.1).
func requestVersion(r *http.Request) string {
	if h := r.Header.Get("A2A-Version"); h != "" {
		return h
	}
	return r.URL.Query().Get("A2A-Version")
}

// openREST opens an HTTP+JSON request on route: a message is a task, as
// over JSON-RPC; GetTask and CancelTask are answered from the store;
// the rest answered here too, each an error in the binding's shape.
func (d *Door) openREST(route string, r *http.Request, body []byte) (core.Exchange, error) {
	name := restRoutes[route].name
	v, ok := versionOf(requestVersion(r))
	if !ok {
		return core.Exchange{Call: core.Call{Name: name}}, restError(v10, codeVersionUnsupport,
			fmt.Sprintf("A2A-Version %q is not supported; this agent speaks 0.3 and 1.0", core.Clip(requestVersion(r))))
	}
	shape := v
	if v == v03 {
		shape = p03
	}
	fail := func(code int, format string, args ...any) (core.Exchange, error) {
		return core.Exchange{Call: core.Call{Name: name}}, restError(shape, code, fmt.Sprintf(format, args...))
	}
	_, id, _ := restRoute(r.URL.EscapedPath())
	if len(id) > maxID {
		return fail(codeInvalidParams, "the task id is longer than %d bytes", maxID)
	}
	owner := core.OwnerOfRequest(r)
	switch route {
	case RouteTask, RouteCancel:
		if h := r.URL.Query().Get("historyLength"); h != "" {
			if n, err := strconv.Atoi(h); err != nil || n < 0 {
				return fail(codeInvalidParams, "historyLength must be a non-negative integer, got %q", core.Clip(h))
			}
		}
		return core.Exchange{Call: core.Call{Name: name}}, d.restTask(r.Context(), shape, route, id, owner)
	case RouteTasks:
		if shape == p03 {
			return fail(codeUnsupported, "%s is A2A 1.0's (send A2A-Version: 1.0)", name)
		}
		f, err := readListQuery(r.URL.Query())
		if err != nil {
			return fail(codeInvalidParams, "%v", err)
		}
		return core.Exchange{Call: core.Call{Name: name}}, d.restList(r.Context(), shape, owner, f)
	case RouteSubscribe:
		stream, rerr, err := d.subscription(r.Context(), shape, owner, id, sink{
			result: restFrame,
			failure: func(e *rpcError) []byte {
				return bytes.TrimSuffix(restError(shape, e.Code, e.Message).Body, []byte("\n"))
			},
		})
		if err != nil {
			return core.Exchange{Call: core.Call{Name: name}}, restStoreAnswer(shape, err)
		}
		if rerr != nil {
			return fail(rerr.Code, "%s", rerr.Message)
		}
		return core.Exchange{Call: core.Call{Name: name}}, streamAnswer(stream)
	case RoutePushConfigs:
		return fail(codePushUnsupported, "push notifications are not supported by this agent (its card says capabilities.pushNotifications: false)")
	case RouteExtendedCard:
		return fail(codeUnsupported, "this agent has no extended agent card (its card says no capabilities.extendedAgentCard): read the card at %s", RouteCard)
	case RouteStream:
		if !d.stream {
			return fail(codeUnsupported, "this agent's card declares no streaming: use %s", RouteSend)
		}
	}
	msg, err := readMessage(body, shape, d.tasks.parts)
	if tooLargePart(err) {
		return core.Exchange{Call: core.Call{Name: name}}, restTooLarge(shape, err.Error())
	}
	if err != nil {
		return fail(codeInvalidParams, "%v", err)
	}
	if d.method == nil {
		return fail(codeInternal, "the A2A door's method %q is not in the method map", d.opts.Method)
	}
	t, reply, rerr, err := d.openTask(r.Context(), msg, owner)
	switch {
	case err != nil:
		return core.Exchange{Call: core.Call{Name: name}}, restStoreAnswer(shape, err)
	case rerr != nil:
		return fail(rerr.Code, "%s", rerr.Message)
	}
	ex := newExchange(shape, t, d.tasks, msg, reply)
	ex.rest, ex.stream = true, route == RouteStream
	c := core.Call{Method: d.method, Name: d.opts.Method, Input: core.Input{Raw: ex.input(msg)}, Header: r.Header, Route: route}
	return ex.open(c, d.stream, route == RouteSend && msg.immediate), nil
}

// restTask answers GetTask and CancelTask of owner's task from the
// store: the Task.
func (d *Door) restTask(ctx context.Context, v version, route, id string, owner core.Owner) *core.Answer {
	t, found, canceled := task{}, false, true
	var err error
	if route == RouteTask {
		t, found, err = d.getTask(ctx, owner, id)
	} else {
		t, found, canceled, err = d.cancelTask(ctx, owner, id)
	}
	switch {
	case err != nil:
		return restStoreAnswer(v, err)
	case !found:
		return restError(v, codeTaskNotFound, fmt.Sprintf("task %q not found", core.Clip(id)))
	case !canceled:
		return restError(v, codeTaskNotCancel, fmt.Sprintf("task %q is %s and cannot be canceled", core.Clip(id), t.state))
	}
	a := &core.Answer{Status: http.StatusOK, Outcome: metrics.OK, Header: http.Header{"Content-Type": {contentType(v, true)}}}
	var b bytes.Buffer
	writeText(&b, restFrame(v.task(&t)), t.texts())
	a.Body = append(b.Bytes(), '\n')
	return a
}

// restList answers ListTasks: a page of owner's tasks, the
// ListTasksResponse as serveList writes it, without the envelope.
func (d *Door) restList(ctx context.Context, v version, owner core.Owner, f listFilter) *core.Answer {
	page, next, total, err := d.listTasks(ctx, owner, f)
	if err != nil {
		return restStoreAnswer(v, err)
	}
	objs, texts := v.tasks(page)
	a := &core.Answer{Status: http.StatusOK, Outcome: metrics.OK, Header: http.Header{"Content-Type": {contentType(v, true)}}}
	var b bytes.Buffer
	writeText(&b, restFrame(listResult{objs, next, f.pageSize, total}), texts)
	a.Body = append(b.Bytes(), '\n')
	return a
}

// contentType is the Content-Type of an answer: application/a2a+json
// over 1.0's HTTP+JSON, as §11.1 says; application/json over 0.3's and
// JSON-RPC.
func contentType(v version, rest bool) string {
	if rest && v == v10 {
		return "application/a2a+json"
	}
	return "application/json"
}

// restFrame is an HTTP+JSON answer: the result itself, no envelope.
func restFrame(result any) []byte {
	b, err := marshal(result)
	if err != nil { // a record that is no valid JSON, which core.Records never are
		return restStatus(http.StatusInternalServerError, "INTERNAL", "encoding the response: "+err.Error(), "INTERNAL", sidecarDomain)
	}
	return b
}

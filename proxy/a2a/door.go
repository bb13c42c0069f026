package a2a

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The door's routes.
const (
	// RouteRPC is the JSON-RPC endpoint, the card's url.
	RouteRPC = "/"
	// RouteCard is the agent card's well-known path; RouteLegacyCard the
	// one of A2A 0.2 and earlier, served too.
	RouteCard       = "/.well-known/agent-card.json"
	RouteLegacyCard = "/.well-known/agent.json"
	RouteHealth     = "/healthz"
)

// Door is the A2A front door (a proxy.Door). Build it with New.
type Door struct {
	opts   Options
	method *config.Method // the entry serving opts.Method; nil: none
	stream bool           // the method streams
	tasks  *store
	auth   config.Auth // the auth section when it protects the door, else zero
	shared *shared     // with state.store: redis; nil: memory only
}

// New is the A2A door calling opts.Method of cfg's map: the entry of
// that name, else the "*" entry (streaming first). Its task store keeps
// limits.task_store_bytes, each task's artifact at most limits.reply_bytes.
func New(cfg *config.Config, opts Options) (*Door, error) {
	d := &Door{opts: opts, tasks: newStore(cfg.Limits.TaskStoreBytes, cfg.Limits.ReplyBytes, cfg.Limits.Subscriptions)}
	d.tasks.questions = cfg.Limits.Questions
	d.tasks.parts = cfg.Limits.Parts
	if cfg.Auth.Protects(Name) {
		d.auth = cfg.Auth
	}
	if opts.Store != nil {
		d.shared = newShared(opts.Store, d.tasks)
		d.tasks.shared = d.shared
	}
	for _, m := range cfg.Methods {
		if m.Name == opts.Method {
			d.method = m
		}
	}
	if d.method == nil {
		if d.method = cfg.Lookup(opts.Method, true); d.method == nil {
			d.method = cfg.Lookup(opts.Method, false)
		}
	}
	d.stream = d.method != nil && d.method.Mode.Streaming()
	return d, nil
}

// Close stops what the door does in the background for a shared store:
// its tasks' lease renewal and its cancel channel. Tasks still running
// then end failed on every replica once their leases lapse.
func (d *Door) Close() error {
	d.tasks.stopClocks()
	d.tasks.stopTelling() // a call telling an agent its question expired is cut
	d.tasks.telling.Wait()
	if d.shared != nil {
		d.shared.close()
	}
	return nil
}

// Public: the agent card is read before a client has a token (it says
// how to get one); every other route of a protected door needs it.
func (*Door) Public(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case RouteCard, RouteLegacyCard, RouteV1Card:
		return true
	}
	return false
}

// Protocol names the door in the call's log line and metrics.
func (*Door) Protocol() string { return Name }

// JSONBody: every route of a call, JSON-RPC's and HTTP+JSON's, takes
// only a body declared JSON (application/json, application/a2a+json),
// as every A2A client sends it; any other is refused 415 unread (proxy's
// guard: a page's text/plain POST is a CSRF the door would run; a POST
// with no body declares none, and is refused too). But for the routes
// that read no body and change nothing, which a client may call
// bodiless: :subscribe (a POST that only reads) and the push-notification
// configs (always PushNotificationNotSupported).
func (*Door) JSONBody(route string) bool {
	return route != RouteSubscribe && route != RoutePushConfigs
}

// Handler serves the card, the JSON-RPC endpoint (every request served by
// the Server's call handler of the method's mode, which reads the body and
// has Open decode it), the HTTP+JSON routes (each served by a call
// handler of its own, rest.go), and /healthz; it refuses every other
// request, a 404 or 405.
func (d *Door) Handler(call func(route string, stream bool) http.Handler, health http.Handler, refuse core.Refuse) http.Handler {
	calls := call(RouteRPC, d.stream)
	rest := restHandlers(call)
	notAllowed := func(w http.ResponseWriter, r *http.Request, route, allow string) {
		w.Header().Set("Allow", allow)
		refuse(w, r, route, core.NotAllowed(r.Method, r.URL.Path, allow))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case RouteRPC:
			if r.Method != http.MethodPost {
				notAllowed(w, r, RouteRPC, http.MethodPost)
				return
			}
			calls.ServeHTTP(w, r)
		case RouteCard, RouteLegacyCard:
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				notAllowed(w, r, r.URL.Path, "GET, HEAD")
				return
			}
			d.serveCard(w, r)
		case RouteHealth:
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				notAllowed(w, r, RouteHealth, "GET, HEAD")
				return
			}
			health.ServeHTTP(w, r)
		default:
			if d.serveREST(w, r, rest, refuse) {
				return
			}
			refuse(w, r, "", core.NoRoute(r.URL.Path, "POST "+RouteRPC+" (JSON-RPC), the HTTP+JSON routes (POST "+RouteSend+", GET "+RouteTask+", …), GET "+RouteCard+" and GET "+RouteHealth))
		}
	})
}

// The JSON-RPC methods the door serves, in both versions' names.
var methods = [2]map[string]string{
	v03: {"message/send": "send", "message/stream": "stream", "tasks/get": "get", "tasks/cancel": "cancel",
		"tasks/resubscribe": "subscribe"},
	v10: {"SendMessage": "send", "SendStreamingMessage": "stream", "GetTask": "get", "CancelTask": "cancel",
		"ListTasks": "list", "SubscribeToTask": "subscribe"},
}

// unsupported are A2A methods the door knows and does not serve, each
// with its error: the push-notification config methods
// PushNotificationNotSupported, as the card's capabilities say
// (pushNotifications false); the extended card UnsupportedOperation, as
// the specification asks of a card that declares none (§3.3.4: not
// ExtendedAgentCardNotConfigured, which is for one that declares it).
var unsupported = map[string]int{
	"tasks/pushNotificationConfig/set": codePushUnsupported, "tasks/pushNotificationConfig/get": codePushUnsupported,
	"tasks/pushNotificationConfig/list": codePushUnsupported, "tasks/pushNotificationConfig/delete": codePushUnsupported,
	"CreateTaskPushNotificationConfig": codePushUnsupported, "GetTaskPushNotificationConfig": codePushUnsupported,
	"ListTaskPushNotificationConfigs": codePushUnsupported, "DeleteTaskPushNotificationConfig": codePushUnsupported,
	"agent/getAuthenticatedExtendedCard": codeUnsupported, "GetExtendedAgentCard": codeUnsupported,
}

// Open decodes one JSON-RPC request, its body read by the Server: a
// message opens a task and is the call for the agent (streamed when the
// method streams, whether the caller asked message/send or
// message/stream), its exchange the writer of the task's answer; tasks/get, tasks/cancel and every error
// are answered here (a *core.Answer), without the agent.
func (d *Door) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	if route != RouteRPC {
		return d.openREST(route, r, body)
	}
	req, rerr := readRequest(body)
	if rerr != nil {
		return core.Exchange{}, answer(request{}, nil, rerr)
	}
	fail := func(code int, format string, args ...any) (core.Exchange, error) {
		return core.Exchange{Call: core.Call{Name: core.Clip(req.method)}}, answer(req, nil, &rpcError{code, fmt.Sprintf(format, args...)})
	}
	v, ok := versionOf(requestVersion(r))
	if !ok {
		return fail(codeVersionUnsupport, "A2A-Version %q is not supported; this agent speaks 0.3 and 1.0", core.Clip(requestVersion(r)))
	}
	name := req.method
	op, ok := methods[v][name]
	switch {
	case ok:
	case methods[1-v][name] != "" && v == v03:
		return fail(codeMethodNotFound, "%s is an A2A 1.0 method: send the header A2A-Version: 1.0", core.Clip(name))
	case methods[1-v][name] != "":
		return fail(codeMethodNotFound, "%s is an A2A 0.3 method: send no A2A-Version header, or A2A-Version: 0.3", core.Clip(name))
	case unsupported[name] == codePushUnsupported:
		return fail(codePushUnsupported, "%s: this agent sends no push notifications (its card's capabilities.pushNotifications is false); use message/stream or tasks/get", name)
	case unsupported[name] != 0:
		return fail(unsupported[name], "%s is not supported by this agent: its card declares no extended card", name)
	default:
		return fail(codeMethodNotFound, "method %q not found", core.Clip(name))
	}
	if op == "stream" && !d.stream {
		return fail(codeUnsupported, "%s: this agent's card declares no streaming; use %s", name, map[version]string{v03: "message/send", v10: "SendMessage"}[v])
	}
	owner := core.OwnerOfRequest(r)
	switch op {
	case "get", "cancel":
		return core.Exchange{Call: core.Call{Name: name}}, d.serveTask(r.Context(), v, req, op, owner)
	case "list":
		return core.Exchange{Call: core.Call{Name: name}}, d.serveList(r.Context(), v, req, owner)
	case "subscribe":
		return core.Exchange{Call: core.Call{Name: name}}, d.serveSubscribe(r.Context(), v, req, owner)
	}
	msg, err := readMessage(req.params, v, d.tasks.parts)
	if err != nil {
		return fail(codeInvalidParams, "%v", err)
	}
	if d.method == nil {
		return fail(codeInternal, "the A2A door's method %q is not in the method map", d.opts.Method)
	}
	t, reply, rerr, err := d.openTask(r.Context(), msg, owner)
	switch {
	case err != nil:
		return core.Exchange{Call: core.Call{Name: name}}, storeAnswer(req, err)
	case rerr != nil:
		return fail(rerr.Code, "%s", rerr.Message)
	}
	ex := newExchange(v, t, d.tasks, msg, reply)
	ex.id, ex.notify, ex.stream = req.id, req.notify, op == "stream"
	c := core.Call{Method: d.method, Name: d.opts.Method, Input: core.Input{Raw: ex.input(msg)}, Header: r.Header, Route: route}
	return ex.open(c, d.stream, op == "send" && msg.immediate), nil
}

// open is the exchange of call c, streamed when stream; when immediate
// (a message/send that asked for it, not a notification) the caller is
// answered at once with the task working, and the call goes on without
// it (core.Exchange.Detach).
func (ex *exchange) open(c core.Call, stream, immediate bool) core.Exchange {
	x := core.Exchange{Call: c, Stream: stream, Writer: ex, Context: ex.context}
	ex.call = c
	if immediate && !ex.notify {
		x.Detach = ex.ack
	}
	return x
}

// openTask opens owner's task of msg, for both bindings, or resumes the
// one msg answers (reply, what the agent is called with): rerr when it is
// refused (a follow-up message, as followUp and the store say), err when
// the shared store failed (nothing is kept then).
func (d *Door) openTask(ctx context.Context, msg message, owner core.Owner) (*task, *ask.Reply, *rpcError, error) {
	if d.shared != nil && msg.taskID != "" {
		if _, here := d.tasks.local(msg.taskID); !here {
			return d.shared.resume(ctx, msg, owner) // Redis has it, if anyone
		}
	}
	t, reply, rerr := d.tasks.open(msg, owner)
	if rerr != nil {
		return nil, nil, rerr, nil
	}
	if d.shared != nil && reply == nil {
		if err := d.shared.open(ctx, t); err != nil {
			d.tasks.remove(t)
			return nil, nil, nil, err
		}
	}
	return t, reply, nil, nil
}

// serveTask answers tasks/get and tasks/cancel of owner's task from the
// store.
func (d *Door) serveTask(ctx context.Context, v version, req request, op string, owner core.Owner) *core.Answer {
	id, err := readTaskID(req.params)
	if err != nil {
		return answer(req, nil, &rpcError{codeInvalidParams, err.Error()})
	}
	t, found, canceled := task{}, false, true
	if op == "get" {
		t, found, err = d.getTask(ctx, owner, id)
	} else {
		t, found, canceled, err = d.cancelTask(ctx, owner, id)
	}
	switch {
	case err != nil:
		return storeAnswer(req, err)
	case !found:
		return answer(req, nil, &rpcError{codeTaskNotFound, fmt.Sprintf("task %q not found", core.Clip(id))})
	case !canceled:
		return answer(req, nil, &rpcError{codeTaskNotCancel, fmt.Sprintf("task %q is %s and cannot be canceled", core.Clip(id), t.state)})
	}
	a := answer(req, v.task(&t), nil)
	if texts := t.texts(); len(texts) > 0 && a.Body != nil {
		var b bytes.Buffer
		writeText(&b, a.Body, texts)
		a.Body = b.Bytes()
	}
	return a
}

// answer is the door's own reply to req: its JSON-RPC response, 200 (the
// JSON-RPC convention), or for a notification 204 and no body: JSON-RPC
// 2.0 says a server must not reply to one, errors included.
func answer(req request, result any, e *rpcError) *core.Answer {
	a := &core.Answer{Status: http.StatusOK, Outcome: metrics.OK}
	if e != nil {
		a.Outcome = metrics.BadRequest
	}
	if req.notify {
		a.Status = http.StatusNoContent
		return a
	}
	a.Header = http.Header{"Content-Type": {"application/json"}}
	a.Body = append(response(req.id, result, e), '\n')
	return a
}

func writeRPC(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

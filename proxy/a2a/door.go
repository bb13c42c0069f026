package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// The door's routes.
const (
	// Route is the JSON-RPC endpoint, the card's url.
	Route = "/"
	// CardPath is the agent card's well-known path; LegacyCardPath the
	// one of A2A 0.2 and earlier, served too.
	CardPath       = "/.well-known/agent-card.json"
	LegacyCardPath = "/.well-known/agent.json"
	healthPath     = "/healthz"
)

// Options are what the door serves besides the method map.
type Options struct {
	// Method is the method of the map every message calls.
	Method string
	// Card is what the agent card says about the agent.
	Card CardInfo
	// URL is the public base URL the card advertises for the JSON-RPC
	// endpoint. Empty: http:// and the Host the card was asked on, plus "/".
	URL string
}

// CardInfo is the agent card's description of the agent.
type CardInfo struct {
	Name, Description string
}

// Door is the A2A front door (a proxy.Door). Build it with NewDoor.
type Door struct {
	opts   Options
	method *config.Method // the entry serving opts.Method; nil: none
	stream bool           // the method streams
	limit  int64          // the request body limit
	tasks  *store
}

// NewDoor is the A2A door calling opts.Method of cfg's map: the entry of
// that name, else the "*" entry (streaming first).
func NewDoor(cfg *config.Config, opts Options) *Door {
	d := &Door{opts: opts, limit: cfg.Limits.RequestBytes, tasks: newStore()}
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
	return d
}

// exchange is one JSON-RPC request that calls the method: what the
// door's encoder and error writer need to answer it.
type exchange struct {
	v      version
	id     json.RawMessage // the request's id
	stream bool            // message/stream: answered with SSE
	task   *task
	tasks  *store
	out    *events // the SSE stream, once opened
	done   bool    // the task's final answer was written
}

// reply is the ResponseWriter the Server writes an exchange's answer to:
// the door's encoder and error writer find the exchange on it.
type reply struct {
	http.ResponseWriter
	ex *exchange
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *reply) Unwrap() http.ResponseWriter { return r.ResponseWriter }

type exchangeKey struct{}

// Protocol names the door in the call's log line and metrics.
func (*Door) Protocol() string { return config.ProtocolA2A }

// Handler serves the card, the JSON-RPC endpoint (whose message methods
// go to the Server's call handler of the method's mode), and /healthz.
func (d *Door) Handler(call func(route string, stream bool) http.Handler, health http.Handler) http.Handler {
	calls := call(Route, d.stream)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case Route:
			if r.Method != http.MethodPost {
				notAllowed(w, r, http.MethodPost)
				return
			}
			d.serveRPC(w, r, calls)
		case CardPath, LegacyCardPath:
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				notAllowed(w, r, "GET, HEAD")
				return
			}
			d.serveCard(w, r)
		case healthPath:
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				notAllowed(w, r, "GET, HEAD")
				return
			}
			health.ServeHTTP(w, r)
		default:
			writeDetail(w, http.StatusNotFound, fmt.Sprintf("no route %q; the A2A door serves POST %s (JSON-RPC) and GET %s",
				core.Clip(r.URL.Path), Route, CardPath))
		}
	})
}

func notAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeDetail(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %q not allowed on %s; use %s", core.Clip(r.Method), r.URL.Path, allow))
}

func writeDetail(w http.ResponseWriter, status int, detail string) {
	b, _ := json.Marshal(struct {
		Detail string `json:"detail"`
	}{detail})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// The JSON-RPC methods the door serves, in both versions' names.
var methods = [2]map[string]string{
	v03: {"message/send": "send", "message/stream": "stream", "tasks/get": "get", "tasks/cancel": "cancel"},
	v10: {"SendMessage": "send", "SendStreamingMessage": "stream", "GetTask": "get", "CancelTask": "cancel"},
}

// unsupported are A2A methods the door knows and does not serve.
var unsupported = map[string]bool{
	"tasks/resubscribe": true, "tasks/pushNotificationConfig/set": true, "tasks/pushNotificationConfig/get": true,
	"tasks/pushNotificationConfig/list": true, "tasks/pushNotificationConfig/delete": true,
	"agent/getAuthenticatedExtendedCard": true, "ListTasks": true, "SubscribeToTask": true,
	"CreateTaskPushNotificationConfig": true, "GetTaskPushNotificationConfig": true,
	"ListTaskPushNotificationConfigs": true, "DeleteTaskPushNotificationConfig": true, "GetExtendedAgentCard": true,
}

// serveRPC answers one JSON-RPC request: tasks/get and tasks/cancel from
// the store, a message by calling the method through the Server.
func (d *Door) serveRPC(w http.ResponseWriter, r *http.Request, calls http.Handler) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, d.limit))
	if err != nil {
		status, msg := http.StatusBadRequest, "reading the request body: "+err.Error()
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			status, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the limit of %d bytes", d.limit)
		}
		writeRPC(w, status, response(nil, nil, &rpcError{codeInvalidRequest, msg}))
		return
	}
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if !json.Valid(body) {
		writeRPC(w, http.StatusOK, response(nil, nil, &rpcError{codeParse, "request body is not valid JSON"}))
		return
	}
	if err := json.Unmarshal(body, &req); err != nil || req.JSONRPC != "2.0" || req.Method == nil || !validID(req.ID) {
		writeRPC(w, http.StatusOK, response(nil, nil, &rpcError{codeInvalidRequest,
			`request is not a JSON-RPC 2.0 request {"jsonrpc": "2.0", "id": …, "method": …, "params": …} (batches are not supported)`}))
		return
	}
	fail := func(code int, format string, args ...any) {
		writeRPC(w, http.StatusOK, response(req.ID, nil, &rpcError{code, fmt.Sprintf(format, args...)}))
	}
	v, ok := versionOf(r.Header.Get("A2A-Version"))
	if !ok {
		fail(codeVersionUnsupport, "A2A-Version %q is not supported; this agent speaks 0.3 and 1.0", core.Clip(r.Header.Get("A2A-Version")))
		return
	}
	name := *req.Method
	op, ok := methods[v][name]
	switch {
	case ok:
	case methods[1-v][name] != "" && v == v03:
		fail(codeMethodNotFound, "%s is an A2A 1.0 method: send the header A2A-Version: 1.0", core.Clip(name))
		return
	case methods[1-v][name] != "":
		fail(codeMethodNotFound, "%s is an A2A 0.3 method: send no A2A-Version header, or A2A-Version: 0.3", core.Clip(name))
		return
	case unsupported[name]:
		fail(codeUnsupported, "%s is not supported by this agent", name)
		return
	default:
		fail(codeMethodNotFound, "method %q not found", core.Clip(name))
		return
	}
	switch op {
	case "get", "cancel":
		var p struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(req.Params, &p) != nil || p.ID == "" {
			fail(codeInvalidParams, `params must be {"id": "<task id>"}`)
			return
		}
		t, found, canceled := task{}, false, true
		if op == "get" {
			t, found = d.tasks.snapshot(p.ID)
		} else {
			t, found, canceled = d.tasks.cancelTask(p.ID)
		}
		switch {
		case !found:
			fail(codeTaskNotFound, "task %q not found", core.Clip(p.ID))
		case !canceled:
			fail(codeTaskNotCancel, "task %q is %s and cannot be canceled", core.Clip(p.ID), t.state)
		default:
			writeRPC(w, http.StatusOK, response(req.ID, v.task(&t), nil))
		}
		return
	}
	msg, err := readMessage(req.Params)
	if err != nil {
		fail(codeInvalidParams, "%v", err)
		return
	}
	if d.method == nil {
		fail(codeInternal, "the A2A door's method %q is not in the method map", d.opts.Method)
		return
	}
	d.serveMessage(w, r, calls, &exchange{v: v, id: req.ID, stream: op == "stream", tasks: d.tasks}, msg)
}

// validID reports whether id is a JSON-RPC id: a string, a number, null
// or absent.
func validID(id json.RawMessage) bool {
	return len(id) == 0 || id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9' || string(id) == "null"
}

func writeRPC(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// message is what the door reads of a message: its text parts, joined by
// newlines, and the ids it names.
type message struct {
	text, contextID, taskID string
}

// readMessage reads params {"message": {"parts": […], "contextId": …,
// "taskId": …}} in either version's shape: a text part is
// {"kind": "text", "text": …} in 0.3, {"text": …} in 1.0.
func readMessage(params json.RawMessage) (message, error) {
	var p struct {
		Message *struct {
			Parts []struct {
				Text *string `json:"text"`
			} `json:"parts"`
			ContextID string `json:"contextId"`
			TaskID    string `json:"taskId"`
		} `json:"message"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Message == nil {
		return message{}, errors.New(`params must be {"message": {"role": …, "parts": […], "messageId": …}}`)
	}
	var texts []string
	for _, part := range p.Message.Parts {
		if part.Text != nil {
			texts = append(texts, *part.Text)
		}
	}
	if len(texts) == 0 {
		return message{}, errors.New("the message has no text part; this agent reads text")
	}
	return message{strings.Join(texts, "\n"), p.Message.ContextID, p.Message.TaskID}, nil
}

// serveMessage calls the method with msg as its input, through the
// Server's handler: its records or output reach the caller through the
// door's encoder and WriteOutput, its failure through WriteError.
func (d *Door) serveMessage(w http.ResponseWriter, r *http.Request, calls http.Handler, ex *exchange, msg message) {
	t := &task{id: msg.taskID, contextID: msg.contextID, state: stateSubmitted, updated: time.Now()}
	if t.id == "" {
		t.id = newID()
	}
	if t.contextID == "" {
		t.contextID = newID()
	}
	input, _ := json.Marshal(struct {
		Message   string `json:"message"`
		ContextID string `json:"context_id"`
		TaskID    string `json:"task_id"`
	}{msg.text, t.contextID, t.id})
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	t.cancel = cancel
	ex.task = t
	d.tasks.add(t)

	r = r.WithContext(context.WithValue(ctx, exchangeKey{}, ex))
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(input)), int64(len(input))
	calls.ServeHTTP(&reply{w, ex}, r)
	if ex.done {
		return
	}
	// The call ended with no final answer: tasks/cancel canceled it, or
	// the caller left.
	if c := d.tasks.copyOf(t); c.state == stateCanceled {
		ex.final(w)
		return
	}
	d.tasks.setState(t, stateFailed, "the caller disconnected before the task ended")
}

// Call is the call of the exchange the door's handler put on r: the
// method, its name and body, the message's input.
func (d *Door) Call(cfg *config.Config, route string, stream bool, r *http.Request, body []byte) (core.Call, error) {
	if ex, _ := r.Context().Value(exchangeKey{}).(*exchange); ex == nil || d.method == nil {
		return core.Call{Name: d.opts.Method}, &core.RequestError{Msg: "not an A2A message request"}
	}
	return core.Call{Method: d.method, Name: d.opts.Method, Input: core.Input{Raw: body}, Header: r.Header, Route: route}, nil
}

// exchangeOf is the exchange w answers, nil for a writer the door's
// handler did not make.
func exchangeOf(w http.ResponseWriter) *exchange {
	if r, ok := w.(*reply); ok {
		return r.ex
	}
	return nil
}

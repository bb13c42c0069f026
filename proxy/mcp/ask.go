package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// When the agent asks. A tools/call whose agent emits a question (package
// ask: an input_required record, the last of its reply) is answered, by
// revision and by what the client declared:
//
//   - a 2025 session whose client declared the elicitation capability (the
//     mode the question needs: form, or url on 2025-11-25), when the
//     question's schema is one elicitation can carry (flatSchema): the
//     call's response is an SSE stream; the door sends elicitation/create
//     on it, waits for the client's response (POSTed in the same session,
//     answered), checks it against the schema and calls the method again
//     with the tool's arguments plus reply (ask.WithReply), streaming its
//     progress as before: the call's result is that call's;
//   - 2026-07-28: an input-required result, its requestState signed
//     (stateless.go); the client's call again with inputResponses and that
//     requestState is the agent's call with the reply;
//   - otherwise: a result (not isError) whose text is the question's
//     message and structuredContent the question, for the model or person
//     to act on.

// modes are the elicitation modes a client declared.
type modes uint8

const (
	modeForm modes = 1 << iota
	modeURL
)

// modesOf reads the elicitation modes of a client's capabilities: an
// elicitation member that names none is form mode (2025-06-18's only);
// url mode needs elicitation.url, and a revision that has it (2025-11-25
// on).
func modesOf(caps json.RawMessage, version string) modes {
	var c struct {
		Elicitation *struct {
			Form *json.RawMessage `json:"form"`
			URL  *json.RawMessage `json:"url"`
		} `json:"elicitation"`
	}
	if caps == nil || json.Unmarshal(caps, &c) != nil || c.Elicitation == nil {
		return 0
	}
	e := c.Elicitation
	if e.Form == nil && e.URL == nil {
		return modeForm
	}
	var m modes
	if e.Form != nil {
		m |= modeForm
	}
	if e.URL != nil && version != version20250618 {
		m |= modeURL
	}
	return m
}

// mode is the elicitation mode that carries q, when the client declared it
// and q fits it: url for a url question (or an auth one with a URL and no
// schema), else form when its schema is one elicitation can carry.
func mode(q *ask.Question, declared modes) (modes, bool) {
	if q.Kind == ask.KindURL || q.Kind == ask.KindAuth && q.URL != "" && q.Schema == nil {
		return modeURL, declared&modeURL != 0
	}
	return modeForm, declared&modeForm != 0 && flatSchema(q.Schema)
}

// flatSchema reports whether schema is what MCP lets an elicitation
// request: an object of primitive properties (string, number, integer,
// boolean), or arrays of string choices (multi-select, 2025-11-25), none
// nested. None at all is an empty form (accept or decline).
func flatSchema(schema json.RawMessage) bool {
	if schema == nil {
		return true
	}
	var s struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type  string `json:"type"`
			Items *struct {
				Type  string            `json:"type"`
				Enum  []json.RawMessage `json:"enum"`
				AnyOf []json.RawMessage `json:"anyOf"`
			} `json:"items"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || s.Type != "object" {
		return false
	}
	for _, p := range s.Properties {
		switch p.Type {
		case "string", "number", "integer", "boolean":
		case "array":
			if p.Items == nil || len(p.Items.Enum) == 0 && len(p.Items.AnyOf) == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// requestedSchema is q's schema as elicitation/create's requestedSchema:
// an empty object's when it has none.
func requestedSchema(q *ask.Question) json.RawMessage {
	if q.Schema == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return q.Schema
}

// elicitParams are the params of the elicitation/create carrying q in
// mode m.
func elicitParams(q *ask.Question, m modes) []byte {
	b := []byte(`{`)
	if m == modeURL {
		id := q.ID
		if id == "" {
			id = core.NewID()
		}
		b = append(b, `"mode":"url","elicitationId":`...)
		b = appendString(b, id)
		b = append(b, `,"url":`...)
		b = appendString(b, q.URL)
		b = append(b, ',')
	}
	b = append(b, `"message":`...)
	b = appendString(b, q.Message)
	if m == modeForm {
		b = append(b, `,"requestedSchema":`...)
		b = append(b, requestedSchema(q)...)
	}
	return append(b, '}')
}

// needsInput is the result of a call whose agent asked q of a client that
// cannot be asked: not an error (the tool did what it could), its text the
// question for the model or person, the question as structuredContent.
func (ex *exchange) needsInput(q *ask.Question) []byte {
	return ex.result(q.Message, q.Record(), false)
}

// waiting are the elicitations sent on the calls' streams and not yet
// answered, by session and request id, at most limit
// (limits.questions.waiting): a client's response is found only in the
// session that was asked, so another session's response for the same id
// answers nothing.
type waiting struct {
	limit int

	mu      sync.Mutex
	pending map[callKey]chan elicitResponse
}

// elicitResponse is a client's JSON-RPC response to an elicitation/create.
type elicitResponse struct {
	result json.RawMessage
	err    *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

func newWaiting(limit int) *waiting {
	return &waiting{limit: limit, pending: make(map[callKey]chan elicitResponse)}
}

// add holds key's place until its response comes; false when limit are
// waiting already.
func (w *waiting) add(key callKey) (chan elicitResponse, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.limit > 0 && len(w.pending) >= w.limit {
		return nil, false
	}
	ch := make(chan elicitResponse, 1)
	w.pending[key] = ch
	return ch, true
}

func (w *waiting) remove(key callKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, key)
}

// deliver hands r to the elicitation key names, reporting whether one
// waited for it: each is answered once.
func (w *waiting) deliver(key callKey, r elicitResponse) bool {
	w.mu.Lock()
	ch, ok := w.pending[key]
	delete(w.pending, key)
	w.mu.Unlock()
	if ok {
		ch <- r
	}
	return ok
}

func (w *waiting) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// readResponse reads a client's JSON-RPC response: its id (compact),
// result and error.
func readResponse(body []byte) elicitResponse {
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(body, &msg)
	return elicitResponse{result: msg.Result, err: msg.Error}
}

// responseID is the compact id of a client's JSON-RPC response.
func responseID(body []byte) string {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(body, &msg)
	id, _ := rawjson.AppendCompact(nil, msg.ID)
	return string(id)
}

// responded serves a client's JSON-RPC response in session (202): the
// answer to an elicitation/create the door sent on one of the session's
// calls, here, or with the Redis store on another replica (published on
// its answers channel). One to none that waits (the session asked nothing
// of that id, or its call ended) answers nothing, as MCP answers every
// response.
func (d *Door) responded(ctx context.Context, session string, body []byte) *core.Answer {
	id := responseID(body)
	if !d.waiting.deliver(callKey{session, id}, readResponse(body)) && d.shared != nil {
		if err := d.shared.answer(ctx, session, id, body); err != nil {
			return storeFailed(nil, err)
		}
	}
	return accepted()
}

// Resume is given the Agent (core.Resumer): a 2025 session's call whose
// agent asks calls it again with the answer.
func (ex *exchange) Resume(a core.Agent) { ex.agent = a }

// asked is what the call does with the agent's question q: a result to
// close it with (input-required, needs-input, or a failure to ask), or,
// when the client was asked on the call's stream and answered, the
// records of the method called again with the answer. write sends one
// SSE frame's data on the stream; err is the caller's leaving.
func (ex *exchange) asked(q *ask.Question, write func([]byte) error) (next core.Records, final []byte, err error) {
	m, ok := mode(q, ex.modes)
	if ex.modern && ok {
		return nil, response(ex.id, ex.door.inputRequired(ex, q), nil), nil
	}
	if !ok || ex.modern || ex.agent == nil || ex.ctx == nil {
		return nil, response(ex.id, ex.needsInput(q), nil), nil
	}
	r, failed, err := ex.elicit(q, m, write)
	if err != nil || failed != "" {
		return nil, response(ex.id, ex.result(failed, nil, true), nil), err
	}
	next, err = ask.Again(ex.ctx, ex.agent, ex.call, ex.stream, r)
	if err != nil {
		ex.stopped = err // the Server fails the stream with it
		return nil, nil, nil
	}
	return next, nil, nil
}

// elicit sends q as elicitation/create in mode m, and waits for the
// client's response, at most limits.questions.wait and what is left of
// the call's total time. It returns the client's reply, checked against
// q's schema, or why there is none (failed, for an isError result: the
// agent is not called again), or err when the caller left or cancelled.
func (ex *exchange) elicit(q *ask.Question, m modes, write func([]byte) error) (r ask.Reply, failed string, err error) {
	lim := ex.door.questions
	id := appendString(nil, "sidecar-elicit-"+core.NewID())
	key := callKey{ex.key.session, string(id)}
	answered, ok := ex.door.waiting.add(key)
	if !ok {
		return r, fmt.Sprintf("the agent asked a question, and %d questions wait for answers already (limits.questions.waiting): try again later", lim.Waiting), nil
	}
	defer ex.door.waiting.remove(key)
	req := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	req = append(req, `,"method":"elicitation/create","params":`...)
	req = append(append(req, elicitParams(q, m)...), '}')
	if err := write(req); err != nil {
		return r, "", err
	}
	wait := lim.Wait
	if total := ex.call.Method.Timeouts.Total; total > 0 {
		wait = min(wait, time.Until(ex.opened.Add(total)))
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var resp elicitResponse
	select {
	case resp = <-answered:
	case <-timer.C:
		// The agent is told its question will not be answered: the method
		// called again with a cancel whose reason is expired, its answer
		// dropped, before the caller has the result.
		ask.Tell(context.WithoutCancel(ex.ctx), ex.agent, ex.call, ask.Expiry(q))
		return r, fmt.Sprintf("the agent asked %q and no answer came within %s (limits.questions.wait, or the call's total time): the agent was told its question expired", core.Clip(q.Message), wait.Round(time.Millisecond)), nil
	case <-ex.ctx.Done():
		return r, "", context.Cause(ex.ctx)
	}
	if resp.err != nil {
		return r, fmt.Sprintf("the client answered the question with an error (%d %s): the agent was not called again", resp.err.Code, core.Clip(resp.err.Message)), nil
	}
	if err := json.Unmarshal(resp.result, &r); err != nil || r.Action == "" {
		return r, "the client's answer to the question is not an elicitation result {action, content}: the agent was not called again", nil
	}
	r.ID, r.Reason = q.ID, "" // a reason is the sidecar's to give
	if r.Action != ask.Accept {
		r.Content = nil
	}
	if err := q.Check(r, lim.Bytes); err != nil {
		return r, err.Error() + ": the agent was not called again", nil
	}
	return r, "", nil
}

// question reads a unary call's output as a question, when it is one:
// nil otherwise, or a failure when it is a malformed one.
func (ex *exchange) question(out json.RawMessage) (*ask.Question, error) {
	compact, ok := rawjson.AppendCompact(nil, out)
	if !ok || !ask.Is(compact) {
		return nil, nil
	}
	return ask.Parse(compact, ex.door.questions.Bytes)
}

// askedUnary answers a unary call whose output is the question q: as a
// stream when the client is asked on it (the result, once the agent
// answered again, is its closing frame), else with one result.
func (ex *exchange) askedUnary(w http.ResponseWriter, q *ask.Question) (int, error) {
	if _, ok := mode(q, ex.modes); ok && !ex.modern && ex.agent != nil && ex.ctx != nil {
		e := ex.Encoder(w).(*encoder)
		if err := e.Begin(); err != nil {
			return 0, err
		}
		err := e.resume(q)
		_, n, _ := e.Wrote()
		if s := ex.stopped; s != nil && err == nil {
			e.Fail(core.FailureOf(s))
			_, n, _ = e.Wrote()
		}
		return int(n), err
	}
	var result []byte
	if _, ok := mode(q, ex.modes); ex.modern && ok {
		result = ex.door.inputRequired(ex, q)
	} else {
		result = ex.needsInput(q)
	}
	b := append(response(ex.id, result, nil), '\n')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return w.Write(b)
}

// askFailure is the failure of a call whose agent's question could not be
// read (a malformed or too large one), as the Server would make it.
func askFailure(err error) core.Failure {
	f := core.FailureOf(err)
	if f.Outcome == "" {
		f.Outcome = metrics.AgentError
	}
	return f
}

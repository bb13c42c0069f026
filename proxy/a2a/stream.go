package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	gpart "github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// exchange is one JSON-RPC request that calls the method (a core.Writer):
// the writers of its task's answer.
type exchange struct {
	v      version
	id     json.RawMessage // the request's id
	notify bool            // a notification: answered 204, no body
	stream bool            // message/stream: answered with SSE
	rest   bool            // HTTP+JSON (rest.go): each answer the object itself, errors google.rpc.Status
	task   *task
	tasks  *store
	out    *frames.Writer // message/stream's writer, once made
	parts  int            // the artifact-updates sent
	wrote  int64          // the bytes of message/send's answer
	done   bool           // the task's final answer was written
	acked  bool           // the caller was answered at once, the task working (ack)

	turn  int        // the task's turn this exchange's call is
	said  []part     // the caller's message, for the task's history should the agent ask
	reply *ask.Reply // the answer the call carries, when it resumes a task that asked
	// asked is the question the agent ended its turn with; stopped why
	// the exchange stopped reading its records: a question it could not
	// take (too large, not well formed), which fails the task.
	asked   *ask.Question
	stopped error
	// budget counts the agent's parts that are not text against
	// limits.parts; cur is the record's part, read by contentOf, nil
	// for a record that is none.
	budget *gpart.Budget
	cur    *gpart.Part

	// call is the call the exchange opened, and agent the Agent that
	// answers it (core.Resumer): what tells the agent its question
	// expired, should the task wait too long (questions.go).
	call  core.Call
	agent core.Agent
}

// Resume is given the Agent (core.Resumer).
func (ex *exchange) Resume(a core.Agent) { ex.agent = a }

// newExchange is the exchange of msg's call on t (resumed with reply,
// when msg answers t's question).
func newExchange(v version, t *task, tasks *store, msg message, reply *ask.Reply) *exchange {
	tasks.mu.Lock()
	defer tasks.mu.Unlock()
	ex := &exchange{v: v, task: t, tasks: tasks, turn: t.turn, said: msg.parts(), reply: reply, budget: gpart.NewBudget(tasks.parts)}
	if reply != nil {
		ex.parts = t.added // the artifact goes on from its parts before the question
	}
	return ex
}

// input is the method's input for msg: the one input shape (message.input),
// with the answer as its reply when the call resumes a task.
func (ex *exchange) input(msg message) json.RawMessage {
	in := msg.input(ex.task)
	if ex.reply != nil {
		in = ask.WithReply(in, *ex.reply)
	}
	return in
}

// context is the call's context: tasks/cancel of the task ends it. When
// it ends because the caller left (context.Canceled: net/http's cause;
// also the call's end, when the task has ended already), the task fails
// saying so, if it has not ended: no writer is told of a caller that
// left, and a task left working would hold its subscribers, and show in
// tasks/get and ListTasks, as running for ever. Any other end (a clock,
// the drain, tasks/cancel) the writer reports with its own message.
func (ex *exchange) context(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	ex.tasks.bind(ex.task, cancel)
	context.AfterFunc(ctx, func() {
		if context.Cause(ctx) == context.Canceled {
			ex.tasks.leave(ex.task, ex.turn)
		}
	})
	return ctx
}

// callerLeft is the status message of a task whose caller left before it
// ended.
const callerLeft = "the caller of this task's message left before it ended: its call to the agent ended with it"

// Encoder is the writer of the exchange's records: for message/stream the
// SSE stream of the task's events (frames.Writer, the one flush policy),
// each `data:` a JSON-RPC response with the request's id; for
// message/send, or a notification, the records gathered into the task,
// answered once they end.
func (ex *exchange) Encoder(w http.ResponseWriter) core.Encoder {
	if ex.stream && !ex.notify {
		return content{ex.events(w), ex}
	}
	return &gather{ex: ex, w: w}
}

// content is message/stream's encoder: the shared stream writer, fed the
// records but the end record, up to a question (contentOf).
type content struct {
	*frames.Writer
	ex *exchange
}

func (c content) Copy(r core.Records) error { return c.Writer.Copy(c.ex.contentOf(r)) }

// Stopped is the question the exchange could not take (core.Stopper).
func (c content) Stopped() error { return c.ex.stopped }

// events is message/stream's writer of the task's events, once made.
func (ex *exchange) events(w http.ResponseWriter) *frames.Writer {
	if ex.out == nil {
		ex.out = frames.New(w, "text/event-stream", "data: ", "\n\n", frames.Hooks{
			Begin: ex.begin, Record: ex.artifactUpdate, RecordTo: ex.fileUpdate, End: ex.closing, Fail: ex.failed})
	}
	return ex.out
}

// begin moves the task to working: the stream's first events say how it
// began, whatever it is by now (a unary method's task is already
// completed when its stream opens): the Task (submitted; working again
// when the message answered its question) and its working status-update.
func (ex *exchange) begin() [][]byte {
	t := ex.task
	ex.tasks.setState(t, stateWorking, "")
	c := ex.tasks.copyOf(t)
	c.state, c.message = stateSubmitted, ""
	if ex.reply != nil {
		c.state = stateWorking
	}
	submitted := ex.frame(ex.v.wrap("task", ex.v.task(&task{id: c.id, contextID: c.contextID, state: c.state, updated: c.updated})))
	c.state = stateWorking
	return [][]byte{submitted, ex.frame(ex.v.statusUpdate(&c))}
}

// artifactUpdate adds a record to the task's artifact and appends its
// event to dst.
func (ex *exchange) artifactUpdate(dst, record []byte) []byte {
	p := ex.partOf(record)
	ex.tasks.addPart(ex.task, p)
	frame := ex.frame(ex.v.artifactUpdate(ex.task, p, ex.parts == 0))
	if p.raw != nil { // the bytes' base64 in place of their mark, grown once
		w := appender{slices.Grow(dst, len(frame)+int(p.raw.Len()))}
		writeText(&w, frame, rawTexts(p))
		dst = w.b
	} else {
		dst = append(dst, frame...)
	}
	ex.parts++
	return dst
}

// fileUpdate writes the artifact-update of record itself when it is an
// inline part (frames.Hooks.RecordTo): the frame around a mark, the
// base64 the task keeps written in the mark's place, never copied into
// the frame; nil for any other record, which artifactUpdate frames.
func (ex *exchange) fileUpdate(record []byte) func(io.Writer) error {
	if ex.cur == nil || ex.cur.Kind != gpart.Inline {
		return nil
	}
	p := ex.partOf(record)
	ex.tasks.addPart(ex.task, p)
	frame := ex.frame(ex.v.artifactUpdate(ex.task, p, ex.parts == 0))
	ex.parts++
	return func(w io.Writer) error {
		_, err := writeText(w, frame, rawTexts(p))
		return err
	}
}

// partOf is the artifact part of record: the part contentOf read, when
// it was a part record, else partOf's.
func (ex *exchange) partOf(record []byte) part {
	if p := ex.cur; p != nil {
		ex.cur = nil
		return fileOf(p)
	}
	return partOf(record)
}

// appender is an io.Writer appending to b.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// closing is the stream's final status-update once its records ended:
// completed when they ended cleanly, canceled when tasks/cancel ended
// them. Any other end is a failure, written by failed.
func (ex *exchange) closing(err error) [][]byte {
	var final []byte
	switch {
	case err == nil && ex.asked != nil:
		final = ex.pause()
	case err == nil:
		final = ex.final(stateCompleted, "")
	case ex.tasks.copyOf(ex.task).state == stateCanceled:
		final = ex.final(stateCanceled, "")
	}
	if final == nil {
		return nil
	}
	return [][]byte{final}
}

// failed is the stream's final status-update for a failure: the task
// failed with its message, or canceled when tasks/cancel ended it.
func (ex *exchange) failed(f core.Failure) []byte {
	if ex.tasks.copyOf(ex.task).state == stateCanceled {
		return ex.final(stateCanceled, "")
	}
	return ex.final(stateFailed, f.Message)
}

// final moves the task to state, unless it ended already (canceled), and
// is its final status-update, once: nil after the first.
func (ex *exchange) final(state, message string) []byte {
	ex.tasks.setState(ex.task, state, message)
	if ex.done {
		return nil
	}
	ex.done = true
	t := ex.tasks.copyOf(ex.task)
	return ex.frame(ex.v.statusUpdate(&t))
}

// pause ends the task's turn waiting for the answer to the agent's
// question, unless it ended already (canceled), and is its final
// status-update, once: nil after the first.
func (ex *exchange) pause() []byte {
	ex.tasks.ask(ex.task, ex.asked, ex.said, ex.teller())
	if ex.done {
		return nil
	}
	ex.done = true
	t := ex.tasks.copyOf(ex.task)
	return ex.frame(ex.v.statusUpdate(&t))
}

// frame is one answer of the exchange: a JSON-RPC response with the
// request's id, or over HTTP+JSON the result itself (restFrame).
func (ex *exchange) frame(result any) []byte {
	if ex.rest {
		return restFrame(result)
	}
	return response(ex.id, result, nil)
}

// gather is the encoder of a message/send or a notification: the records
// go into the task, and its answer is written once they end. message/send
// answers the whole artifact or fails: past limits.reply_bytes, the task
// fails with one clear message and the agent's call ends.
type gather struct {
	ex *exchange
	w  http.ResponseWriter

	records int
	first   time.Time
}

// Begin moves the task to working.
func (g *gather) Begin() error {
	g.ex.tasks.setState(g.ex.task, stateWorking, "")
	return nil
}

// Copy adds each record to the task's artifact; when the records end
// cleanly the task is completed, and its answer written.
func (g *gather) Copy(r core.Records) error {
	ex := g.ex
	r = ex.contentOf(r)
	for r.Next() {
		if !ex.tasks.addPart(ex.task, ex.partOf(r.Record())) && !ex.stream {
			ex.end(g.w, stateFailed, tooLarge(ex.tasks.partLimit))
			return nil
		}
		if g.records == 0 {
			g.first = time.Now()
		}
		g.records++
	}
	switch {
	case ex.stopped != nil: // the Server fails the task with it
	case ex.asked != nil:
		ex.endAsked(g.w)
	case r.Err() == nil:
		ex.end(g.w, stateCompleted, "")
	case ex.tasks.copyOf(ex.task).state == stateCanceled:
		ex.end(g.w, stateCanceled, "")
	}
	return nil
}

// Fail ends the task failed, with the failure's message.
func (g *gather) Fail(f core.Failure) { g.ex.end(g.w, stateFailed, f.Message) }

// Stopped is the question the exchange could not take (core.Stopper).
func (g *gather) Stopped() error { return g.ex.stopped }

// Wrote is what went out: the records, the bytes, when the first record was.
func (g *gather) Wrote() (records int, bytes int64, first time.Time) {
	return g.records, g.ex.wrote, g.first
}

// tooLarge is the failure of a message/send whose artifact outgrew the
// limit.
func tooLarge(limit int64) string {
	return fmt.Sprintf("the task's artifact exceeds limits.reply_bytes (%d bytes): message/send answers it whole; use message/stream", limit)
}

// end moves the task to state, unless it ended already (canceled), and
// writes its final answer once: for message/send the Task, for a
// notification 204 and no body.
func (ex *exchange) end(w http.ResponseWriter, state, message string) {
	if state != "" { // "": as it is
		ex.tasks.setState(ex.task, state, message)
	}
	if ex.done {
		return
	}
	ex.done = true
	if ex.notify {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	t := ex.tasks.copyOf(ex.task)
	w.Header().Set("Content-Type", contentType(ex.v, ex.rest))
	w.WriteHeader(http.StatusOK)
	n, err := writeText(w, ex.frame(ex.v.wrap("task", ex.v.task(&t))), t.texts())
	ex.wrote += n
	if err == nil {
		k, _ := w.Write([]byte{'\n'})
		ex.wrote += int64(k)
	}
}

// endAsked ends the task's turn waiting for the answer to the agent's
// question, unless it ended already (canceled), and writes its answer
// once, the task as it is then: for message/send the Task, for a
// notification 204 and no body.
func (ex *exchange) endAsked(w http.ResponseWriter) {
	ex.tasks.ask(ex.task, ex.asked, ex.said, ex.teller())
	ex.end(w, "", "")
}

// ack is the answer to a message/send that asked to be answered at once
// (core.Exchange.Detach): the task, working. Its final answer, once the
// call ends, goes nowhere: the task keeps it for get and subscribe.
func (ex *exchange) ack() *core.Answer {
	ex.acked = true
	ex.tasks.setState(ex.task, stateWorking, "")
	t := ex.tasks.copyOf(ex.task)
	var b bytes.Buffer
	writeText(&b, ex.frame(ex.v.wrap("task", ex.v.task(&t))), t.texts())
	b.WriteByte('\n')
	return &core.Answer{Status: http.StatusOK, Outcome: metrics.OK, Header: http.Header{"Content-Type": {contentType(ex.v, ex.rest)}}, Body: b.Bytes()}
}

// WriteOutput answers a unary method's call: its output becomes the
// task's artifact, and the task is completed.
func (ex *exchange) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	if bytes.Contains(out, []byte(`"`+ask.Key+`"`)) {
		if c, ok := rawjson.AppendCompact(nil, out); ok && ask.Is(c) {
			out = c // a question: contentOf reads it as one
		}
	}
	if ex.stream && !ex.notify {
		f := ex.events(w)
		if err := f.Begin(); err != nil {
			_, n, _ := f.Wrote()
			return int(n), err
		}
		err := f.Copy(ex.contentOf(&outputRecords{records: wholeRecords(out)}))
		if ex.stopped != nil {
			f.Fail(core.FailureOf(ex.stopped))
		}
		_, n, _ := f.Wrote()
		return int(n), err
	}
	if ask.Is(out) {
		if ex.asked, ex.stopped = ex.tasks.question(out); ex.stopped != nil {
			ex.end(w, stateFailed, core.FailureOf(ex.stopped).Message)
		} else {
			ex.endAsked(w)
		}
		return int(ex.wrote), nil
	}
	r := ex.contentOf(&outputRecords{records: wholeRecords(out)})
	for r.Next() {
		if !ex.tasks.addPart(ex.task, ex.partOf(r.Record())) && !ex.stream {
			ex.end(w, stateFailed, tooLarge(ex.tasks.partLimit))
			return int(ex.wrote), nil
		}
	}
	if ex.stopped != nil { // a part it could not take
		ex.end(w, stateFailed, core.FailureOf(ex.stopped).Message)
		return int(ex.wrote), nil
	}
	ex.end(w, stateCompleted, "")
	return int(ex.wrote), nil
}

// wholeRecords are the records of a unary output: the output, but for
// the mapping stage's whole answer with parts ({"text": …, "parts":
// [<part records>], …}, emit: text), which is its text and other
// members, then each part.
func wholeRecords(out []byte) [][]byte {
	if !bytes.Contains(out, []byte(`"parts"`)) {
		return [][]byte{out}
	}
	var ps []byte
	texts := 0
	rest := []byte{'{'}
	rawjson.Members(out, func(key, value []byte) bool {
		switch {
		case rawjson.KeyIs(key, "parts"):
			ps = value
			return true
		case rawjson.KeyIs(key, "text"):
			texts++
		}
		if len(rest) > 1 {
			rest = append(rest, ',')
		}
		rest = append(append(append(rest, key...), ':'), value...)
		return true
	})
	var list []json.RawMessage
	if texts != 1 || len(ps) == 0 || ps[0] != '[' || json.Unmarshal(ps, &list) != nil || len(list) == 0 {
		return [][]byte{out}
	}
	records := [][]byte{append(rest, '}')}
	for _, p := range list {
		if !gpart.Is(p) {
			return [][]byte{out} // an agent's own parts member
		}
		records = append(records, p)
	}
	return records
}

// contentOf is r but its end record: the mapping stage's last line
// ({"end": {…}}, emit: text) closes the stream and is no content, so it
// becomes no part of the artifact (isEnd); nor does a control record
// (core.Control). A question (ask.Is) ends them: the exchange keeps it
// as asked, or as stopped when it cannot take it, and reads no further.
func (ex *exchange) contentOf(r core.Records) core.Records {
	c := &contentRecords{Records: r, ex: ex}
	if w, ok := r.(core.Waiter); ok {
		return &waitingContent{contentRecords: c, w: w}
	}
	return c
}

type contentRecords struct {
	core.Records
	ex *exchange
}

func (c *contentRecords) Next() bool {
	if c.ex.asked != nil || c.ex.stopped != nil {
		return false
	}
	c.ex.cur = nil
	for c.Records.Next() {
		rec := c.Record()
		if ask.Is(rec) {
			c.ex.asked, c.ex.stopped = c.ex.tasks.question(rec)
			return false
		}
		if gpart.Is(rec) {
			// A part that is not text: read and counted here, so one
			// the door cannot take ends the records, failing the task.
			p, err := gpart.Parse(rec, c.ex.budget.Limits())
			if err == nil {
				err = c.ex.budget.Take(p)
			}
			if err != nil {
				c.ex.stopped = gpart.Agent(err)
				return false
			}
			c.ex.cur = p
			return true
		}
		if !isEnd(rec) && !core.Control(c.Records) {
			return true
		}
	}
	return false
}

// Err is the records' error, but for a question: the records were not
// read to their end, and are not said to have failed; unless the
// exchange could not take it.
func (c *contentRecords) Err() error {
	switch {
	case c.ex.stopped != nil:
		return c.ex.stopped
	case c.ex.asked != nil:
		return nil
	}
	return c.Records.Err()
}

// waitingContent are contentRecords of records that say when they wait
// for the agent, which they pass on to the writer.
type waitingContent struct {
	*contentRecords
	w core.Waiter
}

func (r *waitingContent) BeforeWait(f func()) { r.w.BeforeWait(f) }

// outputRecords are the records of a unary output (wholeRecords).
type outputRecords struct {
	records [][]byte
	i       int
}

func (l *outputRecords) Next() bool {
	l.i++
	return l.i <= len(l.records)
}
func (l *outputRecords) Record() []byte { return l.records[l.i-1] }
func (l *outputRecords) Err() error     { return nil }
func (l *outputRecords) Close()         {}

// WriteError answers a call that failed before its first byte. A failure
// of the agent's (its error, a clock that ran out, a dropped connection)
// is the task's: it ends failed with the failure's message. A task
// tasks/cancel ended answers canceled. The sidecar's refusals (a bad
// input, busy, not ready, draining) are JSON-RPC errors, as the request
// never became a running task: the store forgets it; unless its caller
// was told the task is working (ack), or the call answered the task's
// question (it was the caller's before): then the task fails, kept.
func (ex *exchange) WriteError(w http.ResponseWriter, f core.Failure) {
	canceled := ex.tasks.copyOf(ex.task).state == stateCanceled
	if canceled || ex.acked || ex.reply != nil || f.Outcome == metrics.AgentError || f.Outcome == metrics.Timeout || f.Outcome == metrics.AgentDisconnected {
		if ex.stream && !ex.notify {
			// The task ended before its stream began: its events, then
			// its end.
			e := ex.events(w)
			e.Begin()
			e.Fail(f)
			return
		}
		state := stateFailed
		if canceled {
			state, f.Message = stateCanceled, ""
		}
		ex.end(w, state, f.Message)
		return
	}
	ex.tasks.setState(ex.task, stateFailed, f.Message)
	ex.tasks.remove(ex.task)
	ex.done = true
	if ex.notify {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if ex.rest {
		writeRESTFailure(w, f)
		return
	}
	writeFailure(w, ex.id, f)
}

// writeFailure writes the JSON-RPC error of a refusal of the sidecar's:
// an input the method's request cannot be built from is -32602 (200, as
// every JSON-RPC error); a request refused before it was served keeps the
// HTTP status every door answers it with, so one error has one status: a
// body over limits.request_bytes 413 and -32600 (a path the door does
// not serve 404, a method it does not take 405, a body not declared JSON
// 415, a Host or Origin a web page sent or a token without a scope 403, no
// valid bearer token 401, each -32600), busy, not ready and
// draining 503 with Retry-After, a caller over its limit 429, the token
// provider's keys unreachable 503, a loop 508, a handler method on a
// sidecar without handlers 501, each -32603 (the spec's code for a
// system error, rate limits its example).
func writeFailure(w http.ResponseWriter, id json.RawMessage, f core.Failure) {
	code, status := codeInternal, f.Status
	switch f.Reason {
	case "BAD_REQUEST":
		if f.Status == http.StatusBadRequest {
			code, status = codeInvalidParams, http.StatusOK
		}
	case "REQUEST_TOO_LARGE", "NOT_FOUND", "METHOD_NOT_ALLOWED", "UNSUPPORTED_MEDIA_TYPE", "PERMISSION_DENIED", "UNAUTHENTICATED":
		code = codeInvalidRequest
	}
	if status == 0 || f.Outcome == metrics.AgentError || f.Outcome == metrics.Timeout || f.Outcome == metrics.AgentDisconnected {
		status = http.StatusOK
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	writeRPC(w, status, response(id, nil, &rpcError{code, f.Message}))
}

// WriteError answers a request refused before it was opened: refused
// before its body was read, or whose body was over the limit. On an
// HTTP+JSON route (restWriter) it is that binding's error; on JSON-RPC
// its id is unknown: null.
func (d *Door) WriteError(w http.ResponseWriter, f core.Failure) {
	if onREST(w) {
		writeRESTFailure(w, f)
		return
	}
	writeFailure(w, nil, f)
}

var (
	_ core.Encoder = content{}
	_ core.Waiter  = (*waitingContent)(nil)
)

package a2a

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// events writes one exchange's answer: for message/stream the SSE stream
// of the task's events, each `data:` a JSON-RPC response with the
// request's id; for message/send on a streaming method the records are
// gathered into the task, answered once they end. It is the door's
// core.Encoder, with the platform's flush policy: what was written is
// flushed before the records wait for the agent, or after every record
// when they cannot say.
type events struct {
	ex *exchange
	w  http.ResponseWriter
	rc *http.ResponseController

	begun     bool // the stream's headers went out
	pending   bool
	perRecord bool
	flushErr  error

	records int
	bytes   int64
	first   time.Time
}

func (ex *exchange) events(w http.ResponseWriter) *events {
	if ex.out == nil {
		ex.out = &events{ex: ex, w: w, rc: http.NewResponseController(w)}
	}
	return ex.out
}

// Encoder is the writer of the exchange's records.
func (d *Door) Encoder(w http.ResponseWriter) core.Encoder {
	ex := exchangeOf(w)
	if ex == nil { // not a message request: Call refused it already
		ex = &exchange{task: &task{}, tasks: newStore()}
	}
	return ex.events(w)
}

// Begin moves the task to working and, for message/stream, answers 200
// with the stream's headers, the Task (submitted) and its working
// status-update.
func (e *events) Begin() error {
	t := e.ex.task
	e.ex.tasks.setState(t, stateWorking, "")
	if !e.ex.stream || e.begun {
		return nil
	}
	e.begun = true
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	e.w.WriteHeader(http.StatusOK)
	// The first events say how the task began, whatever it is by now (a
	// unary method's task is already completed when its stream opens).
	c := e.ex.tasks.copyOf(t)
	c.state, c.message = stateSubmitted, ""
	e.write(e.ex.v.wrap("task", e.ex.v.task(&task{id: c.id, contextID: c.contextID, state: c.state, updated: c.updated})))
	c.state = stateWorking
	e.write(e.ex.v.statusUpdate(&c))
	e.flush()
	return e.flushErr
}

func ptr(t task) *task { return &t }

// write writes one event of the stream.
func (e *events) write(event any) error {
	b := response(e.ex.id, event, nil)
	line := make([]byte, 0, len(b)+8)
	line = append(append(append(line, "data: "...), b...), "\n\n"...)
	k, err := e.w.Write(line)
	e.bytes += int64(k)
	e.pending = true
	if err == nil {
		err = e.flushErr
	}
	return err
}

func (e *events) flush() {
	if e.pending && e.flushErr == nil {
		e.flushErr = e.rc.Flush()
	}
	e.pending = false
}

// Copy writes each record as an artifact-update (message/stream) and adds
// it to the task's artifact; when the records end cleanly the task is
// completed, and its final answer written.
func (e *events) Copy(r core.Records) error {
	if wr, ok := r.(core.Waiter); ok {
		wr.BeforeWait(e.flush)
	} else {
		e.perRecord = true
	}
	t := e.ex.task
	for r.Next() {
		p := partOf(r.Record())
		e.ex.tasks.addPart(t, p)
		if e.ex.stream {
			err := e.write(e.ex.v.artifactUpdate(t, p, e.records == 0))
			if e.perRecord {
				e.flush()
			}
			if err != nil {
				return err
			}
		}
		if e.records == 0 {
			e.first = time.Now()
		}
		e.records++
	}
	if r.Err() == nil && e.ex.tasks.setState(t, stateCompleted, "") {
		e.ex.final(e.w)
	}
	e.flush()
	return nil
}

// Fail ends the task failed, with the failure's message.
func (e *events) Fail(f core.Failure) {
	if e.ex.tasks.setState(e.ex.task, stateFailed, f.Message) {
		e.ex.final(e.w)
	}
}

// Wrote is what went out: the records, the bytes, when the first record was.
func (e *events) Wrote() (records int, bytes int64, first time.Time) {
	return e.records, e.bytes, e.first
}

// final writes the task's final answer in its terminal state: the
// status-update that ends the stream (opening it first if need be), or the
// Task as message/send's result.
func (ex *exchange) final(w http.ResponseWriter) {
	ex.done = true
	t := ex.tasks.copyOf(ex.task)
	if !ex.stream {
		b := response(ex.id, ex.v.wrap("task", ex.v.task(&t)), nil)
		writeRPC(w, http.StatusOK, b)
		if ex.out != nil {
			ex.out.bytes += int64(len(b) + 1)
		}
		return
	}
	e := ex.events(w)
	e.Begin() // a no-op once begun; else the task ended before its stream began
	e.write(ex.v.statusUpdate(&t))
	e.flush()
}

// WriteOutput answers a unary method's call: its output becomes the
// task's artifact, and the task is completed.
func (d *Door) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	ex := exchangeOf(w)
	if ex == nil {
		return 0, nil
	}
	p := partOf(out)
	ex.tasks.addPart(ex.task, p)
	e := ex.events(w)
	if ex.stream {
		if err := e.Begin(); err != nil {
			return int(e.bytes), err
		}
		e.write(ex.v.artifactUpdate(ex.task, p, true))
	}
	e.records, e.first = 1, time.Now()
	ex.tasks.setState(ex.task, stateCompleted, "")
	ex.final(w)
	return int(e.bytes), e.flushErr
}

// WriteError answers a call that failed before its first byte. A failure
// of the agent's (its error, a clock that ran out, a dropped connection)
// is the task's: it ends failed with the failure's message. The sidecar's
// refusals (a bad input, busy, not ready, draining) are JSON-RPC errors,
// as the request never became a running task.
func (d *Door) WriteError(w http.ResponseWriter, f core.Failure) {
	ex := exchangeOf(w)
	if ex == nil {
		writeRPC(w, http.StatusOK, response(nil, nil, &rpcError{codeInternal, f.Message}))
		return
	}
	switch f.Outcome {
	case metrics.AgentError, metrics.Timeout, metrics.AgentDisconnected:
		if ex.tasks.setState(ex.task, stateFailed, f.Message) {
			ex.final(w)
		}
		return
	}
	ex.tasks.setState(ex.task, stateFailed, f.Message)
	ex.done = true
	code := codeInternal
	switch f.Reason {
	case "BAD_REQUEST":
		if f.Status == http.StatusBadRequest {
			code = codeInvalidParams
		}
	case "REQUEST_TOO_LARGE":
		code = codeInvalidRequest
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	writeRPC(w, http.StatusOK, response(ex.id, nil, &rpcError{code, f.Message}))
}

package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// exchange is one JSON-RPC request that calls the method (a
// core.Exchange): the writers of its task's answer.
type exchange struct {
	v      version
	id     json.RawMessage // the request's id
	notify bool            // a notification: answered 204, no body
	stream bool            // message/stream: answered with SSE
	task   *task
	tasks  *store
	out    *events // the stream's writer, once made
	done   bool    // the task's final answer was written
}

// Context is the call's context: tasks/cancel of the task ends it.
func (ex *exchange) Context(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	ex.tasks.bind(ex.task, cancel)
	return ctx
}

// events writes one exchange's answer: for message/stream the SSE stream
// of the task's events, each `data:` a JSON-RPC response with the
// request's id; for message/send on a streaming method the records are
// gathered into the task, answered once they end. It is the exchange's
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
func (ex *exchange) Encoder(w http.ResponseWriter) core.Encoder { return ex.events(w) }

// Begin moves the task to working and, for message/stream, answers 200
// with the stream's headers, the Task (submitted) and its working
// status-update.
func (e *events) Begin() error {
	t := e.ex.task
	e.ex.tasks.setState(t, stateWorking, "")
	if !e.ex.stream || e.ex.notify || e.begun {
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
// completed, and its final answer written. message/send answers the whole
// artifact or fails: past limits.reply_bytes, the task fails with one
// clear message and the agent's call ends.
func (e *events) Copy(r core.Records) error {
	if wr, ok := r.(core.Waiter); ok {
		wr.BeforeWait(e.flush)
	} else {
		e.perRecord = true
	}
	ex, t := e.ex, e.ex.task
	for r.Next() {
		p := partOf(r.Record())
		if !ex.tasks.addPart(t, p) && !ex.stream {
			ex.end(e.w, stateFailed, tooLarge(ex.tasks.partLimit))
			return nil
		}
		if ex.stream && !ex.notify {
			err := e.write(ex.v.artifactUpdate(t, p, e.records == 0))
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
	if r.Err() == nil {
		ex.end(e.w, stateCompleted, "")
	} else if ex.tasks.copyOf(t).state == stateCanceled {
		ex.end(e.w, stateCanceled, "")
	}
	e.flush()
	return nil
}

// tooLarge is the failure of a message/send whose artifact outgrew the
// limit.
func tooLarge(limit int64) string {
	return fmt.Sprintf("the task's artifact exceeds limits.reply_bytes (%d bytes): message/send answers it whole; use message/stream", limit)
}

// Fail ends the task failed, with the failure's message.
func (e *events) Fail(f core.Failure) { e.ex.end(e.w, stateFailed, f.Message) }

// Wrote is what went out: the records, the bytes, when the first record was.
func (e *events) Wrote() (records int, bytes int64, first time.Time) {
	return e.records, e.bytes, e.first
}

// end moves the task to state, unless it ended already (canceled), and
// writes its final answer once.
func (ex *exchange) end(w http.ResponseWriter, state, message string) {
	ex.tasks.setState(ex.task, state, message)
	if ex.done {
		return
	}
	ex.done = true
	t := ex.tasks.copyOf(ex.task)
	e := ex.events(w)
	switch {
	case ex.notify:
		w.WriteHeader(http.StatusNoContent)
	case !ex.stream:
		b := response(ex.id, ex.v.wrap("task", ex.v.task(&t)), nil)
		writeRPC(w, http.StatusOK, b)
		e.bytes += int64(len(b) + 1)
	default:
		e.Begin() // a no-op once begun; else the task ended before its stream began
		e.write(ex.v.statusUpdate(&t))
		e.flush()
	}
}

// WriteOutput answers a unary method's call: its output becomes the
// task's artifact, and the task is completed.
func (ex *exchange) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	p := partOf(out)
	kept := ex.tasks.addPart(ex.task, p)
	e := ex.events(w)
	if ex.stream && !ex.notify {
		if err := e.Begin(); err != nil {
			return int(e.bytes), err
		}
		e.write(ex.v.artifactUpdate(ex.task, p, true))
	}
	e.records, e.first = 1, time.Now()
	if !kept && !ex.stream {
		ex.end(w, stateFailed, tooLarge(ex.tasks.partLimit))
	} else {
		ex.end(w, stateCompleted, "")
	}
	return int(e.bytes), e.flushErr
}

// WriteError answers a call that failed before its first byte. A failure
// of the agent's (its error, a clock that ran out, a dropped connection)
// is the task's: it ends failed with the failure's message. A task
// tasks/cancel ended answers canceled. The sidecar's refusals (a bad
// input, busy, not ready, draining) are JSON-RPC errors, as the request
// never became a running task: the store forgets it.
func (ex *exchange) WriteError(w http.ResponseWriter, f core.Failure) {
	switch {
	case ex.tasks.copyOf(ex.task).state == stateCanceled:
		ex.end(w, stateCanceled, "")
		return
	case f.Outcome == metrics.AgentError, f.Outcome == metrics.Timeout, f.Outcome == metrics.AgentDisconnected:
		ex.end(w, stateFailed, f.Message)
		return
	}
	ex.tasks.setState(ex.task, stateFailed, f.Message)
	ex.tasks.remove(ex.task)
	ex.done = true
	if ex.notify {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeFailure(w, ex.id, f)
}

// writeFailure writes the JSON-RPC error of a refusal of the sidecar's:
// an input the method's request cannot be built from is -32602 (200, as
// every JSON-RPC error); a request refused before it was served keeps the
// HTTP status every door answers it with, so one error has one status: a
// body over limits.request_bytes 413 and -32600, busy, not ready and
// draining 503 with Retry-After, a loop 508, a handler method on a
// sidecar without handlers 501, each -32603.
func writeFailure(w http.ResponseWriter, id json.RawMessage, f core.Failure) {
	code, status := codeInternal, f.Status
	switch f.Reason {
	case "BAD_REQUEST":
		if f.Status == http.StatusBadRequest {
			code, status = codeInvalidParams, http.StatusOK
		}
	case "REQUEST_TOO_LARGE":
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

// The Door's own writers answer only a request that failed before it was
// opened (read and decoded): refused before its body was read, or whose
// body was over the limit. Its id is unknown: null.

// WriteError answers a request refused before it was opened.
func (d *Door) WriteError(w http.ResponseWriter, f core.Failure) { writeFailure(w, nil, f) }

// WriteOutput is never called: every call the agent answers was opened.
func (d *Door) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	return 0, fmt.Errorf("the A2A door answers opened requests only")
}

// Encoder is never used: every call the agent answers was opened.
func (d *Door) Encoder(w http.ResponseWriter) core.Encoder {
	return (&exchange{task: &task{}, tasks: newStore(0, 0)}).events(w)
}

package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
)

// HopHeader is set on every request to the agent. A sidecar refuses a call
// that carries it: its agent is a sidecar (itself, most likely), and the
// call would go round forever.
const HopHeader = "X-Sidecar-Hop"

// The contract's routes, which the method map's modes are named for: unary
// methods (api_mode "" and async) are served on RouteUnary (the platform's
// :query), streaming ones on RouteStream (:streamQuery). The Agent Platform
// front door serves them; a Call no front door built came on its mode's
// (Call.Route). They live here, not in that door, because the agent's side
// fills a method's {route} with them and imports no front door.
const (
	RouteUnary  = "/api/reasoning_engine"
	RouteStream = "/api/stream_reasoning_engine"
)

// Call is one class_method call, as a front door hands it to an Agent.
type Call struct {
	// Method is the method map entry that serves the call.
	Method *config.Method
	// Name is the class_method called (the entry may be "*").
	Name string
	// Input is the call's input: Raw always, Fields when the method reads
	// single fields (ReadsFields).
	Input Input
	// Header is the caller's request header. An Agent passes on only what
	// it allows (trace context, request ids).
	Header http.Header
	// Pass are headers the front door passes to the agent as they are,
	// besides the Agent's allow-list: its runtime's session, user and
	// trace ids (AgentCore's X-Amzn-Bedrock-AgentCore-Runtime-*, say).
	// Names are canonical; the door picks them and never passes
	// credentials. Nil passes none.
	Pass http.Header
	// Route is the inbound route the call came on, for a {route} in the
	// method's path. A front door always sets it; "" (a Call no front door
	// built) means the contract's route of the method's mode (RouteUnary
	// or RouteStream).
	Route string
	// Notes, when set, is where the Agent writes what the call's log line
	// reports about the agent's side.
	Notes *Notes
}

// Passed is what of h a front door passes to the agent as it is
// (Call.Pass): the headers named in names (canonical) and those whose
// name starts with one of prefixes (in any case). Nil for none.
func Passed(h http.Header, names []string, prefixes ...string) http.Header {
	var p http.Header
	add := func(name string, v []string) {
		if p == nil {
			p = http.Header{}
		}
		p[name] = v
	}
	for _, name := range names {
		if v := h[name]; len(v) > 0 {
			add(name, v)
		}
	}
	for _, prefix := range prefixes {
		for name, v := range h {
			if len(name) > len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
				add(name, v)
			}
		}
	}
	return p
}

// NewID is a random (version 4) UUID: the ids a front door makes for its
// callers (A2A's tasks, contexts and messages, Foundry's invocations and
// sessions).
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Notes are what an Agent learns while it answers a call that the call's
// log line and metrics report.
type Notes struct {
	// Reply is how the agent's reply was read: a deframer's format ("sse",
	// "ndjson", …) or "handler" for a built-in handler.
	Reply string
	// Retries is how many times the agent's request was retried.
	Retries int
	// Dialect is the stream dialect the mapping stage read the reply in
	// ("raw" when it passed it through), "" when it did not map it.
	Dialect string
	// Phases are when the call passed each of its stages: the Server
	// notes its own, the Agent when it had a connection and the agent's
	// first byte.
	Phases Phases
}

// Phases are when one call passed each of its stages, what the
// Server-Timing header, a trace's spans and sidecar dev's timeline show.
// A zero time is a stage the call did not reach. Each time carries the
// monotonic clock, so the spans between them are exact.
type Phases struct {
	// Accepted is when the request came in.
	Accepted time.Time
	// Queued is when the call's wait for a concurrency slot ended (at
	// once when one was free): it had its slot, or was refused one.
	Queued time.Time
	// Connected is when the Agent had a connection to the agent: of the
	// last attempt, when a failed dial or an agent's 429 or 503 was
	// retried. Zero for a built-in handler's call.
	Connected time.Time
	// FirstByte is when the agent's reply head (its status line and
	// headers: the first bytes of its reply) arrived.
	FirstByte time.Time
	// FirstRecord is when a stream's first record was written to the
	// caller.
	FirstRecord time.Time
	// End is when the call ended: its reply written, or its failure.
	End time.Time
}

// Phases is where an Agent notes the times of its stages of c: its
// Notes' Phases, nil when c has no Notes.
func (c Call) Phases() *Phases {
	if c.Notes == nil {
		return nil
	}
	return &c.Notes.Phases
}

// Note records reply and retries on the call's Notes, if it has them.
func (c Call) Note(reply string, retries int) {
	if c.Notes != nil {
		c.Notes.Reply, c.Notes.Retries = reply, retries
	}
}

// Agent answers calls. The serving side consumes it; upstream's HTTP
// client and the ADK handlers implement it.
type Agent interface {
	// Unary answers a unary call with the value of its {"output": …}.
	Unary(ctx context.Context, c Call) (json.RawMessage, error)
	// Stream answers a streaming call with its records. An error before
	// the first record is returned here; one after it is the records' Err.
	Stream(ctx context.Context, c Call) (Records, error)
}

// Records is the stream of an agent's reply, each record one compact JSON
// value with no newline in it, in the order the agent sent them.
//
//	defer r.Close()
//	for r.Next() {
//		use(r.Record())
//	}
//	if err := r.Err(); err != nil { … }
type Records interface {
	// Next advances to the next record; false at the end or on error.
	Next() bool
	// Record is the current record. It stays valid only until the next
	// call to Next.
	Record() []byte
	// Err is the reason the stream ended, nil for a clean end. Its errors
	// are already explained: a clock that ran out is a *TimeoutError.
	Err() error
	// Close releases the stream. Closing before the end cancels the
	// agent's request.
	Close()
}

// Waiter is implemented by Records that can tell when they are about to
// wait for the agent: the records read so far are used up, and the next
// may take a while. A writer that buffers records flushes then, and only
// then, so every record reaches the caller as soon as the agent produced
// it without a flush per record when the agent sends many at once.
type Waiter interface {
	// BeforeWait sets f to run before every wait for the agent.
	BeforeWait(f func())
}

// Encoder is the record pipeline's last stage: it writes one stream's
// records to the caller in a front door's wire format, and owns the
// stream's one flush policy.
type Encoder interface {
	// Begin answers that the call was accepted (200 and the stream's
	// headers) and flushes it, before the first record.
	Begin() error
	// Copy writes every record of r and flushes. It returns the first
	// error writing to the caller (who has left, most likely), and nil
	// when r ended: r.Err says how.
	Copy(r Records) error
	// Fail writes the stream's final error, after its records, and
	// flushes it. A caller that left is not told.
	Fail(f Failure)
	// Wrote is what went out, for the call's log line and metrics: the
	// records and bytes written, and when the first record was.
	Wrote() (records int, bytes int64, first time.Time)
}

// Resumer is implemented by a Writer that may call the agent again within
// its request: MCP's door, which carries an agent's question to the
// caller on the call's stream (elicitation) and calls the method again
// with the answer (package ask). The Server gives it the Agent before the
// call is served; the calls it makes run in the call's context, under its
// slot and clocks.
type Resumer interface {
	Resume(a Agent)
}

// Stopper is implemented by an Encoder that may end a stream itself
// before its records end: a door whose closing frames carry what it kept
// of the records, up to a limit. Stopped is why it stopped reading them,
// nil if it did not; the Server then fails the stream with it (the
// encoder's Fail, the call's log line and metrics) as with the records'
// own error, and closes the records, which ends the agent's request.
type Stopper interface {
	Stopped() error
}

// Mux is the Agent for a method map that mixes plain methods, answered by
// Plain, and methods whose entry names a built-in handler ("adk.*"),
// answered by Handlers. If Handlers is nil, a handler method fails with
// ErrNoHandler.
type Mux struct {
	Plain, Handlers Agent
}

// Unary answers c with Handlers or Plain.
func (m Mux) Unary(ctx context.Context, c Call) (json.RawMessage, error) {
	a, err := m.agent(c)
	if err != nil {
		return nil, err
	}
	return a.Unary(ctx, c)
}

// Stream answers c with Handlers or Plain.
func (m Mux) Stream(ctx context.Context, c Call) (Records, error) {
	a, err := m.agent(c)
	if err != nil {
		return nil, err
	}
	return a.Stream(ctx, c)
}

func (m Mux) agent(c Call) (Agent, error) {
	if c.Method.Handler == "" {
		return m.Plain, nil
	}
	if m.Handlers == nil {
		return nil, ErrNoHandler
	}
	c.Note("handler", 0)
	return m.Handlers, nil
}

var _ Agent = Mux{}

// Exchange is one request a front door opened (proxy.Door's Open): the
// call for the agent, whether it streams, and the writers of its answer,
// bound to that request (a JSON-RPC id, a task, a model name).
type Exchange struct {
	// Call is the call for the agent. When Open fails, its Name is the
	// method called if the door read that far, for the call's log line.
	Call Call
	// Stream is whether the call is answered as a stream (Agent.Stream,
	// Writer.Encoder) or once (Agent.Unary, Writer.WriteOutput): decided
	// by the request, as the door reads it.
	Stream bool
	// Writer writes the answer in the door's wire format. When Open fails
	// and Writer is set, it answers the failure.
	Writer Writer
	// Context, if set, is the call's context, derived from ctx: the door
	// may end it from outside the request (A2A's tasks/cancel of its
	// task). Nil: ctx.
	Context func(ctx context.Context) context.Context
	// Detach, if set, answers the caller before the call (A2A's
	// returnImmediately): once the call holds its concurrency slot and
	// the agent is ready, the Server writes the Answer Detach returns,
	// ends the request, and serves the call to its end without the
	// caller. The call no longer ends when the request does; it still
	// ends with its clocks, the drain (EndCalls) and Context's own end,
	// holds its slot until then, is in flight for WaitIdle, and has its
	// one log line when it ends. Its writers write to nothing: the door
	// keeps what the caller reads later (the task). Nil: the caller waits.
	Detach func() *Answer
}

// Writer writes one exchange's answer in its front door's wire format.
type Writer interface {
	// WriteOutput answers a unary call with the agent's output, flushed at
	// once. It returns the bytes written.
	WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error)
	// Encoder is the writer of the call's records to w.
	Encoder(w http.ResponseWriter) Encoder
	// WriteError answers a call that failed before its first byte.
	WriteError(w http.ResponseWriter, f Failure)
}

// Answer is a request a front door answered without the agent: a JSON-RPC
// tasks/get, a protocol error in the door's own shape, a notification's
// empty reply. A door's Open returns it as its error; the Server
// writes it as it is, takes no concurrency slot for it (or frees the one
// a large body waited for), and logs the call with Outcome.
type Answer struct {
	// Status is the HTTP status; Header what goes with it.
	Status int
	Header http.Header
	// Body is the whole reply.
	Body []byte
	// Outcome is the call's outcome for its log line and metrics: OK for
	// an answer, BadRequest for a refusal.
	Outcome metrics.Outcome
	// Reason is a refusal's reason for the log line (UNAUTHENTICATED,
	// NOT_ACCEPTABLE, …); "" for an answer.
	Reason string
	// Err, when set, is why the door answered so, for the log line's
	// error field only: what the caller must not read (a state store's
	// host and its failure).
	Err error
	// Stream, when set, goes on writing the answer after Body: a stream
	// the door serves itself, without the agent (A2A's subscription to a
	// task's updates). It writes until its stream ends or ctx does (the
	// caller left, EndCalls: context.Cause says which), flushing as it
	// goes, and returns the records and bytes it wrote. Its writes are
	// bounded as a call's are (a caller that stops reading cannot hold
	// it past ctx's end); it holds no concurrency slot: the door bounds
	// how many it serves.
	Stream func(ctx context.Context, w http.ResponseWriter) (records int, bytes int64)
}

func (a *Answer) Error() string {
	return fmt.Sprintf("answered by the front door: %d %s", a.Status, a.Outcome)
}

// Refuse answers a request a door refuses itself, before it is a call: a
// path it does not serve, a method its route does not take, a Host,
// Origin, Accept or key it does not accept (or a request it answers
// without a call, as MCP's DELETE of a session). err is the door's own
// *Answer, written as it is, or a Failure (NoRoute, NotAllowed, …),
// written by the door's WriteError. route is the door's route the
// request came to, "" for a path it does not serve: it is a metrics
// label, so never the request's own path.
//
// The Server gives every door's Handler its Refuse: the request gets a
// call's log line and metrics, with its door's protocol, and takes no
// concurrency slot; its body is never read, so an unauthenticated or
// refused large body costs nothing.
type Refuse func(w http.ResponseWriter, r *http.Request, route string, err error)

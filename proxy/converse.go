package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/hostcheck"
	"github.com/sidecar-dev/sidecar/proxy/live"
	"github.com/sidecar-dev/sidecar/upstream"
)

// Conversing is a Door with routes that carry conversations: a bidi
// method's frames each way over a WebSocket, relayed to the agent's
// (proxy/live, docs/live.md). The door's Handler serves such a route with
// the handler call(route, false) gives, for GET; the Server upgrades it
// after the guard and admit, as every call is admitted.
type Conversing interface {
	// Converses reports whether route carries conversations.
	Converses(route string) bool
	// Converse opens a conversation's request on route into its call: its
	// Method (a bidi method of cfg), Name, Header, Pass and Route. An
	// error refuses the upgrade.
	Converse(cfg *config.Config, route string, r *http.Request) (core.Call, error)
}

// Opening is a Conversing door whose conversations on some routes name
// their method in their first frame (the live door's platform framing,
// whose setup frame names a class_method). On such a route the Server
// admits the upgrade as every conversation's, then upgrades the caller
// first, with no subprotocol, reads its first frame within
// limits.header_timeout (setupWait), hands it to Setup, and only then
// dials the agent at the method Setup named.
type Opening interface {
	Conversing
	// Opens reports whether route's conversations name their method in
	// their first frame; Converse is not called for it.
	Opens(route string) bool
	// Setup opens a conversation on route of its first frame, typ and
	// data, read from caller: its call (Method, a bidi method of cfg;
	// Name; Header; Pass; Route; Input, which fills the method's path
	// fields) and the caller's side as the relay sees it (the door's
	// framing around caller). A *live.FrameError closes the caller with
	// its code and reason; any other error with 1008 and its text.
	Setup(cfg *config.Config, route string, r *http.Request, caller *websocket.Conn, typ websocket.MessageType, data []byte) (core.Call, live.Conn, error)
}

// Talker opens the agent's side of a conversation whose bidi method names
// a handler (adk.App: the ADK preset's bidi_stream_query), in place of a
// dial of the method's path. Such a conversation opens only on an Opening
// route: call.Input is the setup's input, and the conversation's first
// frame toward the agent is that input again (the door's framing reads it
// first), for the side Talk returns to write or drop. Talk may make
// requests of its own, then dials the agent's WebSocket at a path of its
// choosing with dial, which carries the headers, clocks and transport of
// every conversation's dial and returns its errors (a *live.UpgradeError,
// wrapped, for an agent that answered the upgrade with an HTTP response).
// Its errors are openAgent's: an InputError is the caller's to mend.
type Talker interface {
	Talk(ctx context.Context, call core.Call, dial func(ctx context.Context, path string) (live.Conn, error)) (live.Conn, error)
}

// handoff is what admit holds for an upgrade's caller (its per-caller
// place), released when its handler returns unless the conversation took
// it, to release when it ends.
type handoff struct {
	release func()
	taken   bool
}

type handoffKey struct{}

// take hands the release to the conversation.
func (h *handoff) take() func() {
	h.taken = true
	return h.release
}

func (h *handoff) end() {
	if !h.taken {
		h.release()
	}
}

// held is the caller's place admit holds for r, handed to its
// conversation: released when the conversation ends.
func held(r *http.Request) func() {
	if h, ok := r.Context().Value(handoffKey{}).(*handoff); ok {
		return h.take()
	}
	return func() {}
}

// conversations are the conversations in progress, for the cap on them
// and for EndCalls.
type conversations struct {
	mu    sync.Mutex
	open  map[*live.Relay]struct{}
	count int // open, and those still dialing the agent
	ended bool
	// client reaches the agent's address (its TCP port or Unix socket).
	client *http.Client
	// headers are those the agent's upgrade carries as a call's request
	// would (headers.forward, headers.set, …).
	headers upstream.Headers
}

// take counts one more conversation unless max are open.
func (cs *conversations) take(max int) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.count >= max {
		return false
	}
	cs.count++
	return true
}

// release uncounts a conversation take counted.
func (cs *conversations) release() {
	cs.mu.Lock()
	cs.count--
	cs.mu.Unlock()
}

// track adds rl to the conversations EndCalls ends; false when EndCalls
// already ran.
func (cs *conversations) track(rl *live.Relay) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.ended {
		return false
	}
	if cs.open == nil {
		cs.open = make(map[*live.Relay]struct{})
	}
	cs.open[rl] = struct{}{}
	return true
}

func (cs *conversations) untrack(rl *live.Relay) {
	cs.mu.Lock()
	delete(cs.open, rl)
	cs.mu.Unlock()
}

// endAll ends every conversation with 1001, and every later one at once.
func (cs *conversations) endAll() {
	cs.mu.Lock()
	cs.ended = true
	open := make([]*live.Relay, 0, len(cs.open))
	for rl := range cs.open {
		open = append(open, rl)
	}
	cs.mu.Unlock()
	for _, rl := range open {
		rl.Shutdown()
	}
}

// liveCount is the number of conversations open, for the gauge.
func (cs *conversations) liveCount() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.open)
}

// agentClient is the client of the agent's WebSockets: its address
// however the URL names it, no timeout of its own (a conversation's clocks
// are the relay's; the dial is bounded by the method's connect and
// first_byte).
func agentClient(u config.Upstream) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, u.Network, u.Address)
		},
		DisableCompression: true,
	}}
}

// converse is the handler of a door's route that carries conversations:
// refused while draining, without an upgrade, past limits.live.connections,
// while the agent is not ready (after ReadyWait, as a call) or when the
// agent's WebSocket does not open (502, or 504 when the
// method's connect and first_byte run out), each before the caller's
// upgrade; else relayed until either side closes, counted in flight (so
// a drain waits for it, and EndCalls closes it with 1001), with one log
// line.
func (s *Server) converse(door Door, c Conversing, protocol, route string, refuse core.Refuse) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			refuse(w, r, route, ErrShuttingDown)
			return
		}
		if !hostcheck.Upgrade(r) {
			w.Header().Set("Upgrade", "websocket")
			refuse(w, r, route, core.Failure{Status: http.StatusUpgradeRequired, Reason: "UPGRADE_REQUIRED", Outcome: metrics.BadRequest,
				Message: route + " carries conversations: open it as a WebSocket (GET with Upgrade: websocket)"})
			return
		}
		o, opens := c.(Opening)
		opens = opens && o.Opens(route)
		var call core.Call
		if !opens {
			var err error
			if call, err = c.Converse(s.Config, route, r); err != nil {
				refuse(w, r, route, err)
				return
			}
			if call.Method.Handler != "" { // Talker: its first input comes in a setup frame
				refuse(w, r, route, &core.RequestError{Status: http.StatusBadRequest, Msg: call.Name +
					" opens with a setup frame naming its first input: open it on the live door with the platform's framing"})
				return
			}
		}
		lim := s.Config.Limits.Live
		if !s.talks.take(lim.Connections) {
			f := core.ReasonFailure("BUSY", "too many conversations at once (limits.live.connections)")
			f.Status, f.RetryAfter, f.Outcome = http.StatusServiceUnavailable, 1, metrics.Busy
			w.Header().Set("Retry-After", "1")
			refuse(w, r, route, f)
			return
		}
		s.inFlight.Add(1)
		relaying := false
		defer func() {
			if !relaying { // else the conversation's goroutine releases them
				s.talks.release()
				s.inFlight.Add(-1)
			}
		}()
		if err := s.waitReady(r.Context()); err != nil {
			refuse(w, r, route, err) // 503, as a call's
			return
		}

		if opens {
			relaying = s.opening(w, r, o, protocol, route)
			return
		}

		start := time.Now()
		m := call.Method
		ctx := r.Context()
		var span trace.Span
		if s.Tracer != nil {
			ctx, span = s.serverSpan(ctx, r, route, protocol, start)
			span.SetAttributes(attribute.String("sidecar.class_method", call.Name))
		}
		agent, err := s.openAgent(ctx, r, call)
		if err != nil {
			if span != nil {
				span.SetStatus(codes.Error, err.Error())
				span.End()
			}
			refuse(w, r, route, err)
			return
		}
		rl, err := live.Accept(w, r, agent, lim)
		if err != nil {
			if span != nil {
				span.SetStatus(codes.Error, err.Error())
				span.End()
			}
			s.Logger.Info("conversation not opened", zap.String("class_method", call.Name), zap.String("protocol", protocol), zap.Error(err))
			return
		}
		if !s.talks.track(rl) {
			rl.Shutdown() // EndCalls ran while it opened
		}
		// The handler returns while the conversation goes on in its own
		// goroutine: the caller's connection is hijacked, and this
		// goroutine's stack, grown by the upgrade and the agent's dial,
		// is not held for as long as the conversation lasts.
		relaying = true
		go s.relay(rl, talk{name: call.Name, method: m.Name, protocol: protocol, route: route, header: r.Header, start: start, span: span, release: held(r)})
	})
}

// talk is what a conversation's log line, metrics and span need once it
// is relayed.
type talk struct {
	name, method, protocol, route string
	header                        http.Header
	start                         time.Time
	span                          trace.Span // nil: tracing is off
	// release gives back the caller's place (limits.per_caller).
	release func()
}

// opening opens a conversation on a route of o's that names its method
// in its first frame (Opening), once admitted: the caller upgraded, its
// first frame read within setupWait and given to o.Setup, the agent
// dialled at the method it named; then relayed in a goroutine of its own,
// as converse's, reporting true. A conversation that does not open is
// closed (1008 for a setup frame missing, late or refused, 1011 and the
// reason for an agent that cannot be reached) and has its one log line,
// metrics and span as every conversation has; opening reports false.
func (s *Server) opening(w http.ResponseWriter, r *http.Request, o Opening, protocol, route string) bool {
	lim := s.Config.Limits.Live
	start := time.Now()
	conn, err := live.Upgrade(w, r, lim, "")
	if err != nil {
		s.Logger.Info("conversation not opened", zap.String("protocol", protocol), zap.Error(err))
		return false
	}
	ctx := r.Context()
	t := talk{protocol: protocol, route: route, header: r.Header, start: start}
	if s.Tracer != nil {
		ctx, t.span = s.serverSpan(ctx, r, route, protocol, start)
	}
	// unopened closes the caller with code and reason and ends the
	// conversation that never was.
	unopened := func(by live.Side, outcome metrics.Outcome, code websocket.StatusCode, reason string) bool {
		reason = live.Clip(reason)
		conn.Close(code, reason)
		s.endTalk(t, live.Result{EndedBy: by, Code: code, Reason: reason, Outcome: outcome})
		return false
	}
	wait := setupWait(s.Config)
	typ, data, err := firstFrame(conn, wait)
	switch {
	case errors.Is(err, errSetupLate):
		return unopened(live.Sidecar, metrics.Timeout, websocket.StatusPolicyViolation,
			"no first frame within "+wait.String()+" (limits.header_timeout): a conversation opens with its setup frame")
	case err != nil:
		return unopened(live.Caller, metrics.CallerLeft, websocket.StatusGoingAway, "the caller left before its setup frame")
	}
	call, caller, err := o.Setup(s.Config, route, r, conn, typ, data)
	t.name = call.Name
	if t.span != nil && call.Name != "" {
		t.span.SetAttributes(attribute.String("sidecar.class_method", call.Name))
	}
	if err != nil {
		var fe *live.FrameError
		if errors.As(err, &fe) {
			return unopened(live.Caller, metrics.BadRequest, fe.Code, fe.Reason)
		}
		return unopened(live.Caller, metrics.BadRequest, websocket.StatusPolicyViolation, err.Error())
	}
	t.method = call.Method.Name
	// The caller was upgraded with no subprotocol: the agent is offered
	// none either, so that both speak the same.
	r.Header.Del("Sec-WebSocket-Protocol")
	agent, err := s.openAgent(ctx, r, call)
	if err != nil {
		var ie *core.InputError
		if errors.As(err, &ie) {
			return unopened(live.Caller, metrics.BadRequest, websocket.StatusPolicyViolation, err.Error())
		}
		f := core.FailureOf(err)
		return unopened(live.Agent, f.Outcome, websocket.StatusInternalError, f.Message)
	}
	rl := live.New(caller, agent, lim)
	if !s.talks.track(rl) {
		rl.Shutdown() // EndCalls ran while it opened
	}
	t.release = held(r)
	go s.relay(rl, t)
	return true
}

// setupWait bounds the wait for a conversation's first frame on an
// Opening route: limits.header_timeout, the bound of a request's head,
// which the setup frame is to a conversation, so that a caller that
// upgrades and says nothing cannot hold a place (a parsed config's is
// always positive: validate refuses 0).
func setupWait(cfg *config.Config) time.Duration { return cfg.Limits.HeaderTimeout }

// errSetupLate is a first frame that did not come within setupWait.
var errSetupLate = errors.New("no first frame in time")

// firstFrame reads c's first frame within wait. Past it c is closed
// (the closing handshake ends the read): a read's own context would
// drop the connection without a close frame, and the caller would not
// learn why.
func firstFrame(c *websocket.Conn, wait time.Duration) (websocket.MessageType, []byte, error) {
	late := make(chan struct{})
	timer := time.AfterFunc(wait, func() { close(late) })
	type read struct {
		typ  websocket.MessageType
		data []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		typ, data, err := c.Read(context.Background())
		done <- read{typ, data, err}
	}()
	select {
	case got := <-done:
		if timer.Stop() {
			return got.typ, got.data, got.err
		}
		<-late
		if got.err == nil {
			return got.typ, got.data, nil
		}
		return 0, nil, errSetupLate
	case <-late:
		return 0, nil, errSetupLate
	}
}

// relay runs rl until the conversation ends, then releases its places
// (the caller's, the count of conversations, in flight) and ends it
// (endTalk).
func (s *Server) relay(rl *live.Relay, t talk) {
	defer t.release()
	defer s.talks.release()
	defer s.inFlight.Add(-1)
	res := rl.Run()
	s.talks.untrack(rl)
	s.endTalk(t, res)
}

// endTalk ends a conversation's span, counts it and writes its one log
// line.
func (s *Server) endTalk(t talk, res live.Result) {
	d := time.Since(t.start)
	if t.span != nil {
		endTalkSpan(t.span, res)
	}
	s.Metrics.Call(metrics.Call{Method: t.method, Route: t.route, Protocol: t.protocol, Outcome: res.Outcome, Duration: d, Bytes: res.Out.Bytes})
	s.Metrics.Frames(t.method, res.In.Frames, res.Out.Frames)
	if ce := s.Logger.Check(zap.InfoLevel, "call"); ce != nil {
		fields := []zap.Field{
			zap.String("class_method", t.name),
			zap.String("protocol", t.protocol),
			zap.String("route", t.route),
			zap.Int("status", http.StatusSwitchingProtocols),
			zap.Int64("frames_in", res.In.Frames),
			zap.Int64("frames_out", res.Out.Frames),
			zap.Int64("bytes_in", res.In.Bytes),
			zap.Int64("bytes_out", res.Out.Bytes),
			zap.Duration("duration", d),
			zap.String("outcome", string(res.Outcome)),
			zap.String("ended_by", string(res.EndedBy)),
			zap.Int("close_code", int(res.Code)),
			zap.String("reason", res.Reason),
		}
		// The fields that group the line with its trace, as a call's.
		if t.span != nil {
			fields = append(fields, spanFields(t.span.SpanContext(), s.Project)...)
		} else {
			fields = append(fields, traceFields(t.header, s.Project)...)
		}
		ce.Write(fields...)
	}
}

// openAgent opens the agent's side of call: the WebSocket at its
// method's path (its {field}s filled from call.Input, a field missing an
// InputError; for call: POST /path with reply: ndjson, one full-duplex
// request there, live.DialNDJSON), or where its handler's Talker says,
// with the headers a call's request would carry (the
// caller's allow-listed ones, the door's, headers.set), the caller's
// subprotocols and the hop header, within the method's connect and
// first_byte (or the caller leaving, or ctx ending). When ctx carries the
// conversation's span, the upgrade's traceparent names it.
func (s *Server) openAgent(ctx context.Context, r *http.Request, call core.Call) (live.Conn, error) {
	m := call.Method
	wait := m.Timeouts.Connect + m.Timeouts.FirstByte
	ctx, cancel := context.WithCancel(ctx)
	if m.Timeouts.Connect > 0 && m.Timeouts.FirstByte > 0 {
		ctx, cancel = context.WithTimeout(ctx, wait)
	}
	defer cancel()
	h := http.Header{core.HopHeader: {"1"}}
	s.talks.headers.Apply(h, r.Header, call.Pass)
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		// The conversation's span, in place of the caller's: the agent's
		// own spans join the trace under it. An X-Cloud-Trace-Context
		// passed on names it too, as a call's does.
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
		if len(h["X-Cloud-Trace-Context"]) > 0 {
			h["X-Cloud-Trace-Context"] = []string{upstream.CloudTrace(sc)}
		}
	}
	var protocols []string
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				protocols = append(protocols, p)
			}
		}
	}
	dial := func(ctx context.Context, path string) (live.Conn, error) {
		var c live.Conn
		var err error
		if m.Verb == http.MethodPost { // reply: ndjson, the only other agent side config allows
			c, err = live.DialNDJSON(ctx, s.Config.Upstream.BaseURL+path, s.talks.client, h)
		} else {
			url := "ws" + strings.TrimPrefix(s.Config.Upstream.BaseURL, "http") + path
			c, err = live.Dial(ctx, url, s.talks.client, h, protocols)
		}
		if err == nil {
			return c, nil
		}
		switch {
		case r.Context().Err() != nil:
			return nil, context.Canceled
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, &core.TimeoutError{Phase: "first_byte", After: wait.String()}
		}
		return nil, &core.DialError{Address: s.Config.Upstream.URL, Err: err}
	}
	if m.Handler != "" {
		if s.Talker == nil {
			return nil, core.ErrNoHandler
		}
		return s.Talker.Talk(ctx, call, dial)
	}
	path, err := upstream.Target(m, call.Name, call.Input, call.Route) // its {field}s filled from the call's input
	if err != nil {
		return nil, err // a *core.InputError: the caller's to mend
	}
	return dial(ctx, path)
}

// endTalkSpan ends a conversation's SERVER span with how it went: the
// frames and bytes each way, who ended it, the close code the caller got
// (or sent) and the outcome, status Error unless it ended ok.
func endTalkSpan(span trace.Span, res live.Result) {
	span.SetAttributes(
		attribute.Int("http.response.status_code", http.StatusSwitchingProtocols),
		attribute.Int64("sidecar.frames_in", res.In.Frames),
		attribute.Int64("sidecar.frames_out", res.Out.Frames),
		attribute.Int64("sidecar.bytes_in", res.In.Bytes),
		attribute.Int64("sidecar.bytes_out", res.Out.Bytes),
		attribute.String("sidecar.ended_by", string(res.EndedBy)),
		attribute.Int("sidecar.close_code", int(res.Code)),
		attribute.String("sidecar.outcome", string(res.Outcome)),
	)
	if res.Outcome != metrics.OK {
		if res.Reason != "" {
			span.SetAttributes(attribute.String("sidecar.reason", res.Reason))
		}
		span.SetStatus(codes.Error, res.Reason)
	}
	span.End()
}

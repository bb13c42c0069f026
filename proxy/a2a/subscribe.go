package a2a

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
)

// The bounds on subscriptions (SubscribeToTask, tasks/resubscribe). Each
// subscriber holds a connection and a goroutine, so there are at most
// limits.subscriptions in all, maxTaskSubscribers of one task. A subscriber is
// sent its task's events through a queue of at most lagEvents events and
// lagBytes bytes of parts (one event whatever its size: a record is at
// most limits.record_bytes): one that falls further behind, a caller
// reading slower than the agent writes, is dropped with an error rather
// than let the queue grow. The parts are the task's own, shared by every
// subscriber and the store, never copied per subscriber.
const (
	maxTaskSubscribers = 8
	lagEvents          = 256
	lagBytes           = 4 << 20
)

// errLagging ends a subscription that fell behind its task's events.
var errLagging = fmt.Errorf("the subscriber fell more than %d events or %d bytes behind its task's updates; subscribe again (the first event is the task as it is)", lagEvents, lagBytes)

// event is one change of a task a subscriber is told: its status, or,
// when part is set, a part of its artifact.
type event struct {
	head   task // the task's ids and status (task.head), no artifact
	part   part
	first  bool  // the artifact's first part: it does not append
	status bool  // a status-update; else an artifact-update
	seq    int64 // with a shared store, its number among the task's events (0: local)
}

// size is what the event holds besides the task's ids: its part's bytes.
func (e event) size() int64 {
	return e.part.size() + 64
}

// subscriber is one caller's subscription to a task: the task's events,
// queued for it, until the task ends (events is closed after its final
// status) or the subscriber is dropped (events closed, lagged set first)
// or leaves (unsubscribe).
type subscriber struct {
	s       *store
	t       *task
	events  chan event
	pending atomic.Int64 // the bytes of the events queued (event.size)
	lagged  bool         // dropped for falling behind; set before events is closed
	stop    func()       // called when it is dropped: unblock its writer
	// remote is set for a subscriber to a task another replica runs
	// (replicas.go): what it is told comes from Redis.
	remote *remoteSub
}

// subscribe is owner's subscription to its task id: the task as it is
// now, and, while it runs, a subscriber told of every change after that
// (stop is called if the store drops it for falling behind). A task that
// ended has none: sub is nil, and its snapshot is the final state. No
// such task of owner's is TaskNotFound, too many subscribers an internal
// error saying so.
func (s *store) subscribe(owner core.Owner, id string, stop func()) (snap task, sub *subscriber, e *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	switch {
	case !ok || t.owner != owner:
		return task{}, nil, &rpcError{codeTaskNotFound, fmt.Sprintf("task %q not found", core.Clip(id))}
	case settled(t.state):
		return t.clone(), nil, nil
	case len(t.subs) >= s.maxTaskSubs:
		return task{}, nil, &rpcError{codeInternal, fmt.Sprintf("task %q has %d subscribers, the most this agent serves one task; try again once one leaves", t.id, s.maxTaskSubs)}
	case s.subs >= s.maxSubs:
		return task{}, nil, &rpcError{codeInternal, fmt.Sprintf("this agent serves %d subscriptions, the most it serves at once; try again later", s.maxSubs)}
	}
	sub = &subscriber{s: s, t: t, events: make(chan event, s.lagEvents), stop: stop}
	t.subs = append(t.subs, sub)
	s.subs++
	return t.clone(), sub, nil
}

// unsubscribe ends sub, whose caller left; a subscriber the store already
// let go is left as it is.
func (s *store) unsubscribe(sub *subscriber) {
	if sub.remote != nil {
		sub.remote.end()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detach(sub)
}

// detach removes sub from its task's subscribers, if it is one. The store
// is locked.
func (s *store) detach(sub *subscriber) bool {
	subs := sub.t.subs
	for i, o := range subs {
		if o == sub {
			sub.t.subs = append(subs[:i], subs[i+1:]...)
			s.subs--
			return true
		}
	}
	return false
}

// publishStatus tells t's subscribers its status; once it is settled,
// that was the last event, and they are let go. The store is locked.
func (s *store) publishStatus(t *task) {
	s.publish(t, event{head: t.head(), status: true})
	if settled(t.state) {
		for _, sub := range t.subs {
			close(sub.events)
		}
		s.subs -= len(t.subs)
		t.subs = nil
	}
}

// publish queues e for each of t's subscribers, dropping one whose queue
// is full (lagEvents) or would hold more than lagBytes. The store is
// locked: it never waits for a subscriber.
func (s *store) publish(t *task, e event) {
	n := e.size()
	for i := 0; i < len(t.subs); {
		sub := t.subs[i]
		queued := len(sub.events)
		if queued == cap(sub.events) || queued > 0 && sub.pending.Load()+n > s.lagBytes {
			s.detach(sub)
			sub.lagged = true
			close(sub.events)
			if sub.stop != nil {
				sub.stop()
			}
			continue
		}
		sub.pending.Add(n)
		sub.events <- e
		i++
	}
}

// sink is how one binding writes a subscription's events as SSE data:
// result the JSON of an event's object (a Task or an update, as v shapes
// them: in JSON-RPC the response holding it), failure the JSON of the
// error that ends it early.
type sink struct {
	result  func(obj any) []byte
	failure func(e *rpcError) []byte
}

// serveSubscription writes sub's events as SSE, after first (the task as
// it was when it subscribed, its texts to write in place of their marks),
// until the task ends, the store drops the subscriber, or ctx ends (the
// caller left, EndCalls). It returns the events and bytes it wrote. A
// dropped subscriber, or a drain, gets an error event to end with; a
// write blocked behind a caller that stopped reading fails writeGrace
// after (sub.stop, the Server's bound on writes).
func serveSubscription(ctx context.Context, w http.ResponseWriter, v version, sub *subscriber, first []byte, texts []*frames.Text, out sink) (records int, bytes int64) {
	rc := http.NewResponseController(w)
	write := func(b []byte, texts []*frames.Text) error {
		n, err := w.Write([]byte("data: "))
		bytes += int64(n)
		if err == nil {
			var m int64
			m, err = writeText(w, b, texts)
			bytes += m
		}
		if err == nil {
			n, err = w.Write([]byte("\n\n"))
			bytes += int64(n)
		}
		records++
		return err
	}
	if sub != nil {
		// A subscriber still queued when its caller left is let go.
		defer sub.s.unsubscribe(sub)
	}
	if write(first, texts) != nil || rc.Flush() != nil || sub == nil {
		return records, bytes
	}
	var tick <-chan time.Time
	if sub.remote != nil {
		t := time.NewTicker(sub.remote.every)
		defer t.Stop()
		tick = t.C
	}
	for {
		var e event
		var ok bool
		select {
		case <-tick:
			sub.remote.poll(ctx)
			continue
		case e, ok = <-sub.events:
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), core.ErrShuttingDown) {
				write(out.failure(&rpcError{codeInternal, core.ErrShuttingDown.Error()}), nil)
				rc.Flush()
			}
			return records, bytes
		}
		if !ok {
			if sub.lagged {
				write(out.failure(&rpcError{codeInternal, errLagging.Error()}), nil)
				rc.Flush()
			}
			return records, bytes
		}
		sub.pending.Add(-e.size())
		if r := sub.remote; r != nil {
			if e.seq <= r.after { // in the task as first written
				continue
			}
			e.head.contextID = r.contextID
		}
		var obj any
		if e.status {
			obj = v.statusUpdate(&e.head)
		} else {
			obj = v.artifactUpdate(&e.head, e.part, e.first)
		}
		if write(out.result(obj), rawTexts(e.part)) != nil {
			return records, bytes
		}
		// One flush for the events queued at once.
		if len(sub.events) == 0 && rc.Flush() != nil {
			return records, bytes
		}
	}
}

// stopper is a subscriber's stop: its writer, maybe blocked behind a
// caller that does not read, fails writeGrace from when the store drops
// it (at once when it has its writer, else once it does), and never once
// its stream has ended: the connection may be serving its next request.
type stopper struct {
	mu           sync.Mutex
	rc           *http.ResponseController
	fired, ended bool
}

func (s *stopper) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fired = true
	s.set()
}

func (s *stopper) attach(w http.ResponseWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rc = http.NewResponseController(w)
	s.set()
}

func (s *stopper) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
}

func (s *stopper) set() {
	if s.fired && s.rc != nil && !s.ended {
		s.rc.SetWriteDeadline(time.Now().Add(writeGrace))
	}
}

// writeGrace is how long a dropped subscriber's writes may still take:
// time for its error event to reach a caller that reads, slowly.
const writeGrace = time.Second

// serveSubscribe answers SubscribeToTask (1.0) and tasks/resubscribe
// (0.3) of owner's task: an SSE stream of JSON-RPC responses with the
// request's id (subscription).
func (d *Door) serveSubscribe(ctx context.Context, v version, req request, owner core.Owner) *core.Answer {
	id, err := readTaskID(req.params)
	if err != nil {
		return answer(req, nil, &rpcError{codeInvalidParams, err.Error()})
	}
	if req.notify { // a notification gets no answer: nothing to stream
		return answer(req, nil, nil)
	}
	stream, rerr, err := d.subscription(ctx, v, owner, id, sink{
		result:  func(obj any) []byte { return response(req.id, obj, nil) },
		failure: func(e *rpcError) []byte { return response(req.id, nil, e) },
	})
	if err != nil {
		return storeAnswer(req, err)
	}
	if rerr != nil {
		return answer(req, nil, rerr)
	}
	return streamAnswer(stream)
}

// streamAnswer is the answer of a subscription, in either binding: SSE
// its stream writes.
func streamAnswer(stream func(ctx context.Context, w http.ResponseWriter) (int, int64)) *core.Answer {
	return &core.Answer{
		Status: http.StatusOK, Outcome: metrics.OK,
		Header: http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}, "X-Accel-Buffering": {"no"}},
		Stream: stream,
	}
}

// subscription is owner's subscription to task id, in either binding (out
// frames its events): the stream to serve as a core.Answer's Stream, its
// first event the task as it is now, then its updates as message/stream
// sends them, until it ends. A task that ended has no updates: 1.0
// refuses it UnsupportedOperation, as its specification says (§3.1.6);
// 0.3's stream is the task alone, as the A2A JavaScript SDK's 0.3 server
// answers. An agent whose card declares no streaming is
// UnsupportedOperation (§3.3.4); no such task of owner's TaskNotFound;
// past the bounds an internal error saying which. Once it is given, the
// stream must be served: until it is, it holds its subscriber's place.
func (d *Door) subscription(ctx context.Context, v version, owner core.Owner, id string, out sink) (func(ctx context.Context, w http.ResponseWriter) (int, int64), *rpcError, error) {
	if !d.stream {
		return nil, &rpcError{codeUnsupported, "this agent's card declares no streaming: subscribing to a task is a stream"}, nil
	}
	stop := new(stopper)
	snap, sub, rerr := d.tasks.subscribe(owner, id, stop.stop)
	if d.shared != nil && rerr != nil && rerr.Code == codeTaskNotFound {
		if _, here := d.tasks.local(id); !here {
			var err error
			if snap, sub, rerr, err = d.shared.subscribe(ctx, owner, id, stop.stop); err != nil {
				return nil, nil, err
			}
		}
	}
	switch {
	case rerr != nil:
		return nil, rerr, nil
	case sub == nil && v == v10 && terminal(snap.state):
		return nil, &rpcError{codeUnsupported, fmt.Sprintf("task %q is %s: a task in a terminal state has no updates to subscribe to; GetTask answers it", snap.id, v.state(snap.state))}, nil
	}
	return func(ctx context.Context, w http.ResponseWriter) (int, int64) {
		stop.attach(w)
		defer stop.end()
		return serveSubscription(ctx, w, v, sub, out.result(v.wrap("task", v.task(&snap))), snap.texts(), out)
	}, nil, nil
}

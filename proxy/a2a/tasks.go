package a2a

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
)

// task is one message's task: its ids, its state, the agent's message of
// a failure, and its artifact's parts. A store's mutex guards every field
// once the task is in the store.
type task struct {
	id, contextID string
	owner         core.Owner // who sent its message (core.OwnerOf): only they see it
	state         string
	message       string      // the status message: a failure's text
	updated       time.Time   // when state last changed
	parts         []part      // the artifact, but for
	text          frames.Text // the text appended after its last part: written whole, never copied (writeText)
	size          int64       // the bytes of parts and text
	dropped       bool        // the artifact grew past the store's cap and was dropped
	cancel        context.CancelCauseFunc
	cost          int64         // what the store counts it as, while it holds it
	added         int           // the parts added: the first artifact-update does not append
	subs          []*subscriber // told of each change until it ends (subscribe)
	run           *running      // with a shared store, what its flusher writes (shared.go); nil: none
	// question is the agent's question a waiting task (input-required,
	// auth-required) waits for the answer to; expiry its clock
	// (questions.go).
	question *ask.Question
	// teller tells the agent its question expired (questions.go); nil
	// when nothing can (a task claimed from Redis before it asked here).
	teller *teller
	expiry *time.Timer
	// turn counts the task's calls: a task that asked is called again,
	// in a new turn, with the answer.
	turn    int
	history []historyMsg // once it asked: its messages and questions
	parked  bool         // waiting, kept in Redis alone (sharedask.go): this copy is stale
}

// taskOverhead is what the store counts for a task besides its ids,
// message and artifact: the struct, its map entry and list slot.
const taskOverhead = 512

// errCanceled is the cause a call ends with when tasks/cancel cancels its
// task. Its caller is still there, and gets the canceled task; the call's
// log line says caller_left, as for any call its caller ended.
var errCanceled = fmt.Errorf("%w: the task was canceled (tasks/cancel)", core.ErrClientGone)

// store is the bounded in-memory task store for tasks/get and
// tasks/cancel. It holds at most limit bytes of tasks (their ids, status
// messages and artifacts, taskOverhead each besides): past it, the oldest
// ended tasks are forgotten first. A running task is never forgotten; there
// are at most as many as calls in flight and queued, each task's artifact
// at most partLimit bytes. Tasks live in memory only, one sidecar's: behind
// several replicas, a task is found only on the one that ran it.
type store struct {
	limit, partLimit int64
	// maxSubs and maxTaskSubs bound the subscribers in all and of one
	// task; lagEvents and lagBytes what one may fall behind (subscribe.go).
	maxSubs, maxTaskSubs, lagEvents int
	lagBytes                        int64
	// shared keeps the tasks in Redis for every replica; nil: memory
	// only.
	shared *shared
	// questions are the caps and clock of the agents' questions
	// (limits.questions).
	questions config.Questions
	// parts caps the parts that are not text of a message, and of an
	// agent's reply to one (limits.parts).
	parts config.Parts

	mu      sync.Mutex
	waiting []*task // the tasks waiting for an answer, oldest first
	// telling are the calls telling agents their questions expired
	// (questions.go), each bounded by its method's total time and ended
	// by stopTelling (the door closes: quit is done).
	telling     sync.WaitGroup
	quit        context.Context
	stopTelling context.CancelFunc
	tasks       map[string]*task
	order       []*task // oldest first
	bytes       int64
	subs        int // the subscribers of every task
}

// newStore is a store of limit bytes of tasks, partLimit of one task's
// artifact, serving subs subscriptions at once (limits.subscriptions), at
// most maxTaskSubscribers of one task.
func newStore(limit, partLimit int64, subs int) *store {
	quit, stop := context.WithCancel(context.Background())
	return &store{limit: limit, partLimit: partLimit, tasks: make(map[string]*task),
		maxSubs: subs, maxTaskSubs: min(maxTaskSubscribers, subs), lagEvents: lagEvents, lagBytes: lagBytes,
		questions: config.DefaultQuestions, quit: quit, stopTelling: stop}
}

// open makes owner's task of a new message. A message naming a task
// waiting for an answer (input-required, auth-required) is the answer:
// the task is resumed, and reply is what the agent is called with
// (resume). Any other message naming a task is refused, as the A2A
// JavaScript SDK's server refuses it: a task the store does not hold, or
// holds for another owner, is TaskNotFound (never "forbidden": no oracle
// of other callers' ids), one that ended UnsupportedOperation, a
// contextId other than the task's invalid params. A task still running is
// refused too: it takes a message only when it asked for one.
func (s *store) open(m message, owner core.Owner) (t *task, reply *ask.Reply, e *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.taskID != "" {
		t, ok := s.tasks[m.taskID]
		if !ok || t.owner != owner {
			return nil, nil, &rpcError{codeTaskNotFound, fmt.Sprintf("task %q not found", m.taskID)}
		}
		if e := refuseFollowUp(t, m); e != nil {
			return nil, nil, e
		}
		reply, e := s.resume(t, m)
		if e != nil {
			return nil, nil, e
		}
		return t, reply, nil
	}
	t = &task{id: core.NewID(), contextID: m.contextID, owner: owner, state: stateSubmitted, updated: time.Now()}
	if t.contextID == "" {
		t.contextID = core.NewID()
	}
	s.tasks[t.id] = t
	s.order = append(s.order, t)
	s.recount(t)
	return t, nil, nil
}

// refuseFollowUp is the refusal of m, a message naming t, its owner's;
// nil for the answer to t's question.
func refuseFollowUp(t *task, m message) *rpcError {
	switch {
	case terminal(t.state):
		return &rpcError{codeUnsupported, fmt.Sprintf("task %q is %s: a task in a terminal state takes no more messages", t.id, t.state)}
	case m.contextID != "" && m.contextID != t.contextID:
		return &rpcError{codeInvalidParams, fmt.Sprintf("contextId %q is not the context of task %q", m.contextID, t.id)}
	case waiting(t.state) && t.question != nil:
		return nil
	default:
		return &rpcError{codeUnsupported, fmt.Sprintf("task %q is %s: it takes a message only when its agent asked for one (input-required)", t.id, t.state)}
	}
}

// recount updates what the store counts for t, which it holds, after t
// changed, and forgets the oldest ended tasks while the store is over its
// limit.
func (s *store) recount(t *task) {
	cost := taskOverhead + int64(len(t.id)+len(t.contextID)+len(t.message)) + t.text.Len() + t.size + t.historyCost()
	if q := t.question; q != nil {
		cost += int64(len(q.Raw) + len(q.Schema))
	}
	s.bytes += cost - t.cost
	t.cost = cost
	for i := 0; s.bytes > s.limit && i < len(s.order); {
		if old := s.order[i]; terminal(old.state) {
			s.forget(i)
			continue
		}
		i++
	}
}

// forget drops the task at order[i].
func (s *store) forget(i int) {
	t := s.order[i]
	delete(s.tasks, t.id)
	s.bytes -= t.cost
	if i == 0 { // the oldest, most often: no copy
		s.order[0] = nil
		s.order = s.order[1:]
		return
	}
	s.order = append(s.order[:i], s.order[i+1:]...)
}

// remove forgets t: a message the sidecar refused before it called the
// agent, which never became a task for its caller.
func (s *store) remove(t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.run != nil {
		run := t.run
		go s.shared.forget(t, run) // the refusal is answered meanwhile
	}
	for i, o := range s.order {
		if o == t {
			s.forget(i)
			return
		}
	}
}

// bind makes cancel end t's call; a task canceled already has it ended at
// once.
func (s *store) bind(t *task, cancel context.CancelCauseFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.state == stateCanceled {
		cancel(errCanceled)
		return
	}
	if !terminal(t.state) {
		t.cancel = cancel
	}
}

// setState moves t to state (with the agent's message), unless it is
// already terminal. It reports whether it did. A task kept in Redis too
// ends there first, in the state Redis says it ended (canceled by another
// replica first).
func (s *store) setState(t *task, state, message string) bool {
	s.mu.Lock()
	if run := t.run; run != nil && terminal(state) && !terminal(t.state) {
		s.mu.Unlock()
		state, message = s.shared.finish(t, run, state, message)
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if terminal(t.state) {
		return false
	}
	if t.run != nil && !terminal(state) {
		t.run.status(state, message)
	}
	t.state, t.message, t.updated = state, message, time.Now()
	if settled(state) {
		t.cancel = nil
	}
	if s.tasks[t.id] == t {
		s.recount(t)
	}
	s.publishStatus(t)
	return true
}

// addPart appends p to t's artifact. It reports false when the artifact
// would grow past partLimit: the artifact is then dropped whole, never
// kept in part.
func (s *store) addPart(t *task, p part) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Subscribers are told of every part, as message/stream's caller is,
	// whether or not the store keeps it.
	if len(t.subs) > 0 {
		s.publish(t, event{head: t.head(), part: p, first: t.added == 0})
	}
	first := t.added == 0
	t.added++
	if t.dropped {
		if t.run != nil {
			t.run.part(p, first, false, 0, s.partLimit)
		}
		return false
	}
	n := p.size()
	if t.size+n > s.partLimit {
		t.parts, t.text, t.size, t.dropped = nil, frames.Text{}, 0, true
	} else {
		t.size += n
		if p.Data == nil && p.Metadata == nil && p.file == nil {
			t.text.AppendString(p.Text) // text parts append, as the updates do
		} else {
			t.flushText()
			t.parts = append(t.parts, p)
		}
	}
	if s.tasks[t.id] == t {
		s.recount(t)
	}
	if t.run != nil {
		t.run.part(p, first, !t.dropped, t.size, s.partLimit)
	}
	return !t.dropped
}

// flushText makes the text appended since the last part a part.
func (t *task) flushText() {
	if t.text.Len() > 0 {
		kept := t.text
		t.parts = append(t.parts, part{kept: &kept})
		t.text = frames.Text{}
	}
}

// texts are the task's texts kept in blocks, in the order of its parts:
// what writeText writes in place of their marks in its JSON (task).
func (t *task) texts() []*frames.Text {
	var texts []*frames.Text
	for _, p := range t.parts {
		switch {
		case p.kept != nil:
			texts = append(texts, p.kept)
		case p.raw != nil:
			texts = append(texts, p.raw)
		}
	}
	if t.text.Len() > 0 {
		texts = append(texts, &t.text)
	}
	return texts
}

// clone is a copy of t. Its text is a snapshot, not copied: a Text's
// blocks do not change once written, while the task's call appends on.
func (t *task) clone() task {
	c := *t
	c.parts = append([]part(nil), t.parts...)
	c.text, c.cancel, c.subs, c.expiry = t.text.Snapshot(), nil, nil, nil
	c.history = append([]historyMsg(nil), t.history...)
	return c
}

// head is a copy of t's ids and status, without its artifact: what an
// event says of its task.
func (t *task) head() task {
	return task{id: t.id, contextID: t.contextID, owner: t.owner, state: t.state, message: t.message, updated: t.updated, question: t.question}
}

// copyOf is a copy of t, safe to encode without the lock.
func (s *store) copyOf(t *task) task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.clone()
}

// snapshot is a copy of owner's task id, safe to encode without the
// lock; ok is false for no such task of owner's.
func (s *store) snapshot(owner core.Owner, id string) (task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.owner != owner {
		return task{}, false
	}
	return t.clone(), true
}

// cancelTask cancels owner's task id: a running task becomes canceled and
// its call ends. ok is false for no such task of owner's, canceled false
// for one already in a terminal state.
func (s *store) cancelTask(owner core.Owner, id string) (t task, ok, canceled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.tasks[id]
	if !ok || p.owner != owner {
		return task{}, false, false
	}
	if !terminal(p.state) {
		s.unwait(p)
		p.state, p.message, p.updated, canceled = stateCanceled, "", time.Now(), true
		if p.cancel != nil {
			p.cancel(errCanceled)
			p.cancel = nil
		}
		s.recount(p)
		s.publishStatus(p)
	}
	return p.clone(), true, canceled
}

// cancelLocal ends task id, which this replica runs, as Redis says it
// ended (canceled by another replica, or failed when its lease lapsed):
// its call ends as tasks/cancel ends it.
func (s *store) cancelLocal(id, state, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.tasks[id]
	if !ok || terminal(p.state) {
		return
	}
	s.unwait(p)
	p.state, p.message, p.updated = state, message, time.Now()
	if p.cancel != nil {
		p.cancel(errCanceled)
		p.cancel = nil
	}
	s.recount(p)
	s.publishStatus(p)
	if run := p.run; run != nil { // its flusher stops; Redis has its end
		go s.shared.finish(p, run, state, message)
	}
}

// local is a copy of task id, with its artifact, when this replica holds
// it, whoever its owner.
func (s *store) local(id string) (task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return task{}, false
	}
	return t.clone(), true
}

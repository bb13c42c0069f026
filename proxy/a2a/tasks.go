package a2a

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// task is one message's task: its ids, its state, the agent's message of
// a failure, and its artifact's parts. A store's mutex guards every field
// once the task is in the store.
type task struct {
	id, contextID string
	state         string
	message       string    // the status message: a failure's text
	updated       time.Time // when state last changed
	parts         []part    // the artifact, at most maxTaskBytes of it, but for
	text          []byte    // the text appended after its last part
	size          int       // the bytes of parts and text
	cancel        context.CancelCauseFunc
}

// The store's bounds: how many tasks it keeps (the oldest go first) and
// how much of each task's artifact tasks/get returns.
const (
	maxTasks     = 1000
	maxTaskBytes = 1 << 20
)

// errCanceled is the cause a call ends with when tasks/cancel cancels its
// task.
var errCanceled = errors.New("the task was canceled (tasks/cancel)")

// store is the bounded in-memory task store for tasks/get and tasks/cancel.
// Tasks live in memory only, one sidecar's: behind several replicas, a
// task is found only on the one that ran it.
type store struct {
	mu    sync.Mutex
	tasks map[string]*task
	order []string // ids, oldest first
}

func newStore() *store { return &store{tasks: make(map[string]*task)} }

// add stores t, forgetting the oldest task when the store is full.
func (s *store) add(t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tasks[t.id]; !ok {
		s.order = append(s.order, t.id)
	}
	s.tasks[t.id] = t
	for len(s.order) > maxTasks {
		delete(s.tasks, s.order[0])
		s.order = s.order[1:]
	}
}

// setState moves t to state (with the agent's message), unless it is
// already terminal. It reports whether it did.
func (s *store) setState(t *task, state, message string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if terminal(t.state) {
		return false
	}
	t.state, t.message, t.updated = state, message, time.Now()
	return true
}

// addPart appends p to t's artifact while it stays within maxTaskBytes.
func (s *store) addPart(t *task, p part) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p.Text) + len(p.Data)
	if t.size+n > maxTaskBytes {
		return
	}
	t.size += n
	if p.Data == nil {
		t.text = append(t.text, p.Text...) // text parts append, as the updates do
		return
	}
	t.flushText()
	t.parts = append(t.parts, p)
}

// flushText makes the text appended since the last part a part.
func (t *task) flushText() {
	if len(t.text) > 0 {
		t.parts = append(t.parts, part{Text: string(t.text)})
		t.text = t.text[:0]
	}
}

// clone is a copy of t whose artifact is all parts.
func (t *task) clone() task {
	c := *t
	c.parts = append([]part(nil), t.parts...)
	if len(t.text) > 0 {
		c.parts = append(c.parts, part{Text: string(t.text)})
	}
	c.text = nil
	return c
}

// copyOf is a copy of t, safe to encode without the lock.
func (s *store) copyOf(t *task) task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.clone()
}

// snapshot is a copy of task id, safe to encode without the lock.
func (s *store) snapshot(id string) (task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return task{}, false
	}
	return t.clone(), true
}

// cancel cancels task id: a running task becomes canceled and its call
// ends. ok is false for no such task, canceled false for one already in a
// terminal state.
func (s *store) cancelTask(id string) (t task, ok, canceled bool) {
	s.mu.Lock()
	p, ok := s.tasks[id]
	if ok && !terminal(p.state) {
		p.state, p.message, p.updated, canceled = stateCanceled, "", time.Now(), true
		if p.cancel != nil {
			p.cancel(errCanceled)
		}
	}
	s.mu.Unlock()
	if !ok {
		return task{}, false, false
	}
	t, _ = s.snapshot(id)
	return t, true, canceled
}

// newID is a random id for a task, context or message.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // a version 4 UUID
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

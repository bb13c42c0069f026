package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// slots are the concurrency slots and the bounded queue of the calls
// waiting for one. A slot freed while calls wait is handed to the first
// of them then and there: from that moment it holds the slot and waits no
// more, not from when its goroutine next runs. So a caller who comes
// meanwhile finds the queue as it is, and concurrency + queue callers in
// a closed loop are never turned away (TestSlotFreeBeforeAnswer).
type slots struct {
	n          int // the slots
	mu         sync.Mutex
	free       int     // slots no call holds
	queue      int     // the most calls that may wait
	waiting    int     // calls waiting
	head, tail *queued // the calls waiting, first come first
}

// queued is one call waiting for a slot.
type queued struct {
	ready      chan struct{} // closed when the call is handed a slot
	handed     bool          // it was (under slots.mu)
	prev, next *queued
}

func newSlots(n, queue int) *slots { return &slots{n: n, free: n, queue: queue} }

// acquire takes a slot, waiting in the queue for one, at most timeout,
// when they are all taken.
func (q *slots) acquire(ctx context.Context, timeout time.Duration) error {
	q.mu.Lock()
	if q.free > 0 {
		q.free--
		q.mu.Unlock()
		return nil
	}
	if q.waiting >= q.queue {
		q.mu.Unlock()
		return fmt.Errorf("%w: %d calls in flight and %d waiting", core.ErrBusy, q.n, q.queue)
	}
	w := &queued{ready: make(chan struct{})}
	q.push(w)
	q.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.ready:
	case <-ctx.Done():
	case <-t.C:
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		// A caller who leaves the queue never reaches the agent: a slot
		// it was handed as it left goes on to the next call.
		if w.handed {
			q.handOn()
		} else {
			q.remove(w)
		}
		return context.Cause(ctx)
	case w.handed:
		return nil // also when handed one just as the timeout ran out
	default: // the queue timeout ran out
		q.remove(w)
		return fmt.Errorf("%w: no slot freed within %s", core.ErrBusy, timeout)
	}
}

// release frees a slot: the first call waiting has it at once.
func (q *slots) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.handOn()
}

// handOn gives a slot freed to the first call waiting, or frees it.
func (q *slots) handOn() {
	if w := q.head; w != nil {
		q.remove(w)
		w.handed = true
		close(w.ready)
		return
	}
	q.free++
}

// state is the slots free and the calls waiting.
func (q *slots) state() (free, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.free, q.waiting
}

func (q *slots) push(w *queued) {
	w.prev = q.tail
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.waiting++
}

func (q *slots) remove(w *queued) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
	q.waiting--
}

// answerWriter is the ResponseWriter a call's answer is written through.
// It frees the call's slot (call.free) just before the last byte of an
// answer of known length (its Content-Length) is written: the caller has
// the answer whole when that byte arrives and may send its next call at
// once, which must not find this one still holding its slot. Until then
// the slot bounds the memory the answer holds. An answer of unknown
// length ends with its last chunk, or a Content-Length net/http adds to a
// short one, written after the handler returns: the call frees its slot
// before (call.done).
type answerWriter struct {
	http.ResponseWriter
	c      *call
	head   bool  // the header was written
	status int   // its status
	left   int64 // bytes of the Content-Length still to write; -1: none given
}

func (a *answerWriter) WriteHeader(code int) {
	if !a.head && code >= 200 {
		a.head, a.status, a.left = true, code, -1
		if v := a.Header()["Content-Length"]; len(v) == 1 {
			if n, err := strconv.ParseInt(v[0], 10, 64); err == nil {
				a.left = n
			}
		}
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerWriter) Write(p []byte) (int, error) {
	if !a.head {
		a.WriteHeader(http.StatusOK)
	}
	if a.left <= 0 || int64(len(p)) < a.left || a.c.slots == nil {
		n, err := a.ResponseWriter.Write(p)
		a.left -= int64(n)
		return n, err
	}
	// p ends the answer: all of it but its last byte, then the slot is
	// freed, then that byte.
	k := a.left - 1
	n, err := a.ResponseWriter.Write(p[:k])
	a.left -= int64(n)
	if err != nil {
		return n, err
	}
	a.c.free()
	m, err := a.ResponseWriter.Write(p[k:])
	a.left -= int64(m)
	return n + m, err
}

// Unwrap is the ResponseWriter underneath, for http.ResponseController.
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

package a2a

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/state"
)

// storeAnswer is the JSON-RPC answer of a call the state store failed:
// 503 and -32603 with state.Message, logged with state.Reason and err.
func storeAnswer(req request, err error) *core.Answer {
	a := answer(req, nil, &rpcError{codeInternal, state.Message})
	a.Status, a.Outcome, a.Reason, a.Err = http.StatusServiceUnavailable, metrics.NotReady, state.Reason, err
	if req.notify {
		a.Status = http.StatusNoContent
	}
	return a
}

// restStoreAnswer is the HTTP+JSON answer of a call the state store
// failed: 503, a google.rpc.Status UNAVAILABLE with state.Message, logged
// with err.
func restStoreAnswer(v version, err error) *core.Answer {
	body := restStatus(http.StatusServiceUnavailable, "UNAVAILABLE", state.Message, strings.ToUpper(state.Reason), sidecarDomain)
	if v == p03 {
		body = legacyError(body, codeInternal, state.Message)
	}
	return &core.Answer{Status: http.StatusServiceUnavailable, Outcome: metrics.NotReady, Reason: state.Reason, Err: err,
		Header: http.Header{"Content-Type": {contentType(v, true)}, "Retry-After": {"1"}}, Body: append(body, '\n')}
}

// getTask is owner's task id: this replica's copy when it runs it, else
// Redis' (with a shared store).
func (d *Door) getTask(ctx context.Context, owner core.Owner, id string) (task, bool, error) {
	t, ok := d.tasks.snapshot(owner, id)
	if ok || d.shared == nil {
		return t, ok, nil
	}
	if _, here := d.tasks.local(id); here { // another owner's
		return task{}, false, nil
	}
	t, _, ok, err := d.shared.load(ctx, owner, id, true)
	return t, ok, err
}

// cancelTask cancels owner's task id; with a shared store in Redis first,
// from whichever replica, the replica running it told.
func (d *Door) cancelTask(ctx context.Context, owner core.Owner, id string) (t task, ok, canceled bool, err error) {
	if d.shared == nil {
		t, ok, canceled = d.tasks.cancelTask(owner, id)
		return t, ok, canceled, nil
	}
	res, err := d.shared.cancel(ctx, owner, id)
	switch {
	case err != nil:
		return task{}, false, false, err
	case res.state == "":
		return task{}, false, false, nil
	case !res.ended:
		return task{id: id, state: res.state}, true, false, nil
	}
	d.tasks.cancelLocal(id, stateCanceled, "") // when it runs here
	if t, ok := d.tasks.snapshot(owner, id); ok {
		return t, true, true, nil
	}
	t, _, ok, err = d.shared.load(ctx, owner, id, true)
	return t, ok, ok, err
}

// listTasks is a page of owner's tasks (store.list); with a shared store
// from Redis: the owner's index, then the hashes of its tasks, then the
// page's artifacts when asked, a round trip each. Index entries of tasks
// expired are removed as they are met.
func (d *Door) listTasks(ctx context.Context, owner core.Owner, f listFilter) ([]task, string, int, error) {
	if d.shared == nil {
		page, next, total := d.tasks.list(owner, f)
		return page, next, total, nil
	}
	sh := d.shared
	idx := sh.key("owner", ownerHex(owner))
	ids, err := sh.r.Client().ZRevRange(ctx, idx, 0, -1).Result()
	if err != nil {
		return nil, "", 0, sh.r.Fail("listing tasks", err)
	}
	hs := make([]*redis.SliceCmd, len(ids))
	if _, err := sh.r.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			hs[i] = p.HMGet(ctx, sh.key("task", id), "owner", "context", "state", "message", "updated", "seq", "size", "dropped", "lease")
		}
		return nil
	}); err != nil {
		return nil, "", 0, sh.r.Fail("listing tasks", err)
	}
	type match struct {
		t     task
		lease int64
	}
	var found []match
	var gone []any
	names := []string{"owner", "context", "state", "message", "updated", "seq", "size", "dropped", "lease"}
	for i, id := range ids {
		vals := hs[i].Val()
		h := map[string]string{}
		for j, v := range vals {
			if s, ok := v.(string); ok {
				h[names[j]] = s
			}
		}
		if h["owner"] == "" {
			gone = append(gone, id)
			continue
		}
		t, _ := taskOf(id, owner, h)
		lease, _ := strconv.ParseInt(h["lease"], 10, 64)
		if f.contextID == "" || t.contextID == f.contextID {
			found = append(found, match{t, lease})
		}
	}
	if len(gone) > 0 {
		sh.r.Client().ZRem(ctx, idx, gone...) // lazily: a failure leaves them for the next
	}
	now := time.Now().UnixMilli()
	kept := found[:0]
	for _, m := range found {
		if !terminal(m.t.state) && now > m.lease {
			res, err := sh.run(ctx, m.t.id, owner, "lease", stateFailed, sh.lapsed(m.t.state))
			if err != nil {
				return nil, "", 0, err
			}
			if res.state != "" {
				m.t.state, m.t.message, m.t.updated = res.state, res.message, res.updated
			}
		}
		if (f.state == "" || m.t.state == f.state) && (f.after.IsZero() || !m.t.updated.Before(f.after)) {
			kept = append(kept, m)
		}
	}
	found = kept
	slices.SortFunc(found, func(a, b match) int {
		if c := b.t.updated.Compare(a.t.updated); c != 0 {
			return c
		}
		return cmp.Compare(b.t.id, a.t.id)
	})
	total := len(found)
	if f.cursor != nil {
		i, _ := slices.BinarySearchFunc(found, *f.cursor, func(m match, c cursor) int {
			if c.before(cursor{m.t.updated, m.t.id}) {
				return -1
			}
			return 1
		})
		found = found[i:]
	}
	var page []task
	var size int64
	next := ""
	for i, m := range found {
		if i == f.pageSize || f.artifacts && i > 0 && size+m.t.size > sh.partLimit {
			next = cursor{found[i-1].t.updated, found[i-1].t.id}.token()
			break
		}
		size += m.t.size
		page = append(page, m.t)
	}
	if f.artifacts && len(page) > 0 {
		ls := make([]*redis.StringSliceCmd, len(page))
		if _, err := sh.r.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range page {
				ls[i] = p.LRange(ctx, sh.key("parts", page[i].id), 0, -1)
			}
			return nil
		}); err != nil {
			return nil, "", 0, sh.r.Fail("listing tasks", err)
		}
		for i := range page {
			for _, raw := range ls[i].Val() {
				var w wirePart
				if json.Unmarshal([]byte(raw), &w) == nil {
					page[i].addLoaded(w.part())
				}
			}
		}
	}
	return page, next, total, nil
}

// remoteSub is a subscriber to a task another replica runs: its events
// come from the task's channel, those in the snapshot (seq at most after)
// skipped.
type remoteSub struct {
	sh        *shared
	sub       *subscriber
	id        string
	owner     core.Owner
	after     int64  // the snapshot's seq
	contextID string // the task's: events do not carry it
	every     time.Duration

	mu      sync.Mutex
	last    int64 // the last seq queued
	closed  bool
	unsub   func()
	endOnce sync.Once
}

// subscribe is owner's subscription to task id, which another replica
// runs: the task's channel subscribed first, then its snapshot read
// (subscription's steps, in Redis).
func (sh *shared) subscribe(ctx context.Context, owner core.Owner, id string, stop func()) (task, *subscriber, *rpcError, error) {
	s := sh.local
	s.mu.Lock()
	if s.subs >= s.maxSubs {
		s.mu.Unlock()
		return task{}, nil, &rpcError{codeInternal, fmt.Sprintf("this agent serves %d subscriptions, the most it serves at once; try again later", s.maxSubs)}, nil
	}
	if sh.subsOf == nil {
		sh.subsOf = map[string]int{}
	}
	if sh.subsOf[id] >= s.maxTaskSubs {
		s.mu.Unlock()
		return task{}, nil, &rpcError{codeInternal, fmt.Sprintf("task %q has %d subscribers, the most this agent serves one task; try again once one leaves", core.Clip(id), s.maxTaskSubs)}, nil
	}
	s.subs++
	sh.subsOf[id]++
	s.mu.Unlock()
	sub := &subscriber{s: s, events: make(chan event, s.lagEvents), stop: stop}
	r := &remoteSub{sh: sh, sub: sub, id: id, owner: owner, every: sh.r.Lease}
	sub.remote = r
	unsub, err := sh.r.PubSub().Subscribe(ctx, sh.key("events", id), r.receive)
	if err != nil {
		r.end()
		return task{}, nil, nil, err
	}
	r.mu.Lock()
	r.unsub = unsub
	r.mu.Unlock()
	if betweenSubscribeAndRead != nil {
		betweenSubscribeAndRead()
	}
	snap, seq, ok, err := sh.load(ctx, owner, id, true)
	switch {
	case err != nil:
		r.end()
		return task{}, nil, nil, err
	case !ok:
		r.end()
		return task{}, nil, &rpcError{codeTaskNotFound, fmt.Sprintf("task %q not found", core.Clip(id))}, nil
	case settled(snap.state):
		r.end()
		return snap, nil, nil, nil
	}
	r.mu.Lock()
	r.after, r.contextID = seq, snap.contextID
	r.last = max(r.last, seq)
	r.mu.Unlock()
	return snap, sub, nil, nil
}

// betweenSubscribeAndRead, when set (by a test), runs between the
// subscription to a task's channel and the read of its snapshot: events
// published then are in both.
var betweenSubscribeAndRead func()

// receive is the channel's handler (the Pub/Sub goroutine: it never
// waits): a batch "seq [events]" queued, or, when messages may have been
// lost, the subscriber dropped as one that lagged.
func (r *remoteSub) receive(payload string, lost bool) {
	if lost {
		r.drop()
		return
	}
	first, batch, ok := strings.Cut(payload, " ")
	seq, err := strconv.ParseInt(first, 10, 64)
	var events []wireEvent
	if !ok || err != nil || json.Unmarshal([]byte(batch), &events) != nil {
		return
	}
	r.deliver(seq, events)
}

// deliver queues events, the first numbered seq, as store.publish queues
// a local subscriber's: past the lag bounds it is dropped. One already
// queued is skipped; a gap (a batch lost) drops it.
func (r *remoteSub) deliver(seq int64, events []wireEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	sub := r.sub
	for i, w := range events {
		n := seq + int64(i)
		if n <= r.last {
			continue
		}
		if r.last > 0 && n != r.last+1 {
			r.dropLocked()
			return
		}
		r.last = n
		e := event{head: task{id: r.id, state: w.State, message: w.Message, updated: time.UnixMilli(w.Updated)}, status: w.Status, first: w.First, seq: n}
		if w.Part != nil {
			e.part = w.Part.part()
		}
		size := e.size()
		queued := len(sub.events)
		if queued == cap(sub.events) || queued > 0 && sub.pending.Load()+size > r.sh.local.lagBytes {
			r.dropLocked()
			return
		}
		sub.pending.Add(size)
		sub.events <- e
		if w.Status && settled(w.State) {
			r.closed = true
			close(sub.events)
			return
		}
	}
}

func (r *remoteSub) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.dropLocked()
	}
}

func (r *remoteSub) dropLocked() {
	r.closed = true
	r.sub.lagged = true
	close(r.sub.events)
	if r.sub.stop != nil {
		r.sub.stop()
	}
}

// poll reads the task, every lease: a runner that stopped has the task
// end failed (load), and an end whose event was lost is delivered.
func (r *remoteSub) poll(ctx context.Context) {
	t, seq, ok, err := r.sh.load(ctx, r.owner, r.id, false)
	if err != nil || !ok || !settled(t.state) {
		return
	}
	r.deliver(seq, []wireEvent{{Status: true, State: t.state, Message: t.message, Updated: t.updated.UnixMilli()}})
}

// end lets the subscriber go: its channel unsubscribed, its places freed.
func (r *remoteSub) end() {
	r.endOnce.Do(func() {
		r.mu.Lock()
		unsub := r.unsub
		if !r.closed {
			r.closed = true
			close(r.sub.events)
		}
		r.mu.Unlock()
		if unsub != nil {
			unsub()
		}
		s := r.sh.local
		s.mu.Lock()
		s.subs--
		if r.sh.subsOf[r.id]--; r.sh.subsOf[r.id] <= 0 {
			delete(r.sh.subsOf, r.id)
		}
		s.mu.Unlock()
	})
}

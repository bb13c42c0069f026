package a2a

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	gpart "github.com/sidecar-dev/sidecar/proxy/part"
	"github.com/sidecar-dev/sidecar/state"
)

// shared keeps the door's tasks in Redis (state.store: redis), so that
// every replica answers every task: the replica running a task writes it
// (open, a flusher per task, its end, its lease), any replica reads it.
// The memory store still holds the tasks this replica runs, and serves
// them; Redis is the authority on a task's end (writeScript).
//
// Keys, under the store's prefix p:
//
//	p:a2a:task:{id}     hash: owner, context, state, message, updated, replica, lease, seq, size, dropped
//	p:a2a:parts:{id}    list: the artifact's parts (JSON), text chunks appending
//	p:a2a:owner:{owner} zset: the owner's task ids by update time (ListTasks)
//	p:a2a:bytes         string: the bytes of the ended tasks held
//	p:a2a:ended         zset: the ended tasks by end time
//	p:a2a:costs         hash: ended task id → "cost ownerhex"
//	p:a2a:events:{id}   channel: the task's events, in batches "seq [events]"
//	p:a2a:cancel:{replica} channel: ids of the tasks to cancel on that replica
type shared struct {
	r                *state.Redis
	local            *store
	limit, partLimit int64
	leaseMsg         string

	mu       sync.Mutex
	running  map[string]*task // the tasks this replica runs: their leases renewed
	renewing bool
	cancels  func() // unsubscribes this replica's cancel channel; nil: not yet subscribed
	closed   bool
	done     chan struct{}  // closed at close: the lease renewal stops
	subsOf   map[string]int // the remote subscribers of each task (local.mu)
	wg       sync.WaitGroup
}

func newShared(r *state.Redis, local *store) *shared {
	return &shared{r: r, local: local, limit: local.limit, partLimit: local.partLimit,
		leaseMsg: fmt.Sprintf("the replica running the task stopped: its lease (state.redis.lease, %s) was not renewed", r.Lease),
		running:  map[string]*task{}, done: make(chan struct{})}
}

func (sh *shared) key(parts ...string) string { return sh.r.Key(append([]string{"a2a"}, parts...)...) }

func ownerHex(o core.Owner) string { return hex.EncodeToString(o[:]) }

// running is what the replica running a task keeps of it for Redis: the
// events not yet written, and its flusher.
type running struct {
	ctx     context.Context // the call's, without its end: spans
	mu      sync.Mutex
	events  []wireEvent // not yet written
	parts   []string    // the artifact's parts not yet written (JSON)
	bytes   int64       // their bytes
	size    int64       // the artifact's bytes
	dropped bool
	state   string // the status to write ("" none)
	message string
	wake    chan struct{} // the flusher has events to write
	stop    chan struct{} // closed when the task ends: the flusher stops
	done    chan struct{} // closed when the flusher stopped

	endOnce  sync.Once
	endState string // what Redis said the task ended as
	endMsg   string
}

// wireEvent is one event in a batch on a task's channel.
type wireEvent struct {
	Status  bool      `json:"s,omitempty"`
	State   string    `json:"st,omitempty"`
	Message string    `json:"m,omitempty"`
	Updated int64     `json:"u,omitempty"` // unix ms
	Part    *wirePart `json:"p,omitempty"`
	First   bool      `json:"f,omitempty"`
}

// size is what an event waiting to be written counts against the
// artifact's bound: its part's bytes.
func (e wireEvent) size() int64 {
	if e.Part == nil {
		return 0
	}
	return int64(len(e.Part.Text) + len(e.Part.Data) + len(e.Part.Metadata) + len(e.Part.File))
}

// wirePart is a part as the list and the events hold it.
type wirePart struct {
	Text     string          `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// File is a file part as a part record, in the one shape (package
	// part), its base64 as the agent wrote it.
	File json.RawMessage `json:"file,omitempty"`
}

func toWire(p part) *wirePart {
	w := &wirePart{Text: p.Text, Data: p.Data, Metadata: p.Metadata}
	if p.file != nil {
		f := *p.file
		if p.raw != nil {
			f.Base64 = p.raw.Bytes()
		}
		w.File = gpart.AppendRecord(nil, &f)
	}
	return w
}

func (w *wirePart) part() part {
	if w.File != nil {
		if f, err := gpart.Parse(w.File, config.Parts{}); err == nil {
			return fileOf(f)
		}
	}
	return part{Text: w.Text, Data: w.Data, Metadata: w.Metadata}
}

// open writes t, which this replica runs, in one round trip: its hash,
// its owner's index entry and its lease; this replica's cancel channel is
// subscribed first (once), so a cancel of t is heard. Its flusher starts.
func (sh *shared) open(ctx context.Context, t *task) error {
	if err := sh.listen(ctx); err != nil {
		return err
	}
	now := time.Now()
	ttl := sh.r.TaskTTL
	owner := ownerHex(t.owner)
	_, err := sh.r.Client().TxPipelined(ctx, func(p redis.Pipeliner) error {
		h := sh.key("task", t.id)
		p.HSet(ctx, h, "owner", owner, "context", t.contextID, "state", t.state, "message", "",
			"updated", t.updated.UnixMilli(), "replica", sh.r.Replica, "lease", now.Add(sh.r.Lease).UnixMilli(),
			"seq", 0, "size", 0, "dropped", 0)
		p.Expire(ctx, h, ttl)
		p.ZAdd(ctx, sh.key("owner", owner), redis.Z{Score: float64(t.updated.UnixMilli()), Member: t.id})
		p.Expire(ctx, sh.key("owner", owner), ttl)
		return nil
	})
	if err != nil {
		return sh.r.Fail("opening task "+t.id, err)
	}
	run := &running{ctx: context.WithoutCancel(ctx), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	sh.local.mu.Lock()
	t.run = run
	sh.local.mu.Unlock()
	go sh.flusher(t, run)
	sh.track(t)
	return nil
}

// listen subscribes this replica's cancel channel, once.
func (sh *shared) listen(ctx context.Context) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.cancels != nil {
		return nil
	}
	unsub, err := sh.r.PubSub().Subscribe(ctx, sh.key("cancel", sh.r.Replica), func(id string, lost bool) {
		if !lost {
			// Not on the Pub/Sub goroutine: canceling takes the
			// store's lock and ends the agent's call.
			go sh.local.cancelLocal(id, stateCanceled, "")
		}
	})
	if err != nil {
		return err
	}
	sh.cancels = unsub
	return nil
}

// status notes t's new status for the flusher. The store is locked.
func (run *running) status(state, message string) {
	run.mu.Lock()
	run.state, run.message = state, message
	run.events = append(run.events, wireEvent{Status: true, State: state, Message: message, Updated: time.Now().UnixMilli()})
	run.mu.Unlock()
	run.poke()
}

// part notes a part of t's artifact for the flusher (kept: the store
// keeps it, size the artifact's bytes after it). What waits is bounded as
// the artifact is: past partLimit bytes, the parts waiting are dropped
// and the artifact with them. The store is locked.
func (run *running) part(p part, first, kept bool, size, limit int64) {
	w := toWire(p)
	b, _ := json.Marshal(w)
	run.mu.Lock()
	e := wireEvent{Part: w, First: first}
	n := e.size()
	if run.bytes+n > limit {
		run.events, run.parts, run.bytes, kept = nil, nil, 0, false
	}
	run.events = append(run.events, e)
	run.bytes += n
	if kept {
		run.parts = append(run.parts, string(b))
		run.size = size
	} else {
		run.parts, run.size, run.dropped = nil, 0, true
	}
	run.mu.Unlock()
	run.poke()
}

func (run *running) poke() {
	select {
	case run.wake <- struct{}{}:
	default:
	}
}

// flusher writes t's events as they come, one write at a time, each all
// the events waiting: the stream to the caller never waits for it. A
// write that fails leaves its events waiting for the next. It ends with
// the task.
func (sh *shared) flusher(t *task, run *running) {
	defer close(run.done)
	for {
		select {
		case <-run.stop:
			return
		case <-run.wake:
		}
		res, err := sh.write(run.ctx, t, run, "", "")
		if err == nil && terminal(res.state) {
			// Canceled by another replica (its cancel on our channel
			// may be lost), or failed when the lease lapsed.
			go sh.local.cancelLocal(t.id, res.state, res.message)
			return
		}
	}
}

// result is a task's status as writeScript answers it.
type result struct {
	state, message string
	updated        time.Time
	seq            int64
	ended          bool
}

// write runs writeScript "run" for t with the events waiting and final
// (a terminal state, or "" for none). On a failure the events wait for
// the next write.
func (sh *shared) write(ctx context.Context, t *task, run *running, final, message string) (result, error) {
	return sh.writeMode(ctx, t, run, "run", final, message)
}

// writeMode is write in writeScript's mode (run, park), extra the
// arguments after the parts.
func (sh *shared) writeMode(ctx context.Context, t *task, run *running, mode, final, message string, extra ...any) (result, error) {
	run.mu.Lock()
	events, parts, size, dropped, st, msg := run.events, run.parts, run.size, run.dropped, run.state, run.message
	run.events, run.parts, run.bytes, run.state = nil, nil, 0, ""
	run.mu.Unlock()
	if final != "" {
		st, msg = final, message
	}
	var batch []byte
	if len(events) > 0 {
		batch, _ = json.Marshal(events)
	}
	d := "0"
	if dropped {
		d = "1"
	}
	args := []any{size, d, len(parts), string(batch), len(events)}
	for _, p := range parts {
		args = append(args, p)
	}
	args = append(args, extra...)
	res, err := sh.run(ctx, t.id, t.owner, mode, st, msg, args...)
	if err != nil {
		run.mu.Lock() // put them back before whatever came since
		run.events = append(events, run.events...)
		run.parts = append(parts, run.parts...)
		run.bytes = 0
		for _, e := range run.events {
			run.bytes += e.size()
		}
		if run.state == "" {
			run.state, run.message = st, msg
		}
		run.mu.Unlock()
	}
	return res, err
}

// run runs writeScript in mode on task id.
func (sh *shared) run(ctx context.Context, id string, owner core.Owner, mode, st, msg string, rest ...any) (result, error) {
	oh := ownerHex(owner)
	keys := []string{sh.key("task", id), sh.key("parts", id), sh.key("owner", oh), sh.key("bytes"), sh.key("ended"), sh.key("costs")}
	if len(rest) == 0 {
		rest = []any{0, "0", 0, "", 0}
	}
	args := append([]any{mode, time.Now().UnixMilli(), int64(sh.r.TaskTTL / time.Second), sh.limit, sh.key("") + "", id, oh, st, msg}, rest...)
	v, err := writeScript.Run(ctx, sh.r.Client(), keys, args...).StringSlice()
	if err != nil {
		return result{}, sh.r.Fail(mode+" task "+id, err)
	}
	if len(v) != 5 {
		return result{}, sh.r.Fail(mode+" task "+id, fmt.Errorf("the script answered %d values, not 5", len(v)))
	}
	ms, _ := strconv.ParseInt(v[2], 10, 64)
	seq, _ := strconv.ParseInt(v[3], 10, 64)
	return result{state: v[0], message: v[1], updated: time.UnixMilli(ms), seq: seq, ended: v[4] == "1"}, nil
}

// finish ends t, which this replica runs, in Redis as state (its
// flusher stopped and its events written first, in the same round trip),
// unless it ended there already: it returns the state t ended as. A
// failing write leaves the state asked for (the caller still gets its
// answer; in Redis the task ends when its lease lapses). Once per task.
func (sh *shared) finish(t *task, run *running, st, msg string) (string, string) {
	run.endOnce.Do(func() {
		close(run.stop)
		<-run.done
		sh.untrack(t)
		run.endState, run.endMsg = st, msg
		res, err := sh.write(run.ctx, t, run, st, msg)
		if err == nil && res.state != "" {
			run.endState, run.endMsg = res.state, res.message
		}
	})
	return run.endState, run.endMsg
}

// forget deletes t, a message refused before the agent was called.
func (sh *shared) forget(t *task, run *running) {
	run.endOnce.Do(func() {
		close(run.stop)
		<-run.done
		sh.untrack(t)
	})
	sh.run(run.ctx, t.id, t.owner, "forget", "", "")
}

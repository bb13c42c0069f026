package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// A task waiting for an answer, with a shared store (shared.go): the
// replica its agent asked on parks it in Redis (its question, history
// and deadline written with its state) and forgets its own copy, so
// every replica reads it there; the replica a message answering it lands
// on claims it (writeScript "claim": once, whichever replica asks first)
// and runs the call, the task its own from then on.

// wireMsg is a message of a task's history as its hash keeps it.
type wireMsg struct {
	ID    string      `json:"i"`
	Agent bool        `json:"a,omitempty"`
	Parts []*wirePart `json:"p"`
}

// historyJSON is t's history as its hash keeps it.
func historyJSON(h []historyMsg) string {
	out := make([]wireMsg, len(h))
	for i, m := range h {
		out[i] = wireMsg{ID: m.id, Agent: m.agent}
		for _, p := range m.parts {
			out[i].Parts = append(out[i].Parts, toWire(p))
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// readHistory is the history a hash keeps.
func readHistory(s string) []historyMsg {
	var in []wireMsg
	if s == "" || json.Unmarshal([]byte(s), &in) != nil {
		return nil
	}
	out := make([]historyMsg, len(in))
	for i, m := range in {
		out[i] = historyMsg{id: m.ID, agent: m.Agent}
		for _, p := range m.Parts {
			out[i].parts = append(out[i].parts, p.part())
		}
	}
	return out
}

// readQuestion is the question a hash keeps (its record); nil for none.
func readQuestion(s string) *ask.Question {
	if s == "" {
		return nil
	}
	q, err := ask.Parse([]byte(s), 0) // capped when it was asked
	if err != nil {
		return nil
	}
	return q
}

// park writes t, which this replica runs and whose agent asked q, as
// waiting in Redis: its events and state, q, its history and its
// deadline (now plus wait), in one round trip; its flusher and lease
// renewal stop. A write that fails ends the task failed, as the store's
// failure says. It returns the state the task is in: waiting, or ended
// (canceled meanwhile by another replica, failed).
func (sh *shared) park(t *task, run *running, q *ask.Question, history []historyMsg, wait time.Duration) (string, string) {
	st, msg := stateOf(q), q.Message
	run.endOnce.Do(func() {
		close(run.stop)
		<-run.done
		sh.untrack(t)
		deadline := time.Now().Add(wait).UnixMilli()
		res, err := sh.writeMode(run.ctx, t, run, "park", "", "", string(q.Record()), historyJSON(history), deadline)
		switch {
		case err != nil:
			sh.write(run.ctx, t, run, stateFailed, parkFailed)
			st, msg = stateFailed, parkFailed
		case terminal(res.state):
			st, msg = res.state, res.message
		}
	})
	return st, msg
}

// parkFailed is the status message of a task whose question could not be
// kept in Redis.
const parkFailed = "the task's question could not be kept in the state store (state.store: redis): send a new message"

// expire fails task id, waiting, in Redis with message: a replica's
// waiting task past its wait, or the oldest past limits.questions.waiting.
// It reports whether the task was still waiting, so expired here (not
// answered first on another replica, nor canceled).
func (sh *shared) expire(id string, owner core.Owner, message string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := sh.run(ctx, id, owner, "expire", stateFailed, message)
	return err == nil && res.ended
}

// lapsed is the message of a task whose lease lapsed: for one waiting,
// its deadline past.
func (sh *shared) lapsed(state string) string {
	if waiting(state) {
		return fmt.Sprintf(expiredMsg, sh.local.questions.Wait)
	}
	return sh.leaseMsg
}

// resume takes m, a message of owner's naming a task this replica does
// not hold, as the answer to its question: the task, read from Redis,
// is claimed, held and run here from then on (its flusher, its lease),
// and reply is what its agent is called with. A task not waiting is
// refused as the store refuses it; one claimed first by another answer
// too.
func (sh *shared) resume(ctx context.Context, m message, owner core.Owner) (*task, *ask.Reply, *rpcError, error) {
	t, _, ok, err := sh.load(ctx, owner, m.taskID, true)
	if err != nil {
		return nil, nil, nil, err
	}
	if !ok {
		return nil, nil, &rpcError{codeTaskNotFound, fmt.Sprintf("task %q not found", core.Clip(m.taskID))}, nil
	}
	if rerr := refuseFollowUp(&t, m); rerr != nil {
		return nil, nil, rerr, nil
	}
	s := sh.local
	r, err := replyOf(m, t.question)
	if err == nil {
		err = t.question.Check(r, s.questions.Bytes)
	}
	if err != nil {
		return nil, nil, &rpcError{codeInvalidParams, fmt.Sprintf("task %q: %v; it still waits for an answer", t.id, err)}, nil
	}
	if err := sh.listen(ctx); err != nil {
		return nil, nil, nil, err
	}
	history := append(t.history, historyMsg{id: core.NewID(), parts: m.parts()})
	res, err := sh.run(ctx, t.id, owner, "claim", "", "", sh.r.Replica, time.Now().Add(sh.r.Lease).UnixMilli(), historyJSON(history))
	if err != nil {
		return nil, nil, nil, err
	}
	if !res.ended { // not waiting by then: answered first elsewhere, expired, canceled
		if res.state == "" {
			return nil, nil, &rpcError{codeTaskNotFound, fmt.Sprintf("task %q not found", core.Clip(m.taskID))}, nil
		}
		t.state, t.message, t.question = res.state, res.message, nil
		return nil, nil, refuseFollowUp(&t, m), nil
	}
	nt := &task{id: t.id, contextID: t.contextID, owner: owner, state: stateWorking, updated: res.updated,
		parts: t.parts, text: t.text, size: t.size, dropped: t.dropped, history: history, added: len(t.parts)}
	if t.text.Len() > 0 {
		nt.added++
	}
	run := &running{ctx: context.WithoutCancel(ctx), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), size: t.size, dropped: t.dropped}
	s.mu.Lock()
	for _, w := range s.waiting { // asked here: it waits no more
		if w.id == t.id {
			s.unwait(w)
			break
		}
	}
	nt.run = run
	s.tasks[nt.id] = nt
	s.order = append(s.order, nt)
	s.recount(nt)
	s.mu.Unlock()
	go sh.flusher(nt, run)
	sh.track(nt)
	return nt, &r, nil, nil
}

// parkedOf reads a hash's question and history into t.
func parkedOf(t *task, h map[string]string) {
	t.history = readHistory(h["history"])
	if waiting(t.state) {
		t.question = readQuestion(h["question"])
	}
}

package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// When the agent asks (docs/a2a.md, "When the agent asks"): a record of
// the agent's that is a question (package ask) ends its turn; its task
// waits, input-required (auth-required for a question of kind auth), its
// status message the question, for a message of its caller's naming it.
// That message is the answer: checked against the question's schema, it
// resumes the task with a call of the method whose input carries it as
// reply (ask.WithReply). A task waits limits.questions.wait at most, and
// one replica keeps limits.questions.waiting tasks waiting at most: past
// either, a task fails as expired, and its agent is told: the method is
// called once more, in the background, with a cancel whose reason is
// expired (ask.Expiry), its answer dropped.

// expiredMsg is the status message of a task that waited too long for its
// answer; evictedMsg of one failed to make room for a newer question.
const (
	expiredMsg = "the task waited longer than limits.questions.wait (%s) for an answer to its question: the agent was told it expired; send a new message"
	evictedMsg = "the task was the oldest of more than limits.questions.waiting (%d) tasks waiting for an answer on this agent, and expired: the agent was told; send a new message"
)

// teller is what tells a task's agent that its question expired: the
// Agent, and the call that asked, its input the task's ids alone.
type teller struct {
	agent core.Agent
	call  core.Call
	reply ask.Reply
}

// teller is the teller of the exchange's question; nil without an Agent.
func (ex *exchange) teller() *teller {
	if ex.agent == nil || ex.asked == nil {
		return nil
	}
	c := ex.call
	c.Header = c.Header.Clone()
	c.Input = core.Input{Raw: expiryInput(ex.task)}
	return &teller{agent: ex.agent, call: c, reply: ask.Expiry(ex.asked)}
}

// expiryInput is the one input shape with t's ids and no message: what
// the agent is called with, its reply added, when t's question expires.
func expiryInput(t *task) json.RawMessage {
	b := append([]byte(`{"message":"","messages":[],"ids":{"context_id":`), appendString(nil, t.owner.Scope(t.contextID))...)
	b = append(append(b, `,"task_id":`...), appendString(nil, t.id)...)
	return append(b, "}}"...)
}

// tell tells tl's agent its question expired, in the background; Close
// waits for it. A nil tl tells nothing.
func (s *store) tell(tl *teller) {
	if tl == nil {
		return
	}
	s.telling.Add(1)
	go func() {
		defer s.telling.Done()
		ask.Tell(s.quit, tl.agent, tl.call, tl.reply)
	}()
}

// historyMsg is one message of a task's history: the caller's messages
// and the agent's questions, kept once a task has asked.
type historyMsg struct {
	id    string
	agent bool
	parts []part
}

// questionParts are the parts of q's status message: its message, for a
// person, and the whole question (kind, message, schema, url, id), for a
// client that renders a form.
func questionParts(q *ask.Question) []part {
	data, _ := marshal(q)
	return []part{{Text: q.Message}, {Data: data}}
}

// stateOf is the state of a task waiting for the answer to q.
func stateOf(q *ask.Question) string {
	if q.Kind == ask.KindAuth {
		return stateAuthRequired
	}
	return stateInputRequired
}

// question reads rec, a record for which ask.Is holds, as the agent's
// question, capped at limits.questions.bytes.
func (s *store) question(rec []byte) (*ask.Question, error) {
	return ask.Parse(rec, s.questions.Bytes)
}

// ask ends t's turn waiting for the answer to q: its state
// input-required (or auth-required), q its status message, said (the
// caller's message of the turn) and q its history, its clock running
// (limits.questions.wait). Past limits.questions.waiting tasks waiting,
// the oldest expires. It reports false for a task that ended already
// (canceled meanwhile).
func (s *store) ask(t *task, q *ask.Question, said []part, tl *teller) bool {
	s.mu.Lock()
	if settled(t.state) {
		s.mu.Unlock()
		return false
	}
	t.teller = tl
	if len(t.history) == 0 && len(said) > 0 {
		t.history = append(t.history, historyMsg{id: core.NewID(), parts: said})
	}
	t.history = append(t.history, historyMsg{id: core.NewID(), agent: true, parts: questionParts(q)})
	t.question = q
	s.mu.Unlock()
	if !s.setState(t, stateOf(q), q.Message) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !waiting(t.state) || t.question != q {
		return true
	}
	if run := t.run; run != nil {
		// Kept in Redis for every replica, and there only: not here.
		history := append([]historyMsg(nil), t.history...)
		s.mu.Unlock()
		st, msg := s.shared.park(t, run, q, history, s.questions.Wait)
		s.mu.Lock()
		t.run, t.parked = nil, true
		for i, o := range s.order {
			if o == t {
				s.forget(i)
				break
			}
		}
		if !waiting(st) {
			t.state, t.message, t.question = st, msg, nil
			return true
		}
	}
	turn := t.turn
	wait := s.questions.Wait
	t.expiry = time.AfterFunc(wait, func() { s.expire(t, turn, fmt.Sprintf(expiredMsg, wait)) })
	s.waiting = append(s.waiting, t)
	if max := s.questions.Waiting; max > 0 && len(s.waiting) > max {
		s.expireLocked(s.waiting[0], fmt.Sprintf(evictedMsg, max))
	}
	return true
}

// expire fails t, waiting still in turn, with message.
func (s *store) expire(t *task, turn int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.turn == turn && waiting(t.state) {
		s.expireLocked(t, message)
	}
}

// expireLocked fails t, which waits, with message, as cancelLocal ends a
// task: the store is locked.
func (s *store) expireLocked(t *task, message string) {
	s.unwait(t)
	tl := t.teller
	t.teller = nil
	if t.parked { // Redis holds it, whichever replica took it since
		s.telling.Add(1)
		go func() {
			defer s.telling.Done()
			if s.shared.expire(t.id, t.owner, message) { // still waiting: it expired here
				s.tell(tl)
			}
		}()
		return
	}
	s.tell(tl)
	t.state, t.message, t.updated, t.question = stateFailed, message, time.Now(), nil
	if s.tasks[t.id] == t {
		s.recount(t)
	}
	s.publishStatus(t)
	if run := t.run; run != nil {
		go s.shared.finish(t, run, stateFailed, message)
	}
}

// stopClocks stops the clocks of the tasks waiting: the door closes.
func (s *store) stopClocks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.waiting {
		if t.expiry != nil {
			t.expiry.Stop()
		}
	}
}

// unwait takes t off the waiting tasks and stops its clock. The store is
// locked.
func (s *store) unwait(t *task) {
	if t.expiry != nil {
		t.expiry.Stop()
		t.expiry = nil
	}
	for i, o := range s.waiting {
		if o == t {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			break
		}
	}
}

// resume takes m, a message of t's owner naming t, as the answer to t's
// question, t waiting: the reply the agent is called with, t working
// again in a new turn, m in its history. A reply the question does not
// take is invalid params saying why, and t waits on. The store is locked.
func (s *store) resume(t *task, m message) (*ask.Reply, *rpcError) {
	q := t.question
	r, err := replyOf(m, q)
	if err == nil {
		err = q.Check(r, s.questions.Bytes)
	}
	if err != nil {
		return nil, &rpcError{codeInvalidParams, fmt.Sprintf("task %q: %v; it still waits for an answer", t.id, err)}
	}
	s.unwait(t)
	t.turn++
	t.history = append(t.history, historyMsg{id: core.NewID(), parts: m.parts()})
	t.question = nil
	t.state, t.message, t.updated = stateWorking, "", time.Now()
	if t.run != nil {
		t.run.status(stateWorking, "")
	}
	s.recount(t)
	s.publishStatus(t)
	return &r, nil
}

// replyOf is the answer m gives to q. A data part decides it: the
// object {"action": "decline"} (or "cancel") declines (cancels); any
// other object is the content, accepted. A message of text alone
// accepts, its content {"text": <the text>} (none for a url question:
// the person says they are done). More than one data part, or one that
// is no object, is no answer.
func replyOf(m message, q *ask.Question) (ask.Reply, error) {
	r := ask.Reply{ID: q.ID, Action: ask.Accept}
	switch {
	case len(m.data) > 1:
		return r, errors.New("an answer carries one data part, the answer's content")
	case len(m.data) == 1:
		d := m.data[0]
		if d[0] != '{' {
			return r, errors.New("the answer's data part is not a JSON object")
		}
		if action, ok := onlyAction(d); ok {
			r.Action = action
			return r, nil
		}
		r.Content = d
	case q.Kind != ask.KindURL:
		r.Content = append(append([]byte(`{"text":`), m.text()...), '}')
	}
	return r, nil
}

// onlyAction reads d as {"action": "<accept|decline|cancel>"}, its one
// member.
func onlyAction(d json.RawMessage) (string, bool) {
	var action string
	members := 0
	rawjson.Members(d, func(key, value []byte) bool {
		members++
		if rawjson.KeyIs(key, "action") {
			json.Unmarshal(value, &action)
		}
		return true
	})
	if members != 1 || (action != ask.Decline && action != ask.Cancel && action != ask.Accept) {
		return "", false
	}
	return action, true
}

// leave fails t, whose call in turn ended because its caller left,
// unless it settled meanwhile (ended, or asked and waits) or went on in a
// later turn.
func (s *store) leave(t *task, turn int) {
	s.mu.Lock()
	gone := t.turn != turn || settled(t.state)
	s.mu.Unlock()
	if !gone {
		s.setState(t, stateFailed, callerLeft)
	}
}

// historyCost is what the store counts for t's history.
func (t *task) historyCost() int64 {
	var n int64
	for _, h := range t.history {
		for _, p := range h.parts {
			n += int64(len(p.Text) + len(p.Data) + 64)
		}
	}
	return n
}

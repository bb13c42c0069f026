package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/ask"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// The 2026-07-28 revision is stateless: a call whose agent asks is
// answered with an input-required result (SEP-2322), whose inputRequests
// hold the question as one elicitation/create (its key the question's id,
// else "input") and whose requestState carries what the door needs to
// take the answer: the question (its schema), the tool, a digest of its
// arguments, the caller (core.Owner) and when the state expires
// (limits.questions.wait), signed with the door's key (HMAC-SHA256). The
// client calls the tool again with the same arguments, inputResponses and
// that requestState: the door checks the state (an altered, expired or
// another caller's one is invalid params), the answer against the schema,
// and calls the method with the arguments plus reply. Nothing is kept in
// memory between the two calls. The key is the process's own; with the
// Redis store it is one every replica reads from the store (sharedKey),
// so the call again may reach any replica.

// newStateKey is a random key for one process's requestStates.
func newStateKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// requestState is what a requestState carries, signed.
type requestState struct {
	Tool     string          `json:"tool"`
	Args     string          `json:"args"`  // sha256 of the arguments, compact, hex
	Owner    string          `json:"owner"` // core.Owner, hex
	Expires  int64           `json:"exp"`   // unix seconds
	Question json.RawMessage `json:"q"`     // the question record
}

// argsDigest is the digest of a call's arguments, compacted.
func argsDigest(args json.RawMessage) string {
	c, ok := rawjson.AppendCompact(nil, args)
	if !ok {
		c = args
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// questionKey is the key of q's input request.
func questionKey(q *ask.Question) string {
	if q.ID != "" {
		return q.ID
	}
	return "input"
}

// sign is the requestState of st: its JSON base64url, a dot, and its
// HMAC-SHA256 base64url.
func (d *Door) sign(st requestState) string {
	b, _ := json.Marshal(st)
	payload := base64.RawURLEncoding.EncodeToString(b)
	mac := hmac.New(sha256.New, *d.stateKey.Load())
	mac.Write([]byte(payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// verify reads a requestState this door signed; false for any other.
func (d *Door) verify(s string) (requestState, bool) {
	var st requestState
	payload, sig, ok := strings.Cut(s, ".")
	if !ok {
		return st, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return st, false
	}
	mac := hmac.New(sha256.New, *d.stateKey.Load())
	mac.Write([]byte(payload))
	if !hmac.Equal(got, mac.Sum(nil)) {
		return st, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &st) != nil {
		return st, false
	}
	return st, true
}

// inputRequired is the input-required result of ex's call whose agent
// asked q: its elicitation/create input request (form, or url when q is a
// url question), its signed requestState.
func (d *Door) inputRequired(ex *exchange, q *ask.Question) []byte {
	m := modeForm
	if q.Kind == ask.KindURL || q.Kind == ask.KindAuth && q.URL != "" && q.Schema == nil {
		m = modeURL
	}
	d.sharedKey(ex.request)
	st := requestState{Tool: ex.call.Name, Args: argsDigest(ex.args), Owner: hex.EncodeToString(ex.owner[:]),
		Expires: time.Now().Add(d.questions.Wait).Unix(), Question: q.Record()}
	b := []byte(`{"resultType":"input_required","inputRequests":{`)
	b = appendString(b, questionKey(q))
	b = append(b, `:{"method":"elicitation/create","params":`...)
	b = append(b, elicitParams(q, m)...)
	b = append(b, `}},"requestState":`...)
	b = appendString(b, d.sign(st))
	return append(b, '}')
}

// answers reads a 2026-07-28 tools/call's answer to the question of its
// requestState: the input the method is called with (the arguments plus
// reply), or the door's own answer: invalid params for a requestState it
// did not sign as it is (altered, expired, another tool's, arguments or
// caller's), the input-required result again when inputResponses lack the
// question's key, an isError result when the answer does not meet the
// question's schema. A call with no requestState is the tool's first:
// any inputResponses are not the door's to vouch for, and are left out.
func (d *Door) answers(r *http.Request, req request, p params, t *tool, input json.RawMessage, ex *exchange) (json.RawMessage, *core.Answer) {
	ex.owner, ex.request = core.OwnerOfRequest(r), r.Context()
	if !p.requestStateSet {
		return input, nil
	}
	d.sharedKey(r.Context())
	invalid := func(msg string) (json.RawMessage, *core.Answer) {
		return nil, reply(req.id, http.StatusOK, nil, &rpcError{code: codeInvalidParams, message: "Invalid params: requestState " + msg})
	}
	st, ok := d.verify(p.requestState)
	switch {
	case !ok:
		return invalid("is not one this server issued, or was altered: call the tool again without it")
	case time.Now().Unix() > st.Expires:
		return invalid("has expired (limits.questions.wait): call the tool again without it")
	case st.Tool != t.name:
		return invalid("was issued for another tool")
	case st.Args != argsDigest(input):
		return invalid("was issued for other arguments: call again with the same arguments")
	case st.Owner != hex.EncodeToString(ex.owner[:]):
		return invalid("was issued to another caller")
	}
	q, err := ask.Parse(st.Question, 0)
	if err != nil {
		return invalid("holds no question")
	}
	ex.call.Name = t.name
	var answer json.RawMessage
	if p.inputResponses != nil {
		rawjson.Members(p.inputResponses, func(key, value []byte) bool {
			if rawjson.KeyIs(key, questionKey(q)) {
				answer = value
			}
			return true
		})
	}
	if answer == nil { // not answered: asked again
		return nil, reply(req.id, http.StatusOK, d.inputRequired(ex, q), nil)
	}
	var rp ask.Reply
	if answer[0] != '{' || json.Unmarshal(answer, &rp) != nil || rp.Action == "" {
		return nil, reply(req.id, http.StatusOK, nil, &rpcError{code: codeInvalidParams,
			message: "Invalid params: inputResponses[" + questionKey(q) + "] must be an elicitation result {\"action\": \"accept|decline|cancel\", \"content\": {…}}"})
	}
	rp.ID, rp.Reason = q.ID, "" // a reason is the sidecar's to give
	if rp.Action != ask.Accept {
		rp.Content = nil
	}
	if err := q.Check(rp, d.questions.Bytes); err != nil {
		return nil, reply(req.id, http.StatusOK, ex.result(err.Error()+": the agent was not called", nil, true), nil)
	}
	return ask.WithReply(input, rp), nil
}

// sharedKey makes the door's state key every replica's, with the Redis
// store: the key at mcp:statekey, set by the first replica to need it
// (SET NX), read once per process. Without the store, or once read, it
// does nothing. While the store fails it the process's own key signs
// (a state then holds only on this replica), and it is tried again at
// most every keyRetry: a store that does not answer slows no call more
// than that often.
func (d *Door) sharedKey(ctx context.Context) {
	if d.shared == nil {
		return
	}
	d.keyMu.Lock()
	defer d.keyMu.Unlock()
	if d.keyShared || time.Since(d.keyTried) < keyRetry {
		return
	}
	d.keyTried = time.Now()
	c, key := d.shared.store.Client(), d.shared.store.Key("mcp", "statekey")
	if c.SetNX(ctx, key, newStateKey(), 0).Err() != nil {
		return
	}
	if k, err := c.Get(ctx, key).Bytes(); err == nil && len(k) >= 32 {
		d.stateKey.Store(&k)
		d.keyShared = true
	}
}

// keyRetry is how often a door whose store failed to give it the shared
// state key tries again.
const keyRetry = 10 * time.Second

package a2a

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Reading a task from Redis (shared.go): any replica's get, subscribe
// and cancel of a task another replica runs or ran.

// load reads task id in one round trip (its hash and its parts): ok false
// for no such task of owner's. A task not terminal whose lease is past
// ends failed (writeScript "lease") and is answered so.
func (sh *shared) load(ctx context.Context, owner core.Owner, id string, artifact bool) (t task, seq int64, ok bool, err error) {
	var hc *redis.MapStringStringCmd
	var lc *redis.StringSliceCmd
	_, err = sh.r.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		hc = p.HGetAll(ctx, sh.key("task", id))
		if artifact {
			lc = p.LRange(ctx, sh.key("parts", id), 0, -1)
		}
		return nil
	})
	if err != nil {
		return task{}, 0, false, sh.r.Fail("reading task "+id, err)
	}
	h := hc.Val()
	if len(h) == 0 || h["owner"] != ownerHex(owner) {
		return task{}, 0, false, nil
	}
	t, seq = taskOf(id, owner, h)
	parkedOf(&t, h)
	if lc != nil {
		for _, raw := range lc.Val() {
			var w wirePart
			if json.Unmarshal([]byte(raw), &w) == nil {
				t.addLoaded(w.part())
			}
		}
	}
	if lease, _ := strconv.ParseInt(h["lease"], 10, 64); !terminal(t.state) && time.Now().UnixMilli() > lease {
		res, err := sh.run(ctx, id, owner, "lease", stateFailed, sh.lapsed(t.state))
		if err != nil {
			return task{}, 0, false, err
		}
		if res.state != "" {
			t.state, t.message, t.updated, seq = res.state, res.message, res.updated, res.seq
		}
	}
	return t, seq, true, nil
}

// taskOf is the task a hash holds (no artifact), and its seq.
func taskOf(id string, owner core.Owner, h map[string]string) (task, int64) {
	ms, _ := strconv.ParseInt(h["updated"], 10, 64)
	seq, _ := strconv.ParseInt(h["seq"], 10, 64)
	size, _ := strconv.ParseInt(h["size"], 10, 64)
	return task{id: id, contextID: h["context"], owner: owner, state: h["state"], message: h["message"],
		updated: time.UnixMilli(ms), size: size, dropped: h["dropped"] == "1"}, seq
}

// addLoaded appends a part read from Redis: text appends to the text
// before it, as addPart keeps it.
func (t *task) addLoaded(p part) {
	if p.Data == nil && p.Metadata == nil && p.file == nil {
		t.text.AppendString(p.Text)
		return
	}
	t.flushText()
	t.parts = append(t.parts, p)
}

// cancel cancels owner's task id in Redis, from any replica: canceled
// unless it ended (then ok and !canceled, its state in t), the replica
// running it told. ok false for no such task of owner's.
func (sh *shared) cancel(ctx context.Context, owner core.Owner, id string) (res result, err error) {
	return sh.run(ctx, id, owner, "cancel", stateCanceled, "")
}

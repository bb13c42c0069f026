package a2a

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// The leases of the tasks this replica runs (shared.go), renewed while
// they run, and their end when the process stops.

// track renews t's lease while it runs: one goroutine renews every
// running task's, every Lease/3, in one round trip; it stops when none
// runs.
func (sh *shared) track(t *task) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.running[t.id] = t
	if !sh.renewing && !sh.closed {
		sh.renewing = true
		sh.wg.Add(1)
		go sh.renew()
	}
}

func (sh *shared) untrack(t *task) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	delete(sh.running, t.id)
}

// renew is the lease renewal's goroutine.
func (sh *shared) renew() {
	defer sh.wg.Done()
	tick := time.NewTicker(sh.r.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-sh.done:
			return
		case <-tick.C:
		}
		sh.mu.Lock()
		ids := make([]string, 0, len(sh.running))
		for id := range sh.running {
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			sh.renewing = false
			sh.mu.Unlock()
			return
		}
		sh.mu.Unlock()
		ctx := context.Background()
		lease := time.Now().Add(sh.r.Lease).UnixMilli()
		states := make([]*redis.SliceCmd, len(ids))
		_, err := sh.r.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				p.HSet(ctx, sh.key("task", id), "lease", lease)
				p.Expire(ctx, sh.key("task", id), sh.r.TaskTTL)
				states[i] = p.HMGet(ctx, sh.key("task", id), "state", "message")
			}
			return nil
		})
		if err != nil {
			continue // the next renewal tries again
		}
		// A task that ended meanwhile (canceled on a replica whose
		// message to this one was lost, failed when its lease lapsed
		// while the store was away) ends here too: its call stops.
		for i, id := range ids {
			v := states[i].Val()
			if st, _ := v[0].(string); terminal(st) {
				msg, _ := v[1].(string)
				sh.local.cancelLocal(id, st, msg)
			}
		}
	}
}

// close stops renewing leases (the process stops: another replica then
// sees its tasks failed once their leases lapse) and unsubscribes the
// cancel channel.
func (sh *shared) close() {
	sh.mu.Lock()
	if sh.closed {
		sh.mu.Unlock()
		return
	}
	sh.closed = true
	close(sh.done)
	unsub := sh.cancels
	sh.mu.Unlock()
	sh.wg.Wait()
	if unsub != nil {
		unsub()
	}
}

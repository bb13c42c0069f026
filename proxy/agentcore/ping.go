package agentcore

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// pinger answers GET /ping. time_of_last_update is when the status last
// changed, as the runtime needs it: a stamp that moved on every poll
// would keep an idle session alive until its maximum lifetime, and a
// session whose stamp never comes is reaped while busy.
type pinger struct {
	inFlight func() int64
	now      func() time.Time

	mu    sync.Mutex
	busy  bool
	stamp int64 // unix seconds of the last change, 0 before the first ping
}

func newPinger(inFlight func() int64) *pinger {
	return &pinger{inFlight: inFlight, now: time.Now}
}

// status is the status now and when it last changed. The count is read
// under the lock, so the pings commit in the order they read: read
// before it, a ping that saw a call could commit after one that saw the
// call end, turning the status back to busy and moving the stamp twice.
func (p *pinger) status() (busy bool, stamp int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	busy = p.inFlight() > 0
	if busy != p.busy || p.stamp == 0 { // 0: the first ping
		p.busy, p.stamp = busy, p.now().Unix()
	}
	return busy, p.stamp
}

func (p *pinger) serve(w http.ResponseWriter, _ *http.Request) {
	busy, stamp := p.status()
	status := "Healthy"
	if busy {
		status = "HealthyBusy"
	}
	body := `{"status":"` + status + `","time_of_last_update":` + strconv.FormatInt(stamp, 10) + "}"
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(body))
}

package agentcore

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPingOrder: a ping's reading of the calls in flight and its commit of
// status and stamp are one step, so two pings cannot commit out of order.
// Ping A reads one call in flight; the call ends and ping B reads none;
// B must not commit before A, or A's older reading would turn the status
// back to busy after the calls ended and move the stamp twice for no
// change.
func TestPingOrder(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var reads atomic.Int32
	p := newPinger(func() int64 {
		if reads.Add(1) == 1 {
			close(entered)
			<-release
			return 1
		}
		return 0
	})
	clock := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	p.now = func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Second); return clock }

	type answer struct {
		busy  bool
		stamp int64
	}
	a := make(chan answer, 1)
	go func() { busy, stamp := p.status(); a <- answer{busy, stamp} }()
	<-entered // A has read one call in flight and not committed it
	if p.mu.TryLock() {
		p.mu.Unlock()
		bBusy, bStamp := p.status() // nothing holds B back: it commits first
		close(release)
		got := <-a
		t.Fatalf("ping B (no call in flight) committed %v %d while ping A (one call) was between its reading and its commit; "+
			"A then committed %v %d: the older reading won", bBusy, bStamp, got.busy, got.stamp)
	}
	close(release)
	got := <-a
	b1, s1 := p.status()
	b2, s2 := p.status()
	if !got.busy || b1 || b2 || s1 <= got.stamp || s2 != s1 {
		t.Errorf("pings A, B, C = %v %d, %v %d, %v %d; want busy, then idle stamped once after it", got.busy, got.stamp, b1, s1, b2, s2)
	}
}

// TestPingConcurrent: pings from many goroutines while calls start and end
// (run with -race): a stamp is never given with both statuses, and once
// the calls have ended every ping says Healthy with one stamp.
func TestPingConcurrent(t *testing.T) {
	var inFlight atomic.Int64
	p := newPinger(inFlight.Load)
	var clock atomic.Int64
	p.now = func() time.Time { return time.Unix(clock.Add(1), 0) }
	var mu sync.Mutex
	stamps := map[bool]map[int64]bool{true: {}, false: {}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if g%2 == 0 {
					inFlight.Add(int64(1 - 2*(i%2))) // a call starts, then ends
				}
				busy, stamp := p.status()
				mu.Lock()
				stamps[busy][stamp] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b1, s1 := p.status()
	b2, s2 := p.status()
	if b1 || b2 || s1 != s2 {
		t.Errorf("after the calls: %v %d, %v %d; want Healthy twice with one stamp", b1, s1, b2, s2)
	}
	for stamp := range stamps[true] {
		if stamps[false][stamp] {
			t.Errorf("stamp %d was given with both statuses", stamp)
		}
	}
}

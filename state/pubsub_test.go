package state

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/internal/redistest"
)

// collector gathers a handler's messages.
type collector struct {
	mu   sync.Mutex
	got  []string
	lost int
}

func (c *collector) handle(payload string, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lost {
		c.lost++
		return
	}
	c.got = append(c.got, payload)
}

func (c *collector) messages() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...), c.lost
}

// waitFor retries f until it holds, for 10 s at most.
func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !f(); {
		if time.Now().After(end) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPubSub: two channels and three handlers on one connection: a
// message published once Subscribe returned reaches every handler of its
// channel, in order; one unsubscribed gets no more; the connection is
// one client of the server's; a server stopped and restarted tells the
// handlers messages may be lost, and they receive again; Close ends the
// goroutine (goleak).
func TestPubSub(t *testing.T) {
	srv := redistest.Start(t)
	r, err := Open(redisState(), env("REDIS_URL", srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var a, b, c collector
	ps := r.PubSub()
	unA, err := ps.Subscribe(ctx, "ch1", a.handle)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Subscribe(ctx, "ch1", b.handle); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Subscribe(ctx, "ch2", c.handle); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"1", "2", "3"} {
		r.Client().Publish(ctx, "ch1", m)
	}
	r.Client().Publish(ctx, "ch2", "x")
	waitFor(t, "the messages", func() bool {
		ga, _ := a.messages()
		gb, _ := b.messages()
		gc, _ := c.messages()
		return len(ga) == 3 && len(gb) == 3 && len(gc) == 1
	})
	if ga, _ := a.messages(); ga[0] != "1" || ga[2] != "3" {
		t.Errorf("a got %v, want 1 2 3", ga)
	}
	if n := r.Client().PubSubNumSub(ctx, "ch1", "ch2").Val(); n["ch1"] != 1 || n["ch2"] != 1 {
		t.Errorf("server's subscribers = %v, want one connection on each channel", n)
	}
	unA()
	r.Client().Publish(ctx, "ch1", "4")
	waitFor(t, "b's fourth", func() bool { gb, _ := b.messages(); return len(gb) == 4 })
	if ga, _ := a.messages(); len(ga) != 3 {
		t.Errorf("a, unsubscribed, got %v", ga)
	}

	srv.Stop()
	waitFor(t, "the loss told", func() bool { _, lost := c.messages(); return lost > 0 })
	srv.Restart()
	waitFor(t, "resubscribed", func() bool {
		r.Client().Publish(ctx, "ch2", "y")
		gc, _ := c.messages()
		return len(gc) > 1 && gc[len(gc)-1] == "y"
	})
}

// TestPubSubDown: Subscribe with the server stopped fails within the
// bounds, an *Error; the server back, the next Subscribe succeeds (the
// failure left nothing held: under a deadline, so that a lock left held
// fails here, by name, not at the package's timeout).
func TestPubSubDown(t *testing.T) {
	srv := redistest.Start(t)
	r, err := Open(redisState(), env("REDIS_URL", srv.URL()))
	if err != nil {
		t.Fatal(err)
	}
	hung := false // Close would wait on the lock a hung Subscribe shows held
	defer func() {
		if !hung {
			r.Close()
		}
	}()
	srv.Stop()
	start := time.Now()
	_, err = r.PubSub().Subscribe(context.Background(), "ch", func(string, bool) {})
	if !IsError(err) {
		t.Errorf("Subscribe with the server stopped = %v, want an *Error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Subscribe with the server stopped took %s", took)
	}

	srv.Restart()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.PubSub().Subscribe(ctx, "ch", func(string, bool) {})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Subscribe with the server back = %v, want it subscribed", err)
		}
	case <-time.After(30 * time.Second): // past ctx and every bound: only a lock left held waits this long
		hung = true
		t.Fatal("Subscribe with the server back never returned: the failed Subscribe left its lock held")
	}
}

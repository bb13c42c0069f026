package state

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// PubSub is the process's one Redis Pub/Sub connection, shared by every
// channel the doors listen on (a task's events, this replica's cancels):
// one connection and one goroutine however many subscribers, not one
// each. The goroutine starts with the first Subscribe and ends at the
// Redis' Close. go-redis reconnects a connection that failed and
// subscribes its channels again; what was published meanwhile is lost,
// so every handler is told (lost) and decides what a gap means.
type PubSub struct {
	r *Redis

	mu       sync.Mutex
	ps       *redis.PubSub
	handlers map[string]map[*handler]struct{} // channel → its handlers
	ready    map[string]chan struct{}         // channel → closed once Redis confirmed it
	closed   bool
	done     chan struct{} // closed when the goroutine ended; nil: never started
}

// handler is one Subscribe's callback.
type handler struct {
	f func(payload string, lost bool)
}

// receiveWait is how long the goroutine waits for a message before it
// pings the connection: a server gone without closing it is found.
const receiveWait = 30 * time.Second

// PubSub is the process's shared Pub/Sub connection.
func (r *Redis) PubSub() *PubSub {
	r.psOnce.Do(func() {
		r.ps = &PubSub{r: r, handlers: map[string]map[*handler]struct{}{}, ready: map[string]chan struct{}{}}
	})
	return r.ps
}

// Subscribe calls f with each message published on channel, in order, on
// the shared goroutine (f must not block), until unsubscribe is called;
// f(“”, true) when messages may have been lost (the connection failed).
// It returns once Redis confirmed the subscription, so a message
// published after it returns is delivered; a store that does not confirm
// within ctx and the bounds is an *Error.
func (p *PubSub) Subscribe(ctx context.Context, channel string, f func(payload string, lost bool)) (unsubscribe func(), err error) {
	h := &handler{f: f}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, p.r.Fail("subscribing to "+channel, redis.ErrClosed)
	}
	if p.ps == nil {
		p.ps = p.r.client.Subscribe(context.WithoutCancel(ctx))
	}
	hs := p.handlers[channel]
	if hs == nil {
		hs = map[*handler]struct{}{}
		p.handlers[channel] = hs
		p.ready[channel] = make(chan struct{})
		if err := p.ps.Subscribe(ctx, channel); err != nil {
			delete(p.handlers, channel)
			delete(p.ready, channel)
			p.mu.Unlock()
			return nil, p.r.Fail("subscribing to "+channel, err)
		}
	}
	hs[h] = struct{}{}
	ready := p.ready[channel]
	if p.done == nil {
		p.done = make(chan struct{})
		go p.receive(p.ps, p.done)
	}
	p.mu.Unlock()
	unsubscribe = func() { p.unsubscribe(channel, h) }
	wait, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	select {
	case <-ready:
		return unsubscribe, nil
	case <-wait.Done():
		unsubscribe()
		return nil, p.r.Fail("subscribing to "+channel, fmt.Errorf("no confirmation: %w", context.Cause(wait)))
	}
}

// unsubscribe removes h from channel's handlers; the last one's leaving
// unsubscribes the connection from channel.
func (p *PubSub) unsubscribe(channel string, h *handler) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.handlers[channel]
	if _, ok := hs[h]; !ok {
		return
	}
	delete(hs, h)
	if len(hs) == 0 {
		delete(p.handlers, channel)
		delete(p.ready, channel)
		if !p.closed {
			// Written, not waited for: a failure leaves a channel nobody
			// listens on, which a reconnect forgets.
			ctx, cancel := context.WithTimeout(context.Background(), WriteTimeout)
			_ = p.ps.Unsubscribe(ctx, channel)
			cancel()
		}
	}
}

// receive is the shared goroutine: it hands each message to its
// channel's handlers, until Close.
func (p *PubSub) receive(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	ctx := context.Background()
	for {
		msg, err := ps.ReceiveTimeout(ctx, receiveWait)
		if p.isClosed() {
			return
		}
		if err != nil {
			var timeout interface{ Timeout() bool }
			if errors.As(err, &timeout) && timeout.Timeout() {
				_ = ps.Ping(ctx) // its pong, or its failure, comes next
				continue
			}
			p.lost()
			time.Sleep(100 * time.Millisecond) // go-redis reconnects at the next receive
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				p.mu.Lock()
				if ch := p.ready[m.Channel]; ch != nil {
					select {
					case <-ch:
					default:
						close(ch)
					}
				}
				p.mu.Unlock()
			}
		case *redis.Message:
			p.mu.Lock()
			for h := range p.handlers[m.Channel] {
				h.f(m.Payload, false)
			}
			p.mu.Unlock()
		}
	}
}

// lost tells every handler messages may have been lost.
func (p *PubSub) lost() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, hs := range p.handlers {
		for h := range hs {
			h.f("", true)
		}
	}
}

func (p *PubSub) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// close ends the connection and waits for the goroutine.
func (p *PubSub) close() {
	p.mu.Lock()
	p.closed = true
	ps, done := p.ps, p.done
	p.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
	if done != nil {
		<-done
	}
}

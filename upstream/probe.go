package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sidecar-dev/sidecar/config"
)

// startInterval is how often the agent is probed until it first answers:
// fast, so a call waiting for a booting agent goes as soon as it can.
const startInterval = 25 * time.Millisecond

// Prober watches the agent's readiness: with an HTTP GET on ready.path
// (any 2xx), or a plain connect when no path is set. Ready and Wait are
// safe for concurrent use while Run is running.
type Prober struct {
	ready   config.Ready
	network string
	address string
	url     string
	client  *http.Client

	// Check, if set, runs after every probe the agent passed, within
	// ready.timeout of its own: the agent is ready only if it returns nil.
	// Its error is the readiness detail (the ADK preset's "app not
	// found", a configuration problem the operator must see). Set it
	// before Run.
	Check func(ctx context.Context) error

	mu      sync.Mutex
	ok      bool
	detail  string
	public  string        // the detail, when the caller may see it (a Mismatch)
	changed chan struct{} // closed and replaced on every change
	kick    chan struct{} // MarkDown asks Run to probe fast again
	// gen counts MarkDown and Resume calls: a probe's result counts only
	// if neither came while it ran, so a probe that began before the
	// agent exited cannot mark it ready after. held is true from MarkDown
	// to Resume: no agent runs, so whatever answers is not it.
	gen  uint64
	held bool
}

// NewProber builds a prober for cfg's upstream; Run starts it.
func NewProber(cfg *config.Config, c *Client) *Prober {
	p := &Prober{
		ready:   cfg.Upstream.Ready,
		network: cfg.Upstream.Network,
		address: cfg.Upstream.Address,
		detail:  "agent not probed yet",
		changed: make(chan struct{}),
		kick:    make(chan struct{}, 1),
	}
	if p.ready.Path != "" {
		p.url = cfg.Upstream.BaseURL + p.ready.Path
		p.client = &http.Client{Transport: c.transport, Timeout: p.ready.Timeout}
	}
	return p
}

// Run probes until ctx ends: every startInterval while the agent is not
// ready, every ready.interval once it is.
func (p *Prober) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
			t.Stop()
		}
		gen, held := p.generation()
		if held {
			continue // until Resume kicks
		}
		err := p.probe(ctx)
		if err == nil && p.Check != nil {
			err = p.check(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		p.result(gen, err)
		if err != nil {
			t.Reset(startInterval)
		} else {
			t.Reset(p.ready.Interval)
		}
	}
}

func (p *Prober) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.ready.Timeout)
	defer cancel()
	if p.client == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, p.network, p.address)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if errors.Is(err, errServerClosedIdle) {
		// The agent closed the pooled connection as the probe went out
		// (its keep-alive ran out): that says nothing of its readiness.
		resp, err = p.client.Do(req)
	}
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s answered %d", p.ready.Path, resp.StatusCode)
	}
	if err != nil {
		// A reply cut short is a connection that failed, not an answer.
		return fmt.Errorf("GET %s: reading the reply: %w", p.ready.Path, unwrapURL(err))
	}
	return nil
}

func (p *Prober) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.ready.Timeout)
	defer cancel()
	return p.Check(ctx)
}

// generation is the generation a probe starting now belongs to, and
// whether MarkDown holds the agent down.
func (p *Prober) generation() (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen, p.held
}

// result records a probe's outcome, unless the agent went down (or came
// back) while it ran, or is down now.
func (p *Prober) result(gen uint64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held || gen != p.gen {
		return
	}
	p.setLocked(err)
}

// setLocked records a result with p.mu held.
func (p *Prober) setLocked(err error) {
	ok, detail, public := err == nil, "agent ready", ""
	if err != nil {
		detail = "agent not ready: " + unwrapURL(err).Error()
		if m := (*Mismatch)(nil); errors.As(err, &m) {
			public = detail
		}
	}
	if ok == p.ok && detail == p.detail {
		return
	}
	p.ok, p.detail, p.public = ok, detail, public
	close(p.changed)
	p.changed = make(chan struct{})
}

// Status reports whether the agent answered its last probe, and why not.
func (p *Prober) Status() (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ok, p.detail
}

// PublicDetail is why the agent is not ready when that may be said on the
// public port (the agent runs but is not what the config names), else "".
func (p *Prober) PublicDetail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.public
}

// Mismatch is a readiness failure the operator must see wherever they look,
// the public /healthz included: the agent answers, but it is not what the
// config names (the ADK preset's app missing from the api server). Its text
// is built from the config and the agent's answer, never from dial errors or
// paths.
type Mismatch struct{ Msg string }

func (e *Mismatch) Error() string { return e.Msg }

// Wait blocks until the agent is ready or ctx ends; it returns ctx's error
// in the second case.
func (p *Prober) Wait(ctx context.Context) error {
	for {
		p.mu.Lock()
		ok, ch := p.ok, p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// MarkDown records that the agent is down now (its process exited),
// without waiting for the next probe to find out. It stays down, whatever
// answers the probe, until Resume.
func (p *Prober) MarkDown(reason string) {
	p.mu.Lock()
	p.gen++
	p.held = true
	p.setLocked(errors.New(reason))
	p.mu.Unlock()
}

// Resume records that a new agent process runs: the probe's answers count
// again, and it probes at its fast start interval until the agent answers.
func (p *Prober) Resume() {
	p.mu.Lock()
	p.gen++
	p.held = false
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

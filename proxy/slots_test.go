package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestSlotFreeBeforeAnswer: a caller that has its whole answer never
// finds its call still holding a concurrency slot, and a call handed a
// freed slot stops counting as waiting at once. So concurrency + queue
// callers, each sending its next call as soon as it has read the last
// answer whole, are never answered 503, however their calls interleave:
// at most concurrency + queue of their calls ever hold or wait for a
// slot. Each call goes on a new connection (as a client with more callers
// than it keeps idle connections sends them), so the next call can come
// in while the last one's handler still runs. Unary answers have a
// Content-Length (the caller has them whole at their last byte, before
// the handler returns); streams end with their last chunk, after it.
func TestSlotFreeBeforeAnswer(t *testing.T) {
	hangsAfter(t, 3*time.Minute)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/s" {
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, "{\"i\":0}\n{\"i\":1}\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	defer agent.Close()
	h := newHarness(t, agent.URL, "limits: {concurrency: 3, queue: 2, queue_timeout: 2m}\n"+oneMethodConfig)

	const callers, each = 5, 600 // concurrency + queue callers
	var busy, done atomic.Int32
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			transport := &http.Transport{DisableKeepAlives: true}
			defer transport.CloseIdleConnections()
			client := &http.Client{Transport: transport}
			for n := range each {
				route, body := core.RouteUnary, `{"class_method":"query","input":{}}`
				if (i+n)%4 == 0 {
					route, body = core.RouteStream, `{"class_method":"stream_query","input":{}}`
				}
				resp, err := client.Post(h.url+route, "application/json", strings.NewReader(body))
				if err != nil {
					t.Errorf("caller %d, call %d: %v", i, n, err)
					return
				}
				b, err := io.ReadAll(resp.Body) // the answer whole
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusServiceUnavailable:
					if busy.Add(1) == 1 {
						t.Errorf("caller %d, call %d: 503 %s", i, n, b)
					}
				case err != nil || resp.StatusCode != http.StatusOK:
					t.Errorf("caller %d, call %d: %d %s (%v)", i, n, resp.StatusCode, b, err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if n := busy.Load(); n > 0 {
		t.Errorf("%d of %d calls of %d closed-loop callers were answered 503, want none (concurrency 3, queue 2)", n, done.Load(), callers)
	}
	t.Logf("%d calls, %d answered 503", done.Load(), busy.Load())
}

// TestSlotFreeWhenAnswerWhole: a caller that has its whole answer finds
// its call's slot free, while the call's handler still runs (here the
// door's writer lingers after the last byte; in the sidecar, the log line
// and span): the slot is freed before the last byte of an answer with a
// Content-Length goes out, however the door splits its writes. So a
// caller's next call is served, not turned away (concurrency 1, queue 0).
func TestSlotFreeWhenAnswerWhole(t *testing.T) {
	hangsAfter(t, time.Minute)
	s, _, _ := toyServer(t, "limits: {concurrency: 1, queue: 0}\n", &okAgent{})
	door := lingeringDoor{linger: make(chan struct{})}
	srv := httptest.NewServer(s.HandlerFor(door))
	defer srv.Close()
	lingering := sync.OnceFunc(func() { close(door.linger) })
	defer lingering()

	// A new connection for each call: the first's still serves its call.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 2 {
		resp, err := client.Post(srv.URL+"/ask", "text/plain", strings.NewReader(`query {"id":1}`))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(b) != "out {\"ok\":true}\n" {
			t.Fatalf("call %d = %d %q (%v), want 200 and the answer whole", i, resp.StatusCode, b, err)
		}
		if free, waiting := s.slots.state(); free != 1 || waiting != 0 {
			t.Errorf("call %d: the caller has its whole answer while %d of 1 slot is taken (%d waiting), want it free", i, 1-free, waiting)
		}
	}
	if n := s.InFlight(); n != 2 {
		t.Errorf("InFlight = %d, want the 2 lingering calls", n)
	}
	lingering()
}

// okAgent answers every unary call {"ok":true}.
type okAgent struct{ fakeAgent }

func (*okAgent) Unary(context.Context, core.Call) (json.RawMessage, error) {
	return json.RawMessage(`{"ok":true}`), nil
}

// lingeringDoor is the toy door writing a unary answer with its
// Content-Length, in two flushed writes, whose writer then lingers until
// linger is closed.
type lingeringDoor struct {
	toyDoor
	linger chan struct{}
}

func (d lingeringDoor) Open(cfg *config.Config, route string, r *http.Request, body []byte) (core.Exchange, error) {
	ex, err := d.toyDoor.Open(cfg, route, r, body)
	if ex.Writer != nil {
		ex.Writer = d
	}
	return ex, err
}

func (d lingeringDoor) WriteOutput(w http.ResponseWriter, out json.RawMessage) (int, error) {
	body := "out " + string(out) + "\n"
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	n, _ := io.WriteString(w, body[:3])
	rc.Flush()
	m, err := io.WriteString(w, body[3:])
	rc.Flush()
	<-d.linger
	return n + m, err
}

// TestSlotHandedOver: a slot freed while a call waits is that call's then
// and there: once release returns, the call holds the slot and waits no
// more, whether or not its goroutine has run since; so a caller who comes
// next may wait in its place (queue 1), not be turned away busy.
func TestSlotHandedOver(t *testing.T) {
	q := newSlots(1, 1)
	ctx := t.Context()
	if err := q.acquire(ctx, time.Minute); err != nil {
		t.Fatalf("acquire of a free slot: %v", err)
	}
	handed := make(chan error, 1)
	go func() { handed <- q.acquire(ctx, time.Minute) }()
	waitFor(t, func() bool { _, waiting := q.state(); return waiting == 1 })
	left, leave := context.WithCancelCause(ctx)
	leave(errors.New("the caller left"))
	if err := q.acquire(left, time.Minute); !errors.Is(err, core.ErrBusy) {
		t.Errorf("acquire with the slot taken and the queue full = %v, want busy", err)
	}

	q.release()
	if free, waiting := q.state(); free != 0 || waiting != 0 {
		t.Errorf("right after release: %d free, %d waiting, want the waiting call to hold the slot (0, 0)", free, waiting)
	}
	// The next caller queues (and leaves at once, its context ended).
	if err := q.acquire(left, time.Minute); errors.Is(err, core.ErrBusy) || context.Cause(left) != err {
		t.Errorf("acquire after the slot was handed on = %v, want to queue (then the caller's cause)", err)
	}
	select {
	case err := <-handed:
		if err != nil {
			t.Errorf("the waiting call = %v, want the slot", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call was not given the freed slot")
	}
	q.release()
	if free, waiting := q.state(); free != 1 || waiting != 0 {
		t.Errorf("after every release: %d free, %d waiting, want 1, 0", free, waiting)
	}
}

// TestSlotLeftAsHanded: a waiting call whose caller leaves just as it is
// handed a slot does not keep it: the slot goes on to the next call
// waiting, or is free, and the call ends with its caller's cause (a
// caller who leaves the queue never reaches the agent).
func TestSlotLeftAsHanded(t *testing.T) {
	q := newSlots(1, 2)
	if err := q.acquire(t.Context(), time.Minute); err != nil {
		t.Fatalf("acquire of a free slot: %v", err)
	}
	left, leave := context.WithCancelCause(t.Context())
	first, next := make(chan error, 1), make(chan error, 1)
	go func() { first <- q.acquire(left, time.Minute) }()
	waitFor(t, func() bool { _, waiting := q.state(); return waiting == 1 })
	go func() { next <- q.acquire(t.Context(), time.Minute) }()
	waitFor(t, func() bool { _, waiting := q.state(); return waiting == 2 })

	// Both at once, as far as the first call can tell: its caller leaves
	// and it is handed the slot before it wakes.
	gone := errors.New("the caller left")
	q.mu.Lock()
	leave(gone)
	q.handOn()
	q.mu.Unlock()
	for name, got := range map[string]chan error{"the call whose caller left": first, "the next call": next} {
		select {
		case err := <-got:
			if want := map[string]error{"the call whose caller left": gone}[name]; err != want {
				t.Errorf("%s: acquire = %v, want %v", name, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: acquire did not return", name)
		}
	}
	q.release()
	if free, waiting := q.state(); free != 1 || waiting != 0 {
		t.Errorf("after every release: %d free, %d waiting, want 1, 0", free, waiting)
	}
}

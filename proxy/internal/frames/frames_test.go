package frames

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// prompt bounds the wait for what the writer must flush before its
// records wait for the agent: it comes at once or never (the records wait
// for the test's client), so the bound is the behaviour, not the machine.
const prompt = 2 * time.Second

// records are a stream's records in bursts, each what one read from the
// agent would give. Before each read (every burst, and the one that finds
// the end) they wait: they run the BeforeWait hook, when they are a
// Waiter and one was set, then wait(burst), when set.
type records struct {
	bursts [][]string
	wait   func(burst int)
	hook   func()
	burst  int
	i      int
}

func (r *records) Next() bool {
	for r.burst < len(r.bursts) && r.i == len(r.bursts[r.burst]) {
		r.burst, r.i = r.burst+1, 0
	}
	if r.i == 0 {
		if r.hook != nil {
			r.hook()
		}
		if r.wait != nil {
			r.wait(r.burst)
		}
	}
	if r.burst == len(r.bursts) {
		return false
	}
	r.i++
	return true
}

func (r *records) Record() []byte { return []byte(r.bursts[r.burst][r.i-1]) }
func (r *records) Err() error     { return nil }
func (r *records) Close()         {}

// waiter are records that say when they wait (a core.Waiter).
type waiter struct{ *records }

func (r waiter) BeforeWait(f func()) { r.hook = f }

// writer is the server's ResponseWriter, counting flushes and failing the
// write or the flush numbered failWrite or failFlush (from 1; Begin's
// flush is the first).
type writer struct {
	http.ResponseWriter
	writes, flushes      int
	failWrite, failFlush int
}

var (
	errWrite = errors.New("write failed on purpose")
	errFlush = errors.New("flush failed on purpose")
)

func (w *writer) Write(b []byte) (int, error) {
	if w.writes++; w.writes == w.failWrite {
		return 0, errWrite
	}
	return w.ResponseWriter.Write(b)
}

// FlushError is what http.ResponseController calls to flush.
func (w *writer) FlushError() error {
	if w.flushes++; w.flushes == w.failFlush {
		return errFlush
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// failure is the last frame's JSON in these tests.
func failure(f core.Failure) []byte { return []byte(`{"error":"` + f.Reason + `"}`) }

// served is what the handler saw of one stream.
type served struct {
	begin, copied error
	flushes       int
	records       int
	bytes         int64
	first         time.Time
}

// serve runs one stream through a Writer behind a real server: Begin,
// Copy of recs, then Fail when fail is set. It returns the server's URL
// and where the handler reports.
func serve(t *testing.T, prefix, suffix string, recs core.Records, w *writer, fail bool) (string, <-chan served) {
	t.Helper()
	return serveHooks(t, prefix, suffix, Hooks{Fail: failure}, recs, w, fail)
}

// serveHooks is serve with the writer's hooks.
func serveHooks(t *testing.T, prefix, suffix string, hooks Hooks, recs core.Records, w *writer, fail bool) (string, <-chan served) {
	t.Helper()
	out := make(chan served, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.ResponseWriter = rw
		f := New(w, "application/x-test", prefix, suffix, hooks)
		var s served
		s.begin = f.Begin()
		s.copied = f.Copy(recs)
		if fail {
			f.Fail(core.Failure{Reason: "BOOM"})
		}
		s.records, s.bytes, s.first = f.Wrote()
		s.flushes = w.flushes
		out <- s
	}))
	t.Cleanup(srv.Close)
	return srv.URL, out
}

// get opens the stream; the call ends at the test's end.
func get(t *testing.T, url string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// result waits for the handler's report.
func result(t *testing.T, out <-chan served) served {
	t.Helper()
	select {
	case s := <-out:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not end")
		return served{}
	}
}

// TestWriter: records framed for ndjson and for SSE, as a real client
// reads them; the flush policy (one flush per burst before the records
// wait when they are a Waiter, one per record otherwise, none left over
// at the end); the last frame for a failure; what Wrote counts; errors
// from the underlying writer.
func TestWriter(t *testing.T) {
	bursts := [][]string{{`{"a":1}`, `{"b":2}`, `{"c":3}`}, {`{"d":4}`}, {`{"e":5}`, `{"f":6}`}}
	tests := []struct {
		name           string
		prefix, suffix string
		waiter         bool
		fail           bool
		empty          bool // no records at all
		failWrite      int
		failFlush      int
		want           string // the body the client reads
		wantFlushes    int    // Begin's included
		wantRecords    int
		wantErr        error
	}{
		{name: "ndjson, waiter", suffix: "\n", waiter: true,
			want:        "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n{\"e\":5}\n{\"f\":6}\n",
			wantFlushes: 1 + 3, wantRecords: 6},
		{name: "sse, waiter", prefix: "data: ", suffix: "\n\n", waiter: true,
			want:        "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: {\"c\":3}\n\ndata: {\"d\":4}\n\ndata: {\"e\":5}\n\ndata: {\"f\":6}\n\n",
			wantFlushes: 1 + 3, wantRecords: 6},
		{name: "ndjson, no waiter: per record", suffix: "\n",
			want:        "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n{\"e\":5}\n{\"f\":6}\n",
			wantFlushes: 1 + 6, wantRecords: 6},
		{name: "sse, failure as the last frame", prefix: "data: ", suffix: "\n\n", waiter: true, fail: true,
			want:        "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: {\"c\":3}\n\ndata: {\"d\":4}\n\ndata: {\"e\":5}\n\ndata: {\"f\":6}\n\ndata: {\"error\":\"BOOM\"}\n\n",
			wantFlushes: 1 + 3 + 1, wantRecords: 6},
		{name: "write error ends the copy", suffix: "\n", waiter: true, failWrite: 3,
			want:        "{\"a\":1}\n{\"b\":2}\n",
			wantFlushes: 1, wantRecords: 2, wantErr: errWrite},
		{name: "flush error reported at the next write", suffix: "\n", waiter: true, failFlush: 2,
			// The first burst's flush fails: its records stay in the
			// server's buffer, and the copy ends at the next record.
			want:        "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n",
			wantFlushes: 1 + 1, wantRecords: 3, wantErr: errFlush},
		{name: "flush error after the last record not reported", suffix: "\n", waiter: true, failFlush: 4,
			want:        "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n{\"e\":5}\n{\"f\":6}\n",
			wantFlushes: 1 + 3, wantRecords: 6},
		{name: "no records", suffix: "\n", waiter: true, empty: true, want: "", wantFlushes: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := &records{bursts: bursts}
			if tt.empty {
				recs.bursts = nil
			}
			var r core.Records = recs
			if tt.waiter {
				r = waiter{recs}
			}
			w := &writer{failWrite: tt.failWrite, failFlush: tt.failFlush}
			url, out := serve(t, tt.prefix, tt.suffix, r, w, tt.fail)
			resp := get(t, url)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-test" ||
				resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("X-Accel-Buffering") != "no" {
				t.Errorf("reply = %d %v, want 200 with the stream's headers", resp.StatusCode, resp.Header)
			}
			body, _ := io.ReadAll(resp.Body)
			s := result(t, out)
			if string(body) != tt.want {
				t.Errorf("body = %q, want %q", body, tt.want)
			}
			if s.begin != nil || !errors.Is(s.copied, tt.wantErr) || (tt.wantErr == nil && s.copied != nil) {
				t.Errorf("Begin = %v, Copy = %v, want nil, %v", s.begin, s.copied, tt.wantErr)
			}
			if s.flushes != tt.wantFlushes {
				t.Errorf("flushes = %d, want %d", s.flushes, tt.wantFlushes)
			}
			// Every byte written is counted, the failure's frame too.
			wantBytes := int64(len(tt.want))
			if s.records != tt.wantRecords || s.bytes != wantBytes || s.first.IsZero() != (tt.wantRecords == 0) {
				t.Errorf("Wrote = %d records, %d bytes, first %v; want %d, %d, set when records went out",
					s.records, s.bytes, s.first, tt.wantRecords, wantBytes)
			}
		})
	}
}

// TestWriterFlushesBeforeWait: what a burst wrote reaches the client
// before the records wait for the agent, here for the client: so each
// record arrives as soon as the agent produced it. Without the flush the
// stream would stall; it fails in prompt instead.
func TestWriterFlushesBeforeWait(t *testing.T) {
	for _, tt := range []struct {
		name           string
		prefix, suffix string
		waiter         bool
	}{
		{"ndjson, waiter", "", "\n", true},
		{"sse, waiter", "data: ", "\n\n", true},
		{"ndjson, no waiter", "", "\n", false},
		{"sse, no waiter", "data: ", "\n\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bursts := [][]string{{`{"a":1}`, `{"b":2}`}, {`{"c":3}`}, {`{"d":4}`}}
			var mu sync.Mutex
			read, more := 0, make(chan struct{}, 16)
			stalled := make(chan string, 1)
			recs := &records{bursts: bursts, wait: func(burst int) {
				// Wait until the client has read every record before
				// this burst.
				want := 0
				for _, b := range bursts[:burst] {
					want += len(b)
				}
				deadline := time.After(prompt)
				for {
					mu.Lock()
					n := read
					mu.Unlock()
					if n >= want {
						return
					}
					select {
					case <-more:
					case <-deadline:
						select {
						case stalled <- fmt.Sprintf("before burst %d the client had %d records, want %d within %v: not flushed", burst, n, want, prompt):
						default:
						}
						return
					}
				}
			}}
			var r core.Records = recs
			if tt.waiter {
				r = waiter{recs}
			}
			url, out := serve(t, tt.prefix, tt.suffix, r, &writer{}, false)
			br := bufio.NewReader(get(t, url).Body)
			for _, b := range bursts {
				for _, rec := range b {
					frame := make([]byte, len(tt.prefix+rec+tt.suffix))
					if _, err := io.ReadFull(br, frame); err != nil || string(frame) != tt.prefix+rec+tt.suffix {
						t.Fatalf("frame = %q, %v; want %q", frame, err, tt.prefix+rec+tt.suffix)
					}
					mu.Lock()
					read++
					mu.Unlock()
					more <- struct{}{}
				}
			}
			select {
			case msg := <-stalled:
				t.Error(msg)
			default:
			}
			if s := result(t, out); s.copied != nil {
				t.Errorf("Copy = %v", s.copied)
			}
		})
	}
}

// TestWriterCallerLeaves: a caller that leaves mid-stream ends the copy
// with the write's error, however many records the agent still has.
func TestWriterCallerLeaves(t *testing.T) {
	endless := &endlessRecords{record: []byte(`{"x":"` + strings.Repeat("x", 1000) + `"}`)}
	url, out := serve(t, "data: ", "\n\n", endless, &writer{}, false)
	resp := get(t, url)
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, `data: {"x":`) {
		t.Fatalf("first line = %q, %v", line, err)
	}
	resp.Body.Close()
	if s := result(t, out); s.copied == nil || s.records == 0 {
		t.Errorf("Copy after the caller left = %v with %d records, want the write's error", s.copied, s.records)
	}
}

// endlessRecords never end; each is flushed (no Waiter).
type endlessRecords struct{ record []byte }

func (r *endlessRecords) Next() bool     { return true }
func (r *endlessRecords) Record() []byte { return r.record }
func (r *endlessRecords) Err() error     { return nil }
func (r *endlessRecords) Close()         {}

// TestWriterBegin: Begin sends the head (200 and the stream's headers)
// before the first record, so the caller knows the call was accepted
// while the records still wait for the agent.
func TestWriterBegin(t *testing.T) {
	headed := make(chan struct{})
	stalled := make(chan struct{})
	recs := &records{bursts: [][]string{{`{"a":1}`}}, wait: func(burst int) {
		if burst > 0 {
			return
		}
		select {
		case <-headed:
		case <-time.After(prompt):
			close(stalled)
		}
	}}
	url, out := serve(t, "", "\n", waiter{recs}, &writer{}, false)
	resp := get(t, url)
	close(headed)
	select {
	case <-stalled:
		t.Errorf("the head came only after the first record waited %v: not flushed by Begin", prompt)
	default:
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-test" {
		t.Errorf("head = %d %v, want 200 application/x-test", resp.StatusCode, resp.Header)
	}
	if body, err := io.ReadAll(resp.Body); err != nil || string(body) != "{\"a\":1}\n" {
		t.Errorf("body = %q, %v", body, err)
	}
	if s := result(t, out); s.begin != nil || s.copied != nil {
		t.Errorf("Begin = %v, Copy = %v", s.begin, s.copied)
	}
}

// ended are records that end with err.
type ended struct {
	*records
	err error
}

func (r ended) Err() error          { return r.err }
func (r ended) BeforeWait(f func()) { r.hook = f }

// TestWriterHooks: what a door adds around the records goes out framed
// as they are and under the same flush policy: Begin's frames with the
// head, flushed before the records wait; each record's data wrapped
// (JSON-RPC's response with its id); End's frames after the records,
// told how they ended (a closing "[DONE]" only after a clean end); the
// failure's frame last, none when the Fail hook gives none. Every byte is
// counted.
func TestWriterHooks(t *testing.T) {
	begin := func() [][]byte { return [][]byte{[]byte(`{"task":"submitted"}`), []byte(`{"task":"working"}`)} }
	wrap := func(dst, record []byte) []byte {
		dst = append(dst, `{"id":7,"result":`...)
		return append(append(dst, record...), '}')
	}
	done := func(err error) [][]byte {
		if err != nil {
			return nil
		}
		return [][]byte{[]byte("[DONE]")}
	}
	errBroke := errors.New("broke")
	tests := []struct {
		name        string
		hooks       Hooks
		err         error // the records' end
		fail        bool
		want        string
		wantFlushes int // Begin's included
	}{
		{name: "begin frames with the head", hooks: Hooks{Begin: begin},
			want:        "data: {\"task\":\"submitted\"}\n\ndata: {\"task\":\"working\"}\n\ndata: {\"a\":1}\n\ndata: {\"b\":2}\n\n",
			wantFlushes: 1 + 2},
		{name: "each record wrapped", hooks: Hooks{Record: wrap},
			want:        "data: {\"id\":7,\"result\":{\"a\":1}}\n\ndata: {\"id\":7,\"result\":{\"b\":2}}\n\n",
			wantFlushes: 1 + 2},
		{name: "closing frame after a clean end", hooks: Hooks{End: done, Fail: failure},
			want:        "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n",
			wantFlushes: 1 + 2 + 1},
		{name: "no closing frame after a failure, the failure last", hooks: Hooks{End: done, Fail: failure}, err: errBroke, fail: true,
			want:        "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: {\"error\":\"BOOM\"}\n\n",
			wantFlushes: 1 + 2 + 1},
		{name: "a Fail hook that gives nothing writes nothing", hooks: Hooks{Fail: func(core.Failure) []byte { return nil }}, err: errBroke, fail: true,
			want:        "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n",
			wantFlushes: 1 + 2},
		{name: "no hooks", err: errBroke, fail: true,
			want:        "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n",
			wantFlushes: 1 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := ended{&records{bursts: [][]string{{`{"a":1}`}, {`{"b":2}`}}}, tt.err}
			w := &writer{}
			url, out := serveHooks(t, "data: ", "\n\n", tt.hooks, recs, w, tt.fail)
			resp := get(t, url)
			body, _ := io.ReadAll(resp.Body)
			s := result(t, out)
			if string(body) != tt.want {
				t.Errorf("body = %q, want %q", body, tt.want)
			}
			if s.begin != nil || s.copied != nil {
				t.Errorf("Begin = %v, Copy = %v, want nil", s.begin, s.copied)
			}
			if s.flushes != tt.wantFlushes {
				t.Errorf("flushes = %d, want %d", s.flushes, tt.wantFlushes)
			}
			if s.records != 2 || s.bytes != int64(len(tt.want)) {
				t.Errorf("Wrote = %d records, %d bytes; want 2, %d", s.records, s.bytes, len(tt.want))
			}
		})
	}
}

// TestWriterBeginFramesFlushed: Begin's frames reach the caller before
// the first record, while the records still wait for the agent.
func TestWriterBeginFramesFlushed(t *testing.T) {
	headed := make(chan string, 1)
	stalled := make(chan struct{})
	recs := &records{bursts: [][]string{{`{"a":1}`}}, wait: func(burst int) {
		if burst > 0 {
			return
		}
		select {
		case <-headed:
		case <-time.After(prompt):
			close(stalled)
		}
	}}
	hooks := Hooks{Begin: func() [][]byte { return [][]byte{[]byte(`{"task":"working"}`)} }}
	url, out := serveHooks(t, "data: ", "\n\n", hooks, waiter{recs}, &writer{}, false)
	resp := get(t, url)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	headed <- line
	select {
	case <-stalled:
		t.Errorf("Begin's frame came only after the first record waited %v: not flushed by Begin", prompt)
	default:
	}
	if err != nil || line != "data: {\"task\":\"working\"}\n" {
		t.Errorf("first line = %q, %v; want Begin's frame", line, err)
	}
	if s := result(t, out); s.begin != nil || s.copied != nil {
		t.Errorf("Begin = %v, Copy = %v", s.begin, s.copied)
	}
}

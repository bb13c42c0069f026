package platform

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// fakeRecords yields its records in bursts: each burst is what one read
// from the agent would give, and before each burst the records wait
// (calling the Waiter hook when one was set).
type fakeRecords struct {
	bursts [][]string
	err    error
	wait   func() // set by BeforeWait
	burst  int
	i      int
	closed bool
}

func (r *fakeRecords) Next() bool {
	for r.burst < len(r.bursts) && r.i == len(r.bursts[r.burst]) {
		r.burst, r.i = r.burst+1, 0
	}
	if r.burst == len(r.bursts) {
		if r.wait != nil {
			r.wait() // the read that finds the end
		}
		return false
	}
	if r.i == 0 && r.wait != nil {
		r.wait()
	}
	r.i++
	return true
}

func (r *fakeRecords) Record() []byte { return []byte(r.bursts[r.burst][r.i-1]) }
func (r *fakeRecords) Err() error     { return r.err }
func (r *fakeRecords) Close()         { r.closed = true }

// waitingRecords are fakeRecords that say when they wait.
type waitingRecords struct{ *fakeRecords }

func (r waitingRecords) BeforeWait(f func()) { r.wait = f }

// flushLog is a ResponseWriter that logs writes and flushes, so a test
// can read where each flush fell.
type flushLog struct {
	*httptest.ResponseRecorder
	log      []string
	writeErr error
}

func (f *flushLog) Write(b []byte) (int, error) {
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	f.log = append(f.log, strings.TrimSuffix(string(b), "\n"))
	return f.ResponseRecorder.Write(b)
}

func (f *flushLog) Flush() {
	f.log = append(f.log, "flush")
	f.ResponseRecorder.Flush()
}

// TestNDJSONFlushPolicy: records that arrive together are written one per
// line and flushed together, before the records wait for more; records
// that cannot say when they wait are flushed one by one.
func TestNDJSONFlushPolicy(t *testing.T) {
	bursts := [][]string{{`{"a":1}`, `{"a":2}`}, {`{"a":3}`}}
	tests := []struct {
		name    string
		records core.Records
		want    string
	}{
		{"waiter", waitingRecords{&fakeRecords{bursts: bursts}}, `{"a":1} {"a":2} flush {"a":3} flush`},
		{"no waiter", &fakeRecords{bursts: bursts}, `{"a":1} flush {"a":2} flush {"a":3} flush`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &flushLog{ResponseRecorder: httptest.NewRecorder()}
			out := NewNDJSON(w)
			if err := out.Copy(tt.records); err != nil {
				t.Fatalf("Copy = %v, want nil", err)
			}
			if got := strings.Join(w.log, " "); got != tt.want {
				t.Errorf("Copy wrote %s, want %s", got, tt.want)
			}
			if body := w.Body.String(); body != "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n" {
				t.Errorf("body = %q, want one record per line", body)
			}
			if records, bytes, first := out.Wrote(); records != 3 || bytes != 24 || first.IsZero() {
				t.Errorf("records %d bytes %d first %v, want 3, 24 and a time", records, bytes, first)
			}
		})
	}
}

// TestNDJSONWriteError: a write the caller does not take ends the copy
// with its error; the records are not read on.
func TestNDJSONWriteError(t *testing.T) {
	gone := errors.New("broken pipe")
	w := &flushLog{ResponseRecorder: httptest.NewRecorder(), writeErr: gone}
	r := &fakeRecords{bursts: [][]string{{`1`, `2`}}}
	if err := NewNDJSON(w).Copy(r); !errors.Is(err, gone) {
		t.Fatalf("Copy = %v, want %v", err, gone)
	}
	if r.i != 1 {
		t.Errorf("read %d records after the failed write, want 1", r.i)
	}
}

// TestNDJSONBegin: a stream answers 200 with its headers, flushed before
// the first record.
func TestNDJSONBegin(t *testing.T) {
	w := &flushLog{ResponseRecorder: httptest.NewRecorder()}
	if err := NewNDJSON(w).Begin(); err != nil {
		t.Fatal(err)
	}
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("X-Accel-Buffering") != "no" ||
		strings.Join(w.log, " ") != "flush" {
		t.Errorf("begin: %d %v %v, want 200, the stream headers and a flush", w.Code, w.Header(), w.log)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// variant is one way to reach the agent: direct, through nginx, through
// the Go reference proxy, through the sidecar. Each builds its own
// requests for the same agent routes.
type variant struct {
	name string
	addr string
	// sidecar variants speak the platform contract; the others call the
	// agent's routes themselves.
	contract bool
	// cpu is the CPU time the proxy's processes have used so far; nil
	// for direct calls.
	cpu func() time.Duration
}

func (v variant) unaryRequest() []byte {
	if v.contract {
		return request(v.addr, "/api/reasoning_engine", []byte(`{"class_method":"query","input":{"message":"hello"}}`))
	}
	return request(v.addr, "/query", []byte(`{"message":"hello"}`))
}

// streamParams are the agent's /stream parameters (see bench/cmd/agent).
type streamParams struct {
	N      int    `json:"n"`
	Size   int    `json:"size"`
	Gap    string `json:"gap,omitempty"`
	Format string `json:"format,omitempty"`
	Hold   bool   `json:"hold,omitempty"`
}

func (v variant) streamRequest(p streamParams) []byte {
	in, _ := json.Marshal(p)
	if v.contract {
		body := fmt.Sprintf(`{"class_method":"stream_query","input":%s}`, in)
		return request(v.addr, "/api/stream_reasoning_engine", []byte(body))
	}
	return request(v.addr, "/stream", in)
}

// unaryResult is one closed-loop run of unary calls.
type unaryResult struct {
	rps      float64
	p50, p99 float64 // microseconds
	errors   int64
	// cpuPerCall is the proxy's CPU time per call in microseconds over the
	// measured window; NaN without a cpu function.
	cpuPerCall float64
}

// unaryLoad runs conc workers, each sending requests back to back on its
// own keep-alive connection, for warm then dur; only calls started after
// the warm-up count. cpu, if not nil, is read at both ends of the measured
// window.
func unaryLoad(addr string, req []byte, conc int, warm, dur time.Duration, cpu func() time.Duration) (unaryResult, error) {
	return unaryLoadEach(addr, func() []byte { return req }, conc, warm, dur, cpu)
}

// unaryLoadEach is unaryLoad sending the request next returns each time
// (safe for concurrent use).
func unaryLoadEach(addr string, next func() []byte, conc int, warm, dur time.Duration, cpu func() time.Duration) (unaryResult, error) {
	start := time.Now()
	measureFrom := start.Add(warm)
	end := measureFrom.Add(dur)
	var cpu0, cpu1 time.Duration
	var cpuDone sync.WaitGroup
	if cpu != nil {
		cpuDone.Add(2)
		time.AfterFunc(warm, func() { cpu0 = cpu(); cpuDone.Done() })
		time.AfterFunc(warm+dur, func() { cpu1 = cpu(); cpuDone.Done() })
	}
	var errs atomic.Int64
	lat := make([][]float64, conc)
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	for w := range conc {
		wg.Go(func() {
			var c *conn
			samples := make([]float64, 0, 1<<16)
			defer func() {
				if c != nil {
					c.Close()
				}
				lat[w] = samples
			}()
			for {
				t0 := time.Now()
				if t0.After(end) {
					return
				}
				if c == nil || !c.reusable {
					if c != nil {
						c.Close()
					}
					var err error
					if c, err = dial(addr); err != nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, &err)
						c = nil
						time.Sleep(10 * time.Millisecond)
						continue
					}
					c.nc.SetDeadline(end.Add(10 * time.Second))
				}
				if err := c.do(next()); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				t1 := time.Now()
				if t0.After(measureFrom) && !t1.After(end) {
					samples = append(samples, float64(t1.Sub(t0).Nanoseconds())/1e3)
				}
			}
		})
	}
	wg.Wait()
	var all []float64
	for _, s := range lat {
		all = append(all, s...)
	}
	r := unaryResult{rps: float64(len(all)) / dur.Seconds(), errors: errs.Load(), cpuPerCall: math.NaN()}
	if cpu != nil {
		cpuDone.Wait()
		if len(all) > 0 {
			r.cpuPerCall = float64((cpu1 - cpu0).Microseconds()) / float64(len(all))
		}
	}
	r.p50, r.p99 = percentile(all, 50), percentile(all, 99)
	if len(all) == 0 {
		if p := firstErr.Load(); p != nil {
			return r, *p
		}
		return r, errors.New("no calls completed")
	}
	return r, nil
}

// streamResult is a set of concurrent streams read to their end.
type streamResult struct {
	records int64
	elapsed time.Duration
	// lat holds arrival minus send stamp per record, in microseconds, when
	// asked for.
	lat []float64
}

// streamLoad opens streams concurrent streams with req and reads each to
// its end, counting records; with stamps it records each one's latency.
func streamLoad(addr string, req []byte, streams int, stamps bool, want int) (streamResult, error) {
	var (
		wg      sync.WaitGroup
		records atomic.Int64
		mu      sync.Mutex
		lat     []float64
		errp    atomic.Pointer[error]
	)
	start := time.Now()
	for range streams {
		wg.Go(func() {
			var local []float64
			if stamps {
				local = make([]float64, 0, want)
			}
			n, err := readStream(addr, req, func(rec []byte) {
				if stamps {
					if t := stamp(rec); t > 0 {
						local = append(local, float64(time.Now().UnixNano()-t)/1e3)
					}
				}
			})
			records.Add(int64(n))
			if err == nil && want > 0 && n != want {
				err = fmt.Errorf("stream: %d records, want %d", n, want)
			}
			if err != nil {
				errp.CompareAndSwap(nil, &err)
			}
			if stamps {
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r := streamResult{records: records.Load(), elapsed: time.Since(start), lat: lat}
	if p := errp.Load(); p != nil {
		return r, *p
	}
	return r, nil
}

// readStream sends one stream request on a new connection and calls
// onRecord for every record until the stream ends.
func readStream(addr string, req []byte, onRecord func([]byte)) (int, error) {
	c, err := dial(addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.nc.SetDeadline(time.Now().Add(60 * time.Second))
	resp, err := c.send(req)
	if err != nil {
		return 0, err
	}
	if resp.status != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.body, 512))
		return 0, fmt.Errorf("%w %d: %s", errStatus, resp.status, b)
	}
	lr := newLineReader(resp.body, 64<<10)
	n := 0
	for {
		rec, err := lr.next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if len(rec) > 9 && string(rec[:9]) == `{"error":` {
			return n, fmt.Errorf("stream ended with %s", rec)
		}
		onRecord(rec)
		n++
	}
}

// firstLine measures, on one keep-alive connection, the time from sending
// a stream request to reading its first record, for count requests.
func firstLine(addr string, req []byte, count int) ([]float64, error) {
	return firstMatch(addr, req, count, "")
}

// firstMatch is firstLine to the first line that contains marker (any
// line when marker is ""): the first of the agent's records behind a
// door that writes lines of its own first.
func firstMatch(addr string, req []byte, count int, marker string) ([]float64, error) {
	var c *conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	out := make([]float64, 0, count)
	for range count {
		if c == nil || !c.reusable {
			if c != nil {
				c.Close()
			}
			var err error
			if c, err = dial(addr); err != nil {
				return out, err
			}
		}
		c.nc.SetDeadline(time.Now().Add(10 * time.Second))
		t0 := time.Now()
		resp, err := c.send(req)
		if err != nil {
			return out, err
		}
		if resp.status != 200 {
			return out, fmt.Errorf("%w %d", errStatus, resp.status)
		}
		// The line reader buffers past the first record; the rest of the
		// body goes through it, then the trailer straight from the conn.
		lr := newLineReader(resp.body, 16<<10)
		for {
			line, err := lr.next()
			if err != nil {
				return out, fmt.Errorf("no line with %q: %w", marker, err)
			}
			if bytes.Contains(line, []byte(marker)) {
				break
			}
		}
		out = append(out, float64(time.Since(t0).Nanoseconds())/1e3)
		if _, err := io.Copy(io.Discard, lr.br); err != nil {
			return out, err
		}
		resp.body = eofReader{}
		if err := c.finish(resp); err != nil {
			return out, err
		}
	}
	return out, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// openIdle opens n streams that send one record and then stay open, each
// on its own connection, parallel at a time; it returns once every stream
// has delivered its first record. The caller closes the connections.
func openIdle(addr string, req []byte, n, parallel int) ([]*conn, error) {
	conns := make([]*conn, n)
	var next atomic.Int64
	var errp atomic.Pointer[error]
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || errp.Load() != nil {
					return
				}
				c, err := openOne(addr, req)
				if err != nil {
					err = fmt.Errorf("idle stream %d: %w", i, err)
					errp.CompareAndSwap(nil, &err)
					return
				}
				conns[i] = c
			}
		})
	}
	wg.Wait()
	if p := errp.Load(); p != nil {
		closeAll(conns)
		return nil, *p
	}
	return conns, nil
}

func openOne(addr string, req []byte) (*conn, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	resp, err := c.send(req)
	if err == nil && resp.status != 200 {
		err = fmt.Errorf("%w %d", errStatus, resp.status)
	}
	if err == nil {
		_, err = newLineReader(resp.body, 4<<10).next()
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.nc.SetDeadline(time.Time{})
	c.br = nil // the stream is held, never read again
	return c, nil
}

func closeAll(conns []*conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

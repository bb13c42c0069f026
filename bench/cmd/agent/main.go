// Command agent is the benchmark's stand-in agent: unary JSON on /query and
// SSE, ndjson or text streams on /stream, every event stamped with the
// unix nanosecond it was written so a client can measure arrival minus
// send. It holds idle streams open with one goroutine each.
//
//	agent -listen 127.0.0.1:8000
//
// POST /query answers {"t":<ns>,"text":"<size bytes>"} (size from the
// query string, default -unary-size). POST /stream takes its parameters
// from a JSON body or the query string (query wins):
//
//	n       events to send (default 10)
//	size    bytes of padding per event (default 64)
//	gap     pause before each event after the first, a Go duration ("1ms")
//	format  sse (default), ndjson or text
//	hold    true: after the last event, keep the stream open until the
//	        client leaves (idle streams for the memory benchmark)
//
// Every event is one line of JSON {"t":<ns>,"seq":<i>,"pad":"xxx…"}: as SSE
// "data: …\n\n", as ndjson "…\n", as text the same line as text/plain.
// Each is flushed as it is written.
//
// GET /live is a WebSocket echo (live.go): every frame, text or binary,
// sent back as it came, for the live rows (issue 39). POST /part answers a
// 5 MiB PNG as one inline part record, or its base64 as text (part.go),
// for the parts rows (issue 41).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/bench/internal/cli"
)

func main() { cli.Main("agent", run) }

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8000", "address to listen on (loopback only)")
	unarySize := fs.Int("unary-size", 64, "bytes of text in a unary reply")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	a := &agent{unarySize: *unarySize}
	mux := http.NewServeMux()
	mux.HandleFunc("/query", a.query)
	mux.HandleFunc("/stream", a.stream)
	mux.HandleFunc("/live", live)
	mux.HandleFunc("/part", part)
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	fmt.Fprintln(os.Stderr, "agent listening on", ln.Addr())
	return cli.Serve(ctx, ln, mux)
}

type agent struct {
	unarySize int
}

// query answers a unary call with a JSON object of a fixed size.
func (a *agent) query(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	size := a.unarySize
	if v := r.URL.Query().Get("size"); v != "" {
		size, _ = strconv.Atoi(v)
	}
	b := make([]byte, 0, size+48)
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, time.Now().UnixNano(), 10)
	b = append(b, `,"text":"`...)
	b = appendPad(b, size)
	b = append(b, "\"}\n"...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// streamParams is what a /stream request asks for.
type streamParams struct {
	N      int    `json:"n"`
	Size   int    `json:"size"`
	Gap    string `json:"gap"`
	Format string `json:"format"`
	Hold   bool   `json:"hold"`
}

func parseStreamParams(r *http.Request) (streamParams, time.Duration, error) {
	p := streamParams{N: 10, Size: 64, Format: "sse"}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return p, 0, err
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &p); err != nil {
			return p, 0, fmt.Errorf("decoding parameters: %w", err)
		}
	}
	q := r.URL.Query()
	if v := q.Get("n"); v != "" {
		p.N, _ = strconv.Atoi(v)
	}
	if v := q.Get("size"); v != "" {
		p.Size, _ = strconv.Atoi(v)
	}
	if v := q.Get("gap"); v != "" {
		p.Gap = v
	}
	if v := q.Get("format"); v != "" {
		p.Format = v
	}
	if v := q.Get("hold"); v != "" {
		p.Hold = v == "true" || v == "1"
	}
	var gap time.Duration
	if p.Gap != "" {
		if gap, err = time.ParseDuration(p.Gap); err != nil {
			return p, 0, fmt.Errorf("gap: %w", err)
		}
	}
	switch p.Format {
	case "sse", "ndjson", "text":
	default:
		return p, 0, errors.New(`format: want sse, ndjson or text`)
	}
	return p, gap, nil
}

// stream sends p.N stamped events, flushing each one.
func (a *agent) stream(w http.ResponseWriter, r *http.Request) {
	p, gap, err := parseStreamParams(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h := w.Header()
	switch p.Format {
	case "sse":
		h.Set("Content-Type", "text/event-stream")
	case "ndjson":
		h.Set("Content-Type", "application/x-ndjson")
	case "text":
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()

	pad := appendPad(nil, p.Size)
	buf := make([]byte, 0, p.Size+64)
	ctx := r.Context()
	var timer *time.Timer
	for i := range p.N {
		if gap > 0 && i > 0 {
			if timer == nil {
				timer = time.NewTimer(gap)
			} else {
				timer.Reset(gap)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		buf = buf[:0]
		if p.Format == "sse" {
			buf = append(buf, "data: "...)
		}
		buf = append(buf, `{"t":`...)
		buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
		buf = append(buf, `,"seq":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, `,"pad":"`...)
		buf = append(buf, pad...)
		buf = append(buf, `"}`...)
		if p.Format == "sse" {
			buf = append(buf, "\n\n"...)
		} else {
			buf = append(buf, '\n')
		}
		if _, err := w.Write(buf); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if p.Hold {
		<-ctx.Done()
	}
}

func appendPad(b []byte, n int) []byte {
	for i := range n {
		b = append(b, 'a'+byte(i%26))
	}
	return b
}

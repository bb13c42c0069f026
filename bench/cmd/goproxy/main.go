// Command goproxy is the benchmark's reference for what Go's net/http costs
// by itself: the least a proxy built on net/http's server and client can
// do (-mode minimal: one http.Transport.RoundTrip per call, the body
// copied with a flush after each read, no logging, no header policy);
// net/http's server with a hand-written client to the agent on the
// handler's goroutine (-mode raw, see raw.go); or
// net/http/httputil.ReverseProxy with immediate flushing (-mode
// reverseproxy); or one rung of the floor ladder (-mode ladder -rung
// NAME, see ladder.go). The gap between it and nginx is the part of the
// sidecar's gap that comes with net/http, not with the sidecar's own code.
//
//	goproxy -listen 127.0.0.1:8081 -upstream 127.0.0.1:8000 [-mode minimal]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/sidecar-dev/sidecar/bench/internal/cli"
)

func main() { cli.Main("goproxy", run) }

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("goproxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8081", "address to listen on")
	upstream := fs.String("upstream", "127.0.0.1:8000", "the agent's address")
	mode := fs.String("mode", "minimal", "minimal, raw, reverseproxy or ladder")
	rung := fs.String("rung", "go-raw", "with -mode ladder, the floor ladder's rung (ladder.go)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	target := &url.URL{Scheme: "http", Host: *upstream}
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     60 * time.Second,
		DisableCompression:  true,
	}
	var h http.Handler
	switch *mode {
	case "minimal":
		h = &minimal{target: target, transport: transport}
	case "raw":
		h = newRaw(*upstream)
	case "reverseproxy":
		h = &httputil.ReverseProxy{
			Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
			FlushInterval: -1,
			Transport:     transport,
			ErrorLog:      log.New(io.Discard, "", 0),
		}
	case "ladder":
		n, err := rungOf(*rung)
		if err != nil {
			return err
		}
		var stop func()
		if h, stop, err = newLadder(n, *upstream, os.Stderr); err != nil {
			return err
		}
		defer stop()
	default:
		return fmt.Errorf("-mode %q: want minimal, raw, reverseproxy or ladder", *mode)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	return cli.Serve(ctx, ln, h)
}

var bufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// minimal forwards a call with one RoundTrip and copies the reply back,
// flushing after every read so streams pass through as they come.
type minimal struct {
	target    *url.URL
	transport *http.Transport
}

func (m *minimal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u := *m.target
	u.Path = r.URL.Path
	// The request is read first, as the sidecar does. Handing r.Body to
	// the Transport as it is had the agent connection closed under long
	// replies in this benchmark ("use of closed network connection").
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.URL = &u
	out.Host = u.Host
	if ct := r.Header.Get("Content-Type"); ct != "" {
		out.Header.Set("Content-Type", ct)
	}
	resp, err := m.transport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	for _, k := range []string{"Content-Type", "Content-Length", "Cache-Control"} {
		if v := resp.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if resp.ContentLength < 0 {
				rc.Flush()
			}
		}
		if err != nil {
			if err != io.EOF {
				// The caller sees a reply cut short; say why.
				fmt.Fprintf(os.Stderr, "goproxy: reading the agent's reply: %v (caller: %v)\n", err, context.Cause(r.Context()))
				panic(http.ErrAbortHandler)
			}
			return
		}
	}
}

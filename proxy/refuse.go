package proxy

import (
	"errors"
	"net/http"
	"time"

	"github.com/sidecar-dev/sidecar/metrics"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// refuser is door's core.Refuse: a request the door refuses before it is
// a call (a path it does not serve, a method its route does not take, a
// Host, Origin or key it does not accept) is answered, and then logged
// and counted as a call is, on route, with the door's protocol. It is
// not counted in flight, takes no concurrency slot and leaves the body
// unread: a refused caller costs one log line, whatever it sends.
func (s *Server) refuser(door Door, protocol string) core.Refuse {
	return func(w http.ResponseWriter, r *http.Request, route string, err error) {
		c := &call{start: time.Now(), door: door, protocol: protocol, route: route, refused: true}
		defer s.log(r, c)
		var a *core.Answer
		if errors.As(err, &a) {
			s.answer(w, c, a)
			if c.outcome == "" { // a label of the closed set
				c.outcome = metrics.OK
				if a.Status >= http.StatusBadRequest {
					c.outcome = metrics.BadRequest
				}
			}
			return
		}
		var f core.Failure
		if !errors.As(err, &f) {
			f = core.FailureOf(err)
		}
		if f.Outcome == "" {
			f.Outcome = metrics.BadRequest // a label of the closed set
		}
		f = onMount(f, mountOf(r))
		c.failed(f, err)
		c.status = f.Status
		cw := &counter{ResponseWriter: w}
		door.WriteError(cw, f)
		c.bytes = cw.n
	}
}

// counter counts the body bytes written through it.
type counter struct {
	http.ResponseWriter
	n int64
}

func (w *counter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// Unwrap is for http.NewResponseController.
func (w *counter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

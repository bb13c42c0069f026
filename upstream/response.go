package upstream

import (
	"io"
	"net/http"
	"slices"
)

// closeDelimited reports whether only the agent closing the connection
// ends resp's body: it has no Content-Length and is not chunked, so its
// io.EOF is the same whether the agent finished or died mid-record. A
// body with either ends in a way a cut cannot fake, and a cut one fails
// its read with io.ErrUnexpectedEOF.
func closeDelimited(resp *http.Response) bool {
	return resp.ContentLength < 0 && !slices.Contains(resp.TransferEncoding, "chunked")
}

// Response is the agent's 2xx reply to one call.
type Response struct {
	Status  int
	Header  http.Header
	Retries int

	body *idleReader // resets the idle clock on every read
	raw  io.ReadCloser
	clk  *clocks
	// closeEnd: only a close ends the body (see closeDelimited).
	closeEnd bool
	// length is the body's Content-Length, -1 when not known.
	length int64
}

// Close releases the body and the call's clocks. Closing before the body
// is done cancels the agent's request.
func (r *Response) Close() {
	r.clk.release()
	r.raw.Close()
	r.clk.stop()
}

// BeforeWait sets f to run before every read of the reply from the
// agent, that is whenever the records read so far are used up and the
// next may have to be waited for: the moment to flush what was written.
func (r *Response) BeforeWait(f func()) { r.body.before = f }

// Explain turns an error met while reading the reply into the clock that
// caused it (a *core.TimeoutError) when one did.
func (r *Response) Explain(err error) error { return r.clk.explain(err, "") }

// idleReader runs the idle clock while a read waits on the agent, and
// only then: the hook before a read (a flush to the caller) is not the
// agent's time.
type idleReader struct {
	r      io.Reader
	clk    *clocks
	before func() // called before every read of the agent's reply
}

func (r *idleReader) Read(p []byte) (int, error) {
	if r.before != nil {
		r.before()
	}
	r.clk.readStarted()
	n, err := r.r.Read(p)
	r.clk.readEnded()
	return n, err
}

package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// NDJSON is the agent's side of a conversation for an agent with no
// WebSocket server (call: POST /path, reply: ndjson): one HTTP/1.1
// request whose chunked body stays open, a line per caller frame, and its
// response read as it comes, a text frame per line. It lives beside the
// WebSocket's Dial, as a Conn, so that the relay's caps, clocks and
// endings hold for it unchanged.
//
// The response ending cleanly is the agent closing with 1000; ending any
// other way is its connection lost. Close ends the request's body (the
// agent reads EOF), then the connection.
type NDJSON struct {
	body   *io.PipeWriter // the request's body: the transport sends each write as one chunk
	resp   *http.Response
	lines  *bufio.Reader
	limit  int64
	cancel context.CancelFunc // ends the request: closes its connection
	wrote  chan struct{}      // closed once the transport wrote (or failed to write) the whole request
	once   sync.Once          // Close's
	sent   sync.Once          // wrote's
}

// ndjsonType is the Content-Type of the request's body.
const ndjsonType = "application/x-ndjson"

// DialNDJSON opens the agent's side of a conversation as one POST to url
// (http://) through client (the agent's transport: HTTP/1.1, to its Unix
// socket or TCP address), with header, and waits for its response's
// headers: the agent must send them before it reads the whole body,
// which stays open. A status other than 2xx is an error. ctx bounds the
// wait for the headers only; the request lives until Close.
func DialNDJSON(ctx context.Context, url string, client *http.Client, header http.Header) (*NDJSON, error) {
	pr, pw := io.Pipe()
	rctx, cancel := context.WithCancel(context.Background())
	c := &NDJSON{body: pw, cancel: cancel, wrote: make(chan struct{}), limit: -1}
	rctx = httptrace.WithClientTrace(rctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { c.sent.Do(func() { close(c.wrote) }) },
	})
	client = own(client, pw)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, pr)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("dialing the agent's %s: %w", url, err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", ndjsonType)
	req.Header.Set("Accept", ndjsonType)
	// An unknown length makes the body chunked, its headers flushed
	// before it and each chunk flushed as written (net/http's
	// transferWriter), so no line waits in a buffer.
	req.ContentLength = -1
	stop := context.AfterFunc(ctx, cancel) // the dial's bound, until the headers come
	resp, err := client.Do(req)
	stopped := stop()
	if err == nil && !stopped {
		resp.Body.Close()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		pw.Close()
		return nil, fmt.Errorf("dialing the agent's %s: %w", url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		cancel()
		pw.Close()
		resp.Body.Close()
		return nil, fmt.Errorf("opening the agent's %s: it answered %s, not 2xx", url, resp.Status)
	}
	c.resp = resp
	c.lines = bufio.NewReader(resp.Body)
	return c, nil
}

// SetReadLimit caps a line of the response at n bytes: a longer one ends
// the conversation as a frame over limits.live.frame_bytes does.
func (c *NDJSON) SetReadLimit(n int64) { c.limit = n }

// Read returns the response's next line, without its line ending, as a
// text frame; blank lines are skipped. The response ending after a whole
// line is the agent's close, 1000; a line that is not UTF-8 is a frame a
// text frame cannot carry.
func (c *NDJSON) Read(context.Context) (websocket.MessageType, []byte, error) {
	for {
		line, err := c.line()
		if len(bytes.TrimSpace(line)) > 0 {
			if !utf8.Valid(line) {
				return 0, nil, &FrameError{Code: websocket.StatusInvalidFramePayloadData, Reason: "a line that is not UTF-8"}
			}
			return websocket.MessageText, line, nil
		}
		switch {
		case errors.Is(err, io.EOF):
			return 0, nil, websocket.CloseError{Code: websocket.StatusNormalClosure, Reason: "the agent ended its response"}
		case err != nil:
			return 0, nil, fmt.Errorf("reading the agent's response: %w", err)
		}
	}
}

// line reads one line, "\n" or "\r\n" cut off, holding at most limit
// bytes of it. A last line with no "\n" is returned with a nil error;
// the next call returns io.EOF.
func (c *NDJSON) line() ([]byte, error) {
	var line []byte
	for {
		b, err := c.lines.ReadSlice('\n')
		if c.limit >= 0 && int64(len(line)+len(bytes.TrimRight(b, "\r\n"))) > c.limit {
			return nil, websocket.ErrMessageTooBig
		}
		line = append(line, b...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		case err != nil:
			return nil, err
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

// Write sends data as one line of the request's body. The caller's frame
// must be one JSON value: one spanning lines is sent compact on one; a
// frame that is not JSON is refused 1007, a binary one 1003 (a
// *FrameError, for the caller that sent it). ctx ending while the agent
// does not read ends the request's body.
func (c *NDJSON) Write(ctx context.Context, typ websocket.MessageType, data []byte) error {
	if typ != websocket.MessageText {
		return &FrameError{Code: websocket.StatusUnsupportedData, Reason: "the agent takes text frames only (one JSON value each)"}
	}
	if !json.Valid(data) {
		return &FrameError{Code: websocket.StatusInvalidFramePayloadData, Reason: "a frame that is not one JSON value"}
	}
	line := make([]byte, 0, len(data)+1)
	if bytes.ContainsAny(data, "\r\n") {
		var b bytes.Buffer
		json.Compact(&b, data) // valid: it cannot fail
		line = append(line, b.Bytes()...)
	} else {
		line = append(line, data...)
	}
	line = append(line, '\n')
	stop := context.AfterFunc(ctx, func() { c.body.CloseWithError(ctx.Err()) })
	defer stop()
	if _, err := c.body.Write(line); err != nil {
		return fmt.Errorf("writing to the agent's request: %w", err)
	}
	return nil
}

// Close ends the request's body, so the agent reads EOF, waits for the
// transport to have written it (at most flushWait, as a close handshake
// waits), then ends the request and its connection. code and reason
// have no place on the wire.
func (c *NDJSON) Close(websocket.StatusCode, string) error {
	c.once.Do(func() {
		c.body.Close()
		t := time.NewTimer(flushWait)
		select {
		case <-c.wrote:
		case <-t.C:
		}
		t.Stop()
		c.cancel()
		c.resp.Body.Close()
	})
	return nil
}

// own is client for one conversation's request: its own connection,
// never reused, whose end ends body. net/http's transport waits, on a
// connection that failed, for the request's body to be written; a body
// that stays open would keep it waiting for ever.
func own(client *http.Client, body *io.PipeWriter) *http.Client {
	t, ok := client.Transport.(*http.Transport)
	if !ok || t.DialContext == nil {
		return client
	}
	t = t.Clone()
	t.DisableKeepAlives = true
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watched{Conn: c, body: body}, nil
	}
	return &http.Client{Transport: t}
}

// watched is the request's connection: a read that fails (the agent
// closed it, or it was reset) ends the request's body.
type watched struct {
	net.Conn
	body *io.PipeWriter
}

func (w *watched) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	if err != nil {
		w.body.CloseWithError(err)
	}
	return n, err
}

var _ Conn = (*NDJSON)(nil)

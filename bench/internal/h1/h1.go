// Package h1 is the little of HTTP/1.1 that the benchmark's hand-written
// clients speak on a raw connection (the load generator's, and the Go
// reference proxy's -mode raw): a request written out, a reply's head
// read, its body and the trailer of a chunked one.
package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http/httputil"
	"strconv"
)

// WriteRequest writes a request with a JSON body.
func WriteRequest(w io.Writer, method, path, host string, body []byte) error {
	if _, err := fmt.Fprintf(w, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, host, len(body)); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// Head is what a reply's head tells a client.
type Head struct {
	Status int
	// Length is the Content-Length, -1 when there is none.
	Length      int64
	Chunked     bool
	ContentType string
	// Close is set by "Connection: close".
	Close bool
}

// ReadHead reads a reply's status line and the headers in Head.
func ReadHead(br *bufio.Reader) (Head, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return Head{}, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return Head{}, fmt.Errorf("bad status line %q", line)
	}
	h := Head{Length: -1}
	if h.Status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return Head{}, fmt.Errorf("bad status line %q", line)
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return Head{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return h, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			h.Length, _ = strconv.ParseInt(string(value), 10, 64)
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			h.Chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Content-Type")):
			h.ContentType = contentType(value)
		case bytes.EqualFold(name, []byte("Connection")):
			h.Close = bytes.EqualFold(value, []byte("close"))
		}
	}
}

// contentType is v as a string; the stand-in agent's types are constants,
// so that reading its replies' heads allocates nothing.
func contentType(v []byte) string {
	switch string(v) {
	case "application/json":
		return "application/json"
	case "text/event-stream":
		return "text/event-stream"
	case "application/x-ndjson":
		return "application/x-ndjson"
	case "text/plain; charset=utf-8":
		return "text/plain; charset=utf-8"
	}
	return string(v)
}

// Body reads the body that follows h from br: chunked, or Length bytes;
// nil when the head gives neither (the body runs to the connection's end).
func (h Head) Body(br *bufio.Reader) io.Reader {
	switch {
	case h.Chunked:
		return httputil.NewChunkedReader(br)
	case h.Length >= 0:
		return io.LimitReader(br, h.Length)
	}
	return nil
}

// ReadTrailer reads the trailer after a chunked body's last chunk, up to
// its blank line, so that the connection can carry the next request.
func ReadTrailer(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
}

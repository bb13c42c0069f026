package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// maxDetail bounds how much of an agent's error body is read and shown.
const maxDetail = 64 << 10

// readDetail reads the agent's message out of an error reply: the
// "detail", "error" or "message" of a JSON body, the text of an HTML page,
// or the body itself.
func readDetail(resp *http.Response) (string, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDetail))
	if err != nil {
		return "", fmt.Errorf("reading agent error reply: %w", err)
	}
	return detailOf(b, resp.Header.Get("Content-Type"), resp.StatusCode), nil
}

var (
	htmlTags   = regexp.MustCompile(`(?s)<(script|style)[^>]*>.*?</(script|style)>|<[^>]*>`)
	whitespace = regexp.MustCompile(`\s+`)
)

func detailOf(b []byte, contentType string, status int) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return http.StatusText(status)
	}
	if json.Valid(b) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) == nil {
			for _, k := range []string{"detail", "error", "message"} {
				if v, ok := obj[k]; ok {
					return messageOf(v)
				}
			}
		}
		var s string
		if json.Unmarshal(b, &s) == nil {
			return s
		}
		return compact(b)
	}
	text := string(b)
	if strings.Contains(strings.ToLower(contentType), "html") || strings.HasPrefix(text, "<") {
		text = html.UnescapeString(htmlTags.ReplaceAllString(text, " "))
	}
	text = strings.TrimSpace(whitespace.ReplaceAllString(text, " "))
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	if len(text) > 2000 {
		text = text[:2000] + "…"
	}
	return text
}

// messageOf is the text of an error value: a string as is, an object's
// "message" (or "detail"), anything else as compact JSON.
func messageOf(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) == nil {
		for _, k := range []string{"message", "detail"} {
			if m, ok := obj[k]; ok && json.Unmarshal(m, &s) == nil {
				return s
			}
		}
	}
	return compact(v)
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// Output reads a unary reply into the value of the platform's
// {"output": …}: a JSON reply as is (or its "output" for a method whose
// agent already answers in the envelope), a text reply as a string, an
// empty or 204 reply as null, and a streamed reply (SSE, ndjson) as the
// array of its records. A reply whose end cut a record, as a stream
// would find it, is an error wrapping io.ErrUnexpectedEOF.
func (r *Response) Output(m *config.Method, maxReply int64, maxRecord int) (json.RawMessage, error) {
	b, err := r.readAll(maxReply)
	if err != nil {
		return nil, r.Explain(fmt.Errorf("reading agent reply: %w", err))
	}
	if int64(len(b)) > maxReply {
		return nil, core.ErrReplyTooLarge
	}
	if r.Status == http.StatusNoContent || len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("null"), nil
	}
	var out json.RawMessage
	switch f := FormatFor(m.Reply, r.Header.Get("Content-Type")); f {
	case FormatSSE, FormatLines:
		out, err = collect(newReplyStream(f, bytes.NewReader(b), maxRecord, r.closeEnd))
	case FormatText:
		out, err = r.textOutput(b)
	case FormatJSON:
		var ok bool
		out, ok, err = r.jsonOutput(b)
		if !ok && err == nil {
			return nil, &core.ReplyError{Msg: "agent replied invalid JSON with Content-Type " + r.Header.Get("Content-Type")}
		}
	default: // sniff: JSON when it parses, text otherwise
		var ok bool
		if out, ok, err = r.jsonOutput(b); !ok && err == nil {
			out, err = r.textOutput(b)
		}
	}
	if err != nil {
		return nil, err
	}
	if m.Output == config.OutputAsIs {
		return unwrapOutput(out)
	}
	return out, nil
}

// readAll reads the reply's body whole, up to max bytes and one more (a
// reply longer than max). A body of known length within max is read
// into one buffer of that size, and a byte more: room for the read that
// finds its end.
func (r *Response) readAll(max int64) ([]byte, error) {
	if r.length < 0 || r.length > max {
		return io.ReadAll(io.LimitReader(r.body, max+1))
	}
	b := make([]byte, 0, r.length+1)
	for {
		n, err := r.body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case len(b) == cap(b): // not from net/http, whose body ends at its length
			rest, err := io.ReadAll(io.LimitReader(r.body, max+1-int64(len(b))))
			return append(b, rest...), err
		}
	}
}

// jsonOutput compacts a JSON reply, and reports false when it is not
// JSON. When only a close ended the reply, a number, or an object, array
// or string that stops short, may have been cut by it: an error wrapping
// io.ErrUnexpectedEOF.
func (r *Response) jsonOutput(b []byte) (json.RawMessage, bool, error) {
	c, ok := rawjson.AppendCompact(make([]byte, 0, len(b)), b)
	if r.closeEnd && (ok && endsInDigit(b) || !ok && cutJSON(b)) {
		return nil, ok, errCutRecord
	}
	return c, ok, nil
}

// cutJSON reports whether b is an object, array or string that ended too
// soon.
func cutJSON(b []byte) bool {
	b = bytes.TrimSpace(bytes.TrimPrefix(b, utf8BOM))
	if len(b) == 0 || b[0] != '{' && b[0] != '[' && b[0] != '"' {
		return false
	}
	var v json.RawMessage
	return errors.Is(json.NewDecoder(bytes.NewReader(b)).Decode(&v), io.ErrUnexpectedEOF)
}

// textOutput is a text reply as a JSON string. When only a close ended
// the reply, a last character left incomplete may have been cut by it.
func (r *Response) textOutput(b []byte) (json.RawMessage, error) {
	if r.closeEnd && incompleteSuffix(b) > 0 {
		return nil, errCutRecord
	}
	return json.Marshal(strings.ToValidUTF8(string(b), "\uFFFD"))
}

func unwrapOutput(v json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil || obj == nil {
		return nil, &core.ReplyError{Msg: `agent reply is not an object {"output": …} (the method's output is as_is)`}
	}
	out, ok := obj["output"]
	if !ok {
		return nil, &core.ReplyError{Msg: `agent reply has no "output" key (the method's output is as_is)`}
	}
	return out, nil
}

// collect gathers a stream's records into one JSON array.
func collect(s core.Records) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	n := 0
	for s.Next() {
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(s.Record())
		n++
	}
	if err := s.Err(); err != nil {
		var ae *core.AgentError
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, err
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

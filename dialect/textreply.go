package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// dialectText is a plain text reply (text/plain, the AI SDK's text stream
// protocol, any agent that streams bare text): its deframed records are
// {"output": "<chunk>"}, each chunk a piece of the answer. Detection alone
// picks it; it is not a dialect a method names.
const dialectText config.Dialect = "text"

// outputText is the text of a record {"output": "<text>"}, as the text
// deframer makes them.
func outputText(rec []byte) (string, bool) {
	if !bytes.HasPrefix(rec, []byte(`{"output":"`)) {
		return "", false
	}
	// The deframer's own form, {"output":"<text>"} and nothing more.
	s := scan{b: rec, i: len(`{"output":`)}
	if end, plain := s.stringEnd(); !s.bad && end == len(rec)-1 && rec[end] == '}' {
		inside := rec[s.i+1 : end-1]
		if plain {
			return string(inside), true
		}
		return unquote(inside), true
	}
	return outputTextSlow(rec)
}

// outputTextSlow is outputText by encoding/json.
func outputTextSlow(rec []byte) (string, bool) {
	if !bytes.HasPrefix(rec, []byte(`{"output":"`)) {
		return "", false
	}
	var o struct {
		Output *string `json:"output"`
	}
	if json.Unmarshal(rec, &o) != nil || o.Output == nil {
		return "", false
	}
	return *o.Output, true
}

// textMapper maps a plain text reply: every chunk is text.
type textMapper struct{}

func (textMapper) Map(out []Event, _ string, rec []byte) []Event {
	if s, ok := outputText(rec); ok {
		return append(out, Event{Kind: Text, Text: s})
	}
	return out
}

// slow is Map by encoding/json.
func (textMapper) slow(out []Event, _ string, rec []byte) []Event {
	if s, ok := outputTextSlow(rec); ok {
		return append(out, Event{Kind: Text, Text: s})
	}
	return out
}

func (textMapper) Flush(out []Event) []Event { return out }

// dataStream reads the AI SDK's legacy (v4) data stream protocol, which
// is not SSE but lines "<code>:<json>\n" in a text reply (header
// x-vercel-ai-data-stream: v1): the lines are joined from the text
// chunks, whatever their cut. Codes: 0 text, g reasoning, 9 tool call, a
// tool result, 3 error, d finish message; the rest are skipped. A line
// is held up to max bytes: a longer one ends the stream with
// errDataLineTooLarge.
type dataStream struct {
	buf []byte
	max int
}

var errDataLineTooLarge = fmt.Errorf("a data stream line: %w", core.ErrRecordTooLarge)

// mapChunk maps a text chunk of the stream.
func (d *dataStream) mapChunk(out []Event, chunk string) []Event {
	from := len(d.buf) // the bytes before hold no newline
	d.buf = append(d.buf, chunk...)
	ended := false
	for {
		i := bytes.IndexByte(d.buf[from:], '\n')
		if i < 0 {
			break
		}
		i, from = i+from, 0
		if i > d.maxLine() {
			return append(out, Event{Kind: Error, Err: errDataLineTooLarge})
		}
		out = dataLine(out, d.buf[:i])
		d.buf, ended = d.buf[i+1:], true
	}
	if len(d.buf) > d.maxLine() {
		return append(out, Event{Kind: Error, Err: errDataLineTooLarge})
	}
	if ended {
		// The start of the next line, at most this chunk, without the
		// lines before it.
		d.buf = append([]byte(nil), d.buf...)
	}
	return out
}

func (d *dataStream) maxLine() int {
	if d.max <= 0 {
		return defaultMaxRecord
	}
	return d.max
}

// flush maps a last line the stream did not end with "\n".
func (d *dataStream) flush(out []Event) []Event {
	if len(bytes.TrimSpace(d.buf)) > 0 {
		out = dataLine(out, d.buf)
	}
	d.buf = nil
	return out
}

// scanString reads b, one JSON string, into *dst as json.Unmarshal
// would, and reports false when it cannot read it so.
func scanString(b []byte, dst *string) bool {
	s := scan{b: b}
	if s.peek() != '"' {
		return false
	}
	s.str(dst)
	s.space()
	return !s.bad && s.i == len(b)
}

func dataLine(out []Event, line []byte) []Event {
	code, payload, ok := bytes.Cut(bytes.TrimRight(line, "\r"), []byte(":"))
	if !ok {
		return out
	}
	var s string
	switch string(code) {
	case "0", "g":
		if !scanString(payload, &s) && json.Unmarshal(payload, &s) != nil {
			return out
		}
		if string(code) == "g" {
			return append(out, Event{Kind: Reasoning, Text: s})
		}
		return append(out, Event{Kind: Text, Text: s})
	case "3":
		if json.Unmarshal(payload, &s) != nil {
			s = string(payload)
		}
		return append(out, Event{Kind: Error, Text: s})
	case "9":
		var c struct {
			ToolCallID string          `json:"toolCallId"`
			ToolName   string          `json:"toolName"`
			Args       json.RawMessage `json:"args"`
		}
		if json.Unmarshal(payload, &c) == nil {
			return append(out, Event{Kind: ToolCall, ID: c.ToolCallID, Name: c.ToolName, JSON: orEmpty(compact(c.Args))})
		}
	case "a":
		var r struct {
			ToolCallID string          `json:"toolCallId"`
			Result     json.RawMessage `json:"result"`
		}
		if json.Unmarshal(payload, &r) == nil {
			return append(out, Event{Kind: ToolResult, ID: r.ToolCallID, JSON: orNull(compact(r.Result))})
		}
	case "d":
		var f struct {
			FinishReason string          `json:"finishReason"`
			Usage        json.RawMessage `json:"usage"`
		}
		if json.Unmarshal(payload, &f) == nil {
			return append(out, Event{Kind: End, Finish: f.FinishReason, Usage: compact(f.Usage)})
		}
	}
	return out
}

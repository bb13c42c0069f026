package upstream

import (
	"bufio"
	"bytes"
	"io"
	"strings"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// Format is how an agent's reply body is framed.
type Format string

// The formats a reply can be deframed from.
const (
	FormatSSE   Format = "sse"    // text/event-stream
	FormatLines Format = "ndjson" // application/x-ndjson, application/jsonl, application/json-seq, …
	FormatText  Format = "text"   // text/* chunks
	FormatJSON  Format = "json"   // one or more JSON values (application/json)
	FormatSniff Format = "sniff"  // no usable Content-Type: decide from the first bytes
)

// lineTypes are the media types of one JSON value per line.
var lineTypes = map[string]bool{
	"application/x-ndjson":      true,
	"application/ndjson":        true,
	"application/jsonl":         true,
	"application/x-jsonl":       true,
	"application/jsonlines":     true,
	"application/x-jsonlines":   true,
	"application/json-seq":      true, // RFC 7464
	"application/stream+json":   true,
	"application/x-json-stream": true,
}

// FormatFor picks the framing of a reply: the method's reply setting
// unless it is config.ReplyAuto (or empty), else the response's
// Content-Type. The media type is parsed, so case and parameters do not
// matter: "Text/Event-Stream; charset=UTF-8" is SSE (lesson 5 in
// DESIGN.md). A missing or unknown type is left to sniffing.
func FormatFor(reply config.Reply, contentType string) Format {
	switch reply {
	case config.ReplySSE:
		return FormatSSE
	case config.ReplyNDJSON:
		return FormatLines
	case config.ReplyText:
		return FormatText
	case config.ReplyJSON:
		return FormatJSON
	}
	// The media type is what precedes the parameters, in any case. (Done
	// by hand: mime.ParseMediaType allocates a map for the parameters,
	// twice per call, to decide the same thing.)
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	switch {
	case mt == "text/event-stream":
		return FormatSSE
	case lineTypes[mt]:
		return FormatLines
	case mt == "application/json" || strings.HasSuffix(mt, "+json"): // RFC 6839 structured syntax suffix
		return FormatJSON
	case strings.HasPrefix(mt, "text/"):
		return FormatText
	}
	return FormatSniff
}

// NewStream deframes r, read as format f says, into records: each one
// compact JSON value with no newline in it, in the order the agent sent
// them. maxRecord (>0) caps one record's size in bytes; zero or less means
// 8 MiB. Nothing is read until the first call to Next, and Close does
// nothing: r is the caller's to close (a Response closes its body).
//
// Err is nil when the reply ended cleanly. An error the agent reported in
// band (SSE "event: error", a record that is exactly {"error": …}) is a
// *core.AgentError; a record over the size limit is
// core.ErrRecordTooLarge; anything else is the read error that ended the
// reply.
//
// Whatever the format, a leading UTF-8 byte order mark is dropped, every
// record is valid UTF-8 (bad bytes become U+FFFD), and a read error other
// than io.EOF ends the stream with that error wrapped, dropping any record
// it cut short. io.EOF is taken as the reply's own end (its Content-Length
// reached, its last chunk read); a last record cut short all the same is
// dropped and the stream fails with an error wrapping io.ErrUnexpectedEOF.
func NewStream(f Format, r io.Reader, maxRecord int) core.Records {
	return newReplyStream(f, r, maxRecord, false)
}

// newReplyStream is NewStream for a reply that only a close of the
// connection ends (closeEnd), where io.EOF cannot show the last record
// whole, or one that has its own end.
func newReplyStream(f Format, r io.Reader, maxRecord int, closeEnd bool) core.Records {
	if maxRecord <= 0 {
		maxRecord = defaultMaxRecord
	}
	br := bufio.NewReaderSize(&stickyReader{r: r}, readBufferSize)
	return newStream(f, frame{br: br, max: maxRecord, closeEnd: closeEnd})
}

// newStream builds the deframer for f around fr, which holds no record yet.
func newStream(f Format, fr frame) core.Records {
	switch f {
	case FormatSSE:
		return &sseStream{frame: fr}
	case FormatLines:
		return &linesStream{frame: fr}
	case FormatText:
		return newTextStream(fr)
	case FormatJSON:
		return &jsonStream{frame: fr}
	}
	return &sniffStream{fr: fr}
}

// sniffStream decides the format from the first bytes of the reply, on
// the first call to Next.
type sniffStream struct {
	fr     frame
	stream core.Records
}

func (s *sniffStream) Next() bool {
	if s.stream == nil {
		s.stream = newStream(sniff(s.fr.br), s.fr)
	}
	return s.stream.Next()
}

func (s *sniffStream) Record() []byte {
	if s.stream == nil {
		return nil
	}
	return s.stream.Record()
}

// Event is the SSE event type of the current record, when the reply is
// an event stream (see eventStream).
func (s *sniffStream) Event() []byte {
	if e, ok := s.stream.(eventStream); ok {
		return e.Event()
	}
	return nil
}

func (s *sniffStream) Err() error {
	if s.stream == nil {
		return nil
	}
	return s.stream.Err()
}

// Close does nothing: the reader is the caller's.
func (s *sniffStream) Close() {}

// sniffPrefixes are the starts of a reply that decide its format, besides
// the first bytes of JSON numbers, strings, objects and arrays.
var sniffPrefixes = []struct {
	prefix string
	format Format
}{
	{"true", FormatJSON},
	{"false", FormatJSON},
	{"null", FormatJSON},
	{":", FormatSSE}, // a comment, often the first thing a server sends
	{"data:", FormatSSE},
	{"event:", FormatSSE},
	{"id:", FormatSSE},
	{"retry:", FormatSSE},
}

// sniff peeks at the first bytes that are not whitespace, without
// consuming them, and picks the format they start: JSON, SSE, or else
// text. A reply of nothing but whitespace is JSON: no records.
func sniff(br *bufio.Reader) Format {
	skipBOM(br)
	space, want := 0, 1 // whitespace bytes seen; bytes to peek at
	for {
		b, err := br.Peek(want)
		for space < len(b) && isJSONSpace(b[space]) {
			space++
		}
		switch {
		case space == br.Size():
			br.Discard(space) // a buffer full of whitespace: drop it, look further
			space, want = 0, 1
			continue
		case space < len(b):
			if f, ok := sniffFrom(b[space:]); ok || err != nil {
				return f
			}
		case err != nil:
			return FormatJSON
		}
		want = max(len(b)+1, br.Buffered())
	}
}

// sniffFrom picks the format that b starts, and reports false when b is
// too short to tell.
func sniffFrom(b []byte) (Format, bool) {
	switch c := b[0]; {
	case c == '{' || c == '[' || c == '"' || c == '-' || '0' <= c && c <= '9':
		return FormatJSON, true
	}
	short := false
	for _, p := range sniffPrefixes {
		if bytes.HasPrefix(b, []byte(p.prefix)) {
			return p.format, true
		}
		if len(b) < len(p.prefix) && strings.HasPrefix(p.prefix, string(b)) {
			short = true
		}
	}
	return FormatText, !short
}

// Interface guards.
var (
	_ core.Records = (*sseStream)(nil)
	_ core.Records = (*linesStream)(nil)
	_ core.Records = (*textStream)(nil)
	_ core.Records = (*jsonStream)(nil)
	_ core.Records = (*sniffStream)(nil)
	_ eventStream  = (*sseStream)(nil)
)

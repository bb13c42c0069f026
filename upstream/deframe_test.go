package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/deframe")

// goldenFormats maps an input file's extension in testdata/deframe to the
// format it is deframed as.
var goldenFormats = map[string]Format{
	".sse":    FormatSSE,
	".ndjson": FormatLines,
	".text":   FormatText,
	".json":   FormatJSON,
	".sniff":  FormatSniff,
}

type goldenInput struct {
	name   string // file name without extension
	format Format
	data   []byte
}

// goldenInputs reads every input file in testdata/deframe, or those of
// one format.
func goldenInputs(tb testing.TB, only Format) []goldenInput {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "deframe", "*"))
	if err != nil {
		tb.Fatal(err)
	}
	var inputs []goldenInput
	for _, p := range paths {
		ext := filepath.Ext(p)
		f, ok := goldenFormats[ext]
		if !ok || only != "" && f != only {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		inputs = append(inputs, goldenInput{strings.TrimSuffix(filepath.Base(p), ext), f, data})
	}
	if len(inputs) == 0 {
		tb.Fatalf("no golden inputs for %q", only)
	}
	return inputs
}

// deframe reads all of a stream.
func deframe(f Format, r io.Reader, maxRecord int) ([]string, error) {
	return readAll(NewStream(f, r, maxRecord))
}

// deframeClosed reads all of a stream whose end is only a close.
func deframeClosed(f Format, r io.Reader, maxRecord int) ([]string, error) {
	return readAll(newReplyStream(f, r, maxRecord, true))
}

func readAll(s core.Records) ([]string, error) {
	var records []string
	for s.Next() {
		records = append(records, string(s.Record()))
	}
	if s.Next() {
		return records, errors.New("Next is true after the end")
	}
	return records, s.Err()
}

// render is the golden form of a stream: its records one per line, then
// END and its error.
func render(records []string, err error) string {
	var b strings.Builder
	for _, r := range records {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "END %v\n", err)
	return b.String()
}

// checkRecords fails unless every record is one valid, compact JSON value
// of valid UTF-8 with no newline.
func checkRecords(t *testing.T, records []string) {
	t.Helper()
	for _, r := range records {
		var c bytes.Buffer
		switch {
		case !json.Valid([]byte(r)):
			t.Errorf("record %q is not valid JSON", r)
		case json.Compact(&c, []byte(r)) != nil || c.String() != r:
			t.Errorf("record %q is not compact, want %q", r, c.String())
		case strings.ContainsAny(r, "\r\n"):
			t.Errorf("record %q holds a line end", r)
		case !utf8Valid(r):
			t.Errorf("record %q is not valid UTF-8", r)
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// outputText is the text of a text stream's records, which are cut where
// the reads were: {"output": "a"}, {"output": "b"} is "ab".
func outputText(t *testing.T, records []string) string {
	t.Helper()
	var b strings.Builder
	for _, r := range records {
		var rec struct{ Output *string }
		if err := json.Unmarshal([]byte(r), &rec); err != nil || rec.Output == nil {
			t.Fatalf("text record %q is not {\"output\": text}", r)
		}
		b.WriteString(*rec.Output)
	}
	return b.String()
}

func errText(err error) string { return fmt.Sprint(err) }

func TestDeframeGolden(t *testing.T) {
	for _, in := range goldenInputs(t, "") {
		t.Run(in.name, func(t *testing.T) {
			records, err := deframe(in.format, bytes.NewReader(in.data), 0)
			checkRecords(t, records)
			got := render(records, err)
			path := filepath.Join("testdata", "deframe", in.name+".golden")
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("deframe(%s, %q) =\n%s\nwant\n%s", in.format, in.data, got, want)
			}
		})
	}
}

// chunkReader returns its chunks one Read at a time.
type chunkReader struct{ chunks [][]byte }

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.chunks) > 0 && len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	return n, nil
}

// splitAt cuts data at the given ascending offsets.
func splitAt(data []byte, cuts ...int) *chunkReader {
	c := &chunkReader{}
	last := 0
	for _, at := range cuts {
		c.chunks = append(c.chunks, data[last:at])
		last = at
	}
	c.chunks = append(c.chunks, data[last:])
	return c
}

// randomSplit cuts data into chunks of random sizes, small or large, as
// seed decides.
func randomSplit(data []byte, seed uint64) *chunkReader {
	rng := rand.New(rand.NewPCG(seed, seed>>32|1))
	sizes := []int{2, 3, 8, 64, 4096}
	spread := sizes[rng.IntN(len(sizes))]
	c := &chunkReader{}
	for len(data) > 0 {
		n := min(1+rng.IntN(spread), len(data))
		c.chunks = append(c.chunks, data[:n])
		data = data[n:]
	}
	return c
}

// crlfSplits are the offsets that fall between a CR and an LF.
func crlfSplits(data []byte) []int {
	var at []int
	for i := 1; i < len(data); i++ {
		if data[i-1] == '\r' && data[i] == '\n' {
			at = append(at, i)
		}
	}
	return at
}

// sameStream compares what two readings of the same reply gave: the same
// records and end, or for text the same text, whatever the reads were.
func sameStream(t *testing.T, f Format, how string, want []string, wantErr error, got []string, gotErr error) {
	t.Helper()
	checkRecords(t, got)
	if errText(gotErr) != errText(wantErr) {
		t.Errorf("%s: Err() = %v, want %v", how, gotErr, wantErr)
	}
	if f == FormatText {
		if g, w := outputText(t, got), outputText(t, want); g != w {
			t.Errorf("%s: text = %q, want %q", how, g, w)
		}
		return
	}
	if g, w := render(got, gotErr), render(want, wantErr); g != w {
		t.Errorf("%s: records =\n%s\nwant\n%s", how, g, w)
	}
}

// TestDeframeChunking replays every golden input split across reads in
// every way that broke proxies before (lesson 8 in DESIGN.md): one byte at
// a time, at random, between a CR and its LF, with the data and io.EOF in
// one read.
func TestDeframeChunking(t *testing.T) {
	for _, in := range goldenInputs(t, "") {
		t.Run(in.name, func(t *testing.T) {
			want, wantErr := deframe(in.format, bytes.NewReader(in.data), 0)
			format := in.format
			if format == FormatSniff {
				format = sniff(bufio.NewReader(bytes.NewReader(in.data)))
			}
			readers := map[string]func() io.Reader{
				"one read":        func() io.Reader { return splitAt(in.data) },
				"one byte a read": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(in.data)) },
				"data with EOF":   func() io.Reader { return iotest.DataErrReader(bytes.NewReader(in.data)) },
				"half reads":      func() io.Reader { return iotest.HalfReader(bytes.NewReader(in.data)) },
			}
			for _, at := range crlfSplits(in.data) {
				readers[fmt.Sprintf("split between CR and LF at %d", at)] = func() io.Reader { return splitAt(in.data, at) }
			}
			for at := range len(in.data) {
				readers[fmt.Sprintf("split at %d", at)] = func() io.Reader { return splitAt(in.data, at) }
			}
			for seed := range uint64(200) {
				readers[fmt.Sprintf("random split, seed %d", seed)] = func() io.Reader { return randomSplit(in.data, seed) }
			}
			for how, r := range readers {
				got, gotErr := deframe(in.format, r(), 0)
				sameStream(t, format, how, want, wantErr, got, gotErr)
			}
		})
	}
}

func TestFormatFor(t *testing.T) {
	tests := []struct {
		reply       config.Reply
		contentType string
		want        Format
	}{
		{config.ReplyAuto, "text/event-stream", FormatSSE},
		{config.ReplyAuto, "text/event-stream; charset=utf-8", FormatSSE},
		{config.ReplyAuto, "Text/Event-Stream; charset=UTF-8", FormatSSE},
		{config.ReplyAuto, "TEXT/EVENT-STREAM;charset=\"utf-8\"", FormatSSE},
		{"", "text/event-stream", FormatSSE},
		{config.ReplyAuto, "application/x-ndjson", FormatLines},
		{config.ReplyAuto, "application/x-ndjson; charset=utf-8", FormatLines},
		{config.ReplyAuto, "application/ndjson", FormatLines},
		{config.ReplyAuto, "application/jsonl", FormatLines},
		{config.ReplyAuto, "application/x-jsonlines", FormatLines},
		{config.ReplyAuto, "Application/JSON-Seq", FormatLines},
		{config.ReplyAuto, "application/json", FormatJSON},
		{config.ReplyAuto, "application/json; charset=utf-8", FormatJSON},
		{config.ReplyAuto, "APPLICATION/JSON;CHARSET=UTF-8", FormatJSON},
		{config.ReplyAuto, "application/problem+json", FormatJSON},
		{config.ReplyAuto, "text/plain", FormatText},
		{config.ReplyAuto, "text/plain; charset=iso-8859-1", FormatText},
		{config.ReplyAuto, "text/markdown", FormatText},
		{config.ReplyAuto, "text/html; charset=utf-8", FormatText},
		{config.ReplyAuto, "", FormatSniff},
		{config.ReplyAuto, "application/octet-stream", FormatSniff},
		{config.ReplyAuto, "not a media type", FormatSniff},
		{config.ReplyAuto, "text/event-stream; charset", FormatSSE}, // a broken parameter does not hide the type
		{config.ReplySSE, "application/json", FormatSSE},
		{config.ReplyNDJSON, "text/event-stream", FormatLines},
		{config.ReplyText, "application/json", FormatText},
		{config.ReplyJSON, "text/plain", FormatJSON},
		{config.ReplyJSON, "", FormatJSON},
	}
	for _, tt := range tests {
		if got := FormatFor(tt.reply, tt.contentType); got != tt.want {
			t.Errorf("FormatFor(%q, %q) = %v, want %v", tt.reply, tt.contentType, got, tt.want)
		}
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		in   string
		want Format
	}{
		{`{"a":1}`, FormatJSON},
		{"  \r\n\t[1]", FormatJSON},
		{`"s"`, FormatJSON},
		{"-1", FormatJSON},
		{"7", FormatJSON},
		{"true", FormatJSON},
		{"false ", FormatJSON},
		{"null", FormatJSON},
		{"\xef\xbb\xbf{}", FormatJSON},
		{"data: x\n\n", FormatSSE},
		{"data:x", FormatSSE},
		{"event: message\n", FormatSSE},
		{": comment\n", FormatSSE},
		{"\nid: 1\n", FormatSSE},
		{"retry: 10\n", FormatSSE},
		{"\xef\xbb\xbfdata: x", FormatSSE},
		{"Hello", FormatText},
		{"the end", FormatText}, // starts like true, is not
		{"nothing", FormatText},
		{"fals", FormatText},
		{"dat", FormatText},
		{"data", FormatText},
		{"<html>", FormatText},
		{"", FormatJSON},
		{" \n ", FormatJSON},
		{strings.Repeat(" ", 3*readBufferSize) + "data: x", FormatSSE},
	}
	for _, tt := range tests {
		br := bufio.NewReaderSize(&stickyReader{r: strings.NewReader(tt.in)}, readBufferSize)
		if got := sniff(br); got != tt.want {
			t.Errorf("sniff(%.40q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestSniffKeepsLeadingText(t *testing.T) {
	records, err := deframe(FormatSniff, iotest.OneByteReader(strings.NewReader("  \n the text")), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outputText(t, records), "  \n the text"; got != want {
		t.Errorf("deframe(sniff) text = %q, want %q", got, want)
	}
}

func TestDeframeAgentErrors(t *testing.T) {
	tests := []struct {
		format  Format
		in      string
		records int
		want    core.AgentError
	}{
		{FormatLines, `{"error":"boom"}`, 0, core.AgentError{Message: "boom"}},
		{FormatLines, `{"n":1}` + "\n" + ` { "error" : "spaced" } `, 1, core.AgentError{Message: "spaced"}},
		{FormatLines, `{"error":{"message":"m","code":"C"}}`, 0, core.AgentError{Code: "C", Message: "m"}},
		{FormatLines, `{"error":{"message":"m","code":429}}`, 0, core.AgentError{Code: "429", Message: "m"}},
		{FormatLines, `{"error":{"message":"m","code":true}}`, 0, core.AgentError{Message: "m"}},
		{FormatLines, `{"error":{"detail":"d"}}`, 0, core.AgentError{Message: `{"detail":"d"}`}},
		{FormatLines, `{"error":{"code":"C"}}`, 0, core.AgentError{Code: "C", Message: `{"code":"C"}`}},
		{FormatLines, `{"error":{"message":""}}`, 0, core.AgentError{Message: `{"message":""}`}},
		{FormatLines, `{"error":[1,"two"]}`, 0, core.AgentError{Message: `[1,"two"]`}},
		{FormatLines, `{"error":12345678901234567890123}`, 0, core.AgentError{Message: "12345678901234567890123"}},
		{FormatLines, `{"error":null}`, 0, core.AgentError{Message: "null"}},
		{FormatLines, `{"\u0065rror":"escaped key"}`, 0, core.AgentError{Message: "escaped key"}},
		{FormatLines, `{"error":"a \"quoted\" \\ text"}`, 0, core.AgentError{Message: `a "quoted" \ text`}},
		{FormatJSON, `[1, {"error": "in array"}, 3]`, 1, core.AgentError{Message: "in array"}},
		{FormatJSON, `{"error": {"message": "whole reply"}}`, 0, core.AgentError{Message: "whole reply"}},
		{FormatSSE, "event: error\ndata: plain\n\n", 0, core.AgentError{Message: "plain"}},
		{FormatSSE, "event: error\ndata: \"a string\"\n\n", 0, core.AgentError{Message: "a string"}},
		{FormatSSE, "event: error\ndata: {\"message\": \"m\", \"code\": \"C\"}\n\n", 0, core.AgentError{Code: "C", Message: "m"}},
		{FormatSSE, "event: error\ndata: {\"error\": \"wrapped\"}\n\n", 0, core.AgentError{Message: "wrapped"}},
		{FormatSSE, "event: error\ndata: [DONE]\n\n", 0, core.AgentError{Message: "[DONE]"}},
		{FormatSSE, "event: error\ndata: line 1\ndata: line 2\n\n", 0, core.AgentError{Message: "line 1\nline 2"}},
		{FormatSSE, "event: error\ndata: bad \xff\n\n", 0, core.AgentError{Message: "bad \uFFFD"}},
		{FormatSSE, "event: error\ndata: {\"error\": \"unquoted\" \"quote\"}\n\n", 0, core.AgentError{Message: `{"error": "unquoted" "quote"}`}},
		{FormatSSE, "data: {\"error\": \"interpolated \"quote\"\"}\n\n", 0, core.AgentError{Message: `{"error": "interpolated "quote""}`}},
		{FormatSSE, "data:  { \"error\": cut off\n\n", 0, core.AgentError{Message: ` { "error": cut off`}},
		{FormatSSE, "data: {\"error\":\"x\"}\n", 0, core.AgentError{Message: "x"}},
		{FormatSSE, "event: error\ndata: 1\n", 0, core.AgentError{Message: "1"}},
	}
	for _, tt := range tests {
		records, err := deframe(tt.format, strings.NewReader(tt.in), 0)
		var ae *core.AgentError
		if !errors.As(err, &ae) {
			t.Errorf("deframe(%s, %q) = %q, %v, want %#v", tt.format, tt.in, records, err, tt.want)
			continue
		}
		got := *ae
		got.Raw = "" // TestAgentErrorRaw
		if got != tt.want || len(records) != tt.records {
			t.Errorf("deframe(%s, %q) = %d records, %#v, want %d, %#v", tt.format, tt.in, len(records), got, tt.records, tt.want)
		}
	}
}

func TestDeframeNotErrors(t *testing.T) {
	tests := []struct {
		format Format
		in     string
		want   string
	}{
		{FormatLines, `{"error":"x","n":1}`, `{"error":"x","n":1}`},
		{FormatLines, `{"n":1,"error":"x"}`, `{"n":1,"error":"x"}`},
		{FormatLines, `{"errors":"x"}`, `{"errors":"x"}`},
		{FormatLines, `{"error":{"a":"}"},"b":1}`, `{"error":{"a":"}"},"b":1}`},
		{FormatLines, `{"error":"x","error":"y"}`, `{"error":"x","error":"y"}`},
		{FormatLines, `["error"]`, `["error"]`},
		{FormatLines, `{}`, `{}`},
		{FormatLines, `{"error" "x"}` + "\n", `{"output":"{\"error\" \"x\"}"}`},
		{FormatSSE, "event: errors\ndata: 1\n\n", `1`},
		{FormatSSE, "event: error\n\ndata: 1\n\n", `1`}, // an event without data is not dispatched
		{FormatSSE, "event: error\nevent: message\ndata: 1\n\n", `1`},
		{FormatSSE, "data: {\"errata\": 1\n\n", `{"output":"{\"errata\": 1"}`},
		{FormatSSE, "data: [\"error\"\n\n", `{"output":"[\"error\""}`},
	}
	for _, tt := range tests {
		records, err := deframe(tt.format, strings.NewReader(tt.in), 0)
		if err != nil || len(records) != 1 || records[0] != tt.want {
			t.Errorf("deframe(%s, %q) = %q, %v, want [%s], <nil>", tt.format, tt.in, records, err, tt.want)
		}
	}
}

// repeatReader reads n copies of a byte, counting what was read.
type repeatReader struct {
	block []byte // the byte, many times
	n     int64
	read  *int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(int64(len(p)), r.n)], r.block)
	r.n -= int64(n)
	*r.read += int64(n)
	return n, nil
}

// longReply is prefix, then n copies of b, then suffix; *read counts the
// bytes of the long part read.
func longReply(prefix string, b byte, n int64, suffix string, read *int64) io.Reader {
	block := bytes.Repeat([]byte{b}, 64<<10)
	return io.MultiReader(strings.NewReader(prefix), &repeatReader{block: block, n: n, read: read}, strings.NewReader(suffix))
}

// TestDeframeMaxRecord feeds records far over the cap from a reader that
// makes them up as it goes: the stream must fail with core.ErrRecordTooLarge
// after reading little more than the cap, holding little more than it,
// and must pass over what it does not keep (comments, text) in constant
// memory.
func TestDeframeMaxRecord(t *testing.T) {
	const (
		huge = 100 << 20
		max  = 1 << 20
	)
	tests := []struct {
		name     string
		format   Format
		prefix   string
		b        byte
		n        int64
		suffix   string
		max      int
		want     []string // nil: do not check the records
		wantErr  error
		readsAll bool // the long part must be read through
	}{
		{"sse data line", FormatSSE, "data: ", 'x', huge, "\n\n", max, []string{}, core.ErrRecordTooLarge, false},
		{"sse json data line", FormatSSE, `data: {"s": "`, 'x', huge, "\"}\n\n", max, []string{}, core.ErrRecordTooLarge, false},
		{"sse data lines", FormatSSE, "", 0, 0, strings.Repeat("data: "+strings.Repeat("y", 1000)+"\n", 2000) + "\n", max, []string{}, core.ErrRecordTooLarge, false},
		{"sse data at the cap", FormatSSE, "data: ", '7', max, "\n\n", max, []string{strings.Repeat("7", max)}, nil, true},
		{"sse data over the cap", FormatSSE, "data: ", '7', max + 1, "\n\n", max, []string{}, core.ErrRecordTooLarge, false},
		{"sse text escaped over the cap", FormatSSE, "data: ", '\x01', 1000, "\n\n", 1000, []string{}, core.ErrRecordTooLarge, true},
		{"sse comment", FormatSSE, ":", 'c', huge, "\ndata: {\"a\": 1}\n\n", max, []string{`{"a":1}`}, nil, true},
		{"sse id", FormatSSE, "id: ", 'i', huge, "\ndata: 1\n\n", max, []string{"1"}, nil, true},
		{"sse unknown field", FormatSSE, "", 'f', huge, ": x\ndata: 1\n\n", max, []string{"1"}, nil, true},
		{"sse event type", FormatSSE, "event: error", 'e', huge, "\ndata: 1\n\n", max, []string{"1"}, nil, true},
		{"sse blank lines", FormatSSE, "", '\n', 1 << 20, "data: 1\n\n", 16 << 10, []string{"1"}, nil, true},
		{"lines", FormatLines, `{"a": "`, 'x', huge, "\"}\n", max, []string{}, core.ErrRecordTooLarge, false},
		{"lines at the cap", FormatLines, "", '1', max, "\r\n2\n", max, []string{strings.Repeat("1", max), "2"}, nil, true},
		{"lines over the cap", FormatLines, "", '1', max + 1, "\r\n2\n", max, []string{}, core.ErrRecordTooLarge, true},
		{"lines last line over the cap", FormatLines, "1\n", '1', max + 1, "", max, []string{"1"}, core.ErrRecordTooLarge, true},
		{"lines blank", FormatLines, "", '\n', 1 << 20, "1\n", 16 << 10, []string{"1"}, nil, true},
		{"json string", FormatJSON, `{"a": "`, 'x', huge, "\"}", max, []string{}, core.ErrRecordTooLarge, false},
		{"json array element", FormatJSON, `[1, "`, 'x', huge, "\"]", max, []string{"1"}, core.ErrRecordTooLarge, false},
		{"json whitespace", FormatJSON, `1`, ' ', huge, "2", max, []string{"1"}, core.ErrRecordTooLarge, false},
		{"json compact over the cap", FormatJSON, `"`, 'x', 2000, `"`, 1000, []string{}, core.ErrRecordTooLarge, true},
		{"text", FormatText, "", 't', 16 << 20, "", max, nil, nil, true},
		{"text escaped", FormatText, "", '\x01', 1 << 20, "", 64 << 10, nil, nil, true},
		{"text tiny cap", FormatText, "", '"', 10000, "", 64, nil, nil, true},
		{"sniffed sse", FormatSniff, "data: ", 'x', huge, "\n\n", max, []string{}, core.ErrRecordTooLarge, false},
		{"sniffed json", FormatSniff, `["`, 'x', huge, "", max, []string{}, core.ErrRecordTooLarge, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var read int64
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			s := NewStream(tt.format, longReply(tt.prefix, tt.b, tt.n, tt.suffix, &read), tt.max)
			var records []string
			kept := 0
			for s.Next() {
				r := s.Record()
				if len(r) > tt.max {
					t.Fatalf("record of %d bytes, over the cap %d", len(r), tt.max)
				}
				if tt.want != nil {
					records = append(records, string(r))
					kept += len(r)
				}
			}
			runtime.ReadMemStats(&after)
			if err := s.Err(); !errors.Is(err, tt.wantErr) && err != tt.wantErr {
				t.Fatalf("Err() = %v, want %v", err, tt.wantErr)
			}
			if tt.want != nil && render(records, nil) != render(tt.want, nil) {
				t.Errorf("records = %.200q, want %.200q", records, tt.want)
			}
			if tt.readsAll && read != tt.n {
				t.Errorf("read %d bytes of %d, want all", read, tt.n)
			}
			if !tt.readsAll && read > int64(tt.max)+jsonSlack+2*readBufferSize {
				t.Errorf("read %d bytes before failing, want at most the cap %d and a buffer", read, tt.max)
			}
			// Memory: the cap and the buffers, not the reply, besides the
			// records this test keeps.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(4*tt.max+1<<20+2*kept) {
				t.Errorf("allocated %d bytes for a %d byte reply, want about the cap %d", alloc, tt.n, tt.max)
			}
		})
	}
}

// errorAfter reads data, then fails with err; with together, the last data
// and the error come in one Read.
type errorAfter struct {
	data     []byte
	err      error
	together bool
}

func (r *errorAfter) Read(p []byte) (int, error) {
	n := copy(p, r.data)
	r.data = r.data[n:]
	if len(r.data) == 0 && (n == 0 || r.together) {
		return n, r.err
	}
	return n, nil
}

// TestDeframeReadError cuts replies short with io.ErrUnexpectedEOF, as a
// connection to the agent dying mid-chunk does: the records before the
// cut come through, the one it tore does not, and Err says why.
func TestDeframeReadError(t *testing.T) {
	tests := []struct {
		format Format
		in     string
		want   []string
	}{
		{FormatSSE, "data: 1\n\ndata: 2\n", []string{"1"}},
		{FormatSSE, "data: 1\n\ndata: {\"a\":", []string{"1"}},
		{FormatSSE, "data: 1\n\n", []string{"1"}},
		{FormatSSE, "", nil},
		{FormatLines, "1\n2", []string{"1"}},
		{FormatLines, "1\n2\n", []string{"1", "2"}},
		{FormatJSON, "[1,2,", []string{"1", "2"}},
		{FormatJSON, `{"a":1}{"b"`, []string{`{"a":1}`}},
		{FormatJSON, `{"a":1}`, []string{`{"a":1}`}},
		{FormatJSON, `  `, nil},
		{FormatText, "hé", []string{`{"output":"hé"}`}},
		{FormatText, "h\xc3", []string{`{"output":"h"}`}}, // the half character is dropped
		{FormatSniff, "data: 1\n\ndata: 2", []string{"1"}},
		{FormatSniff, "  ", nil},
	}
	for _, tt := range tests {
		for _, together := range []bool{false, true} {
			records, err := deframe(tt.format, &errorAfter{[]byte(tt.in), io.ErrUnexpectedEOF, together}, 0)
			if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.HasPrefix(errText(err), "reading agent reply: ") {
				t.Errorf("deframe(%s, %q) Err() = %v, want reading agent reply: %v", tt.format, tt.in, err, io.ErrUnexpectedEOF)
			}
			if tt.format == FormatText {
				if len(tt.want) == 0 && len(records) == 0 {
					continue
				}
				if g, w := outputText(t, records), outputText(t, tt.want); g != w {
					t.Errorf("deframe(%s, %q) text = %q, want %q", tt.format, tt.in, g, w)
				}
				continue
			}
			if render(records, nil) != render(tt.want, nil) {
				t.Errorf("deframe(%s, %q) = %q, want %q", tt.format, tt.in, records, tt.want)
			}
		}
	}
}

// TestDeframeCutRecord: a record that the end of the reply may have cut
// is never passed on; the stream fails with errCutRecord instead. After
// a clean end (clean) a last record whose lines all ended, or an ndjson
// line or a number that is complete JSON, counts; after a close
// (closed), only a record whose own end shows. Every way of splitting the
// reply across reads gives the same.
func TestDeframeCutRecord(t *testing.T) {
	const cut = "CUT" // the want marker for errCutRecord
	tests := []struct {
		format Format
		in     string
		clean  []string
		closed []string
	}{
		// SSE: the blank line ends an event; a close may fall between its lines.
		{FormatSSE, "data: 1\n\ndata: 2\n\n", []string{"1", "2"}, []string{"1", "2"}},
		{FormatSSE, "data: 1\n\ndata: 2\n", []string{"1", "2"}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\ndata: 2\r", []string{"1", "2"}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\ndata: 12345", []string{"1", cut}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\ndata: a\ndata: b", []string{"1", cut}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\ndata:", []string{"1", cut}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\ndata", []string{"1", cut}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\nda", []string{"1", cut}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\neve", []string{"1", cut}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\nevent: err", []string{"1", cut}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\ndata: 2\nevent: error", []string{"1", cut}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\n: a comment cut", []string{"1"}, []string{"1"}},
		{FormatSSE, "data: 1\n\nid: 4", []string{"1"}, []string{"1"}},
		{FormatSSE, "data: 1\n\nretry", []string{"1"}, []string{"1"}},
		{FormatSSE, "data: 1\n\ndatum: x", []string{"1"}, []string{"1"}},
		{FormatSSE, "data: 1\n\ndata: 2\n: comment", []string{"1", "2"}, []string{"1", cut}},
		{FormatSSE, "data: 1\n\nevent: error\ndata: boom\n", []string{"1", "agent error: boom"}, []string{"1", cut}},
		{FormatSSE, "data: [DONE]", []string{cut}, []string{cut}},
		{FormatSSE, "data: [DONE]\n", nil, []string{cut}},

		// ndjson: "\n" ends a line; without it only complete JSON counts,
		// and after a close not a number.
		{FormatLines, "{\"n\":1}\n{\"n\":2}\n", []string{`{"n":1}`, `{"n":2}`}, []string{`{"n":1}`, `{"n":2}`}},
		{FormatLines, "{\"n\":1}\n{\"n\":2}", []string{`{"n":1}`, `{"n":2}`}, []string{`{"n":1}`, `{"n":2}`}},
		{FormatLines, "{\"n\":1}\n{\"n\":2}\r", []string{`{"n":1}`, `{"n":2}`}, []string{`{"n":1}`, `{"n":2}`}},
		{FormatLines, "{\"n\":1}\n{\"n\":12345", []string{`{"n":1}`, cut}, []string{`{"n":1}`, cut}},
		{FormatLines, "{\"n\":1}\n12345", []string{`{"n":1}`, "12345"}, []string{`{"n":1}`, cut}},
		{FormatLines, "{\"n\":1}\n12345 ", []string{`{"n":1}`, "12345"}, []string{`{"n":1}`, "12345"}},
		{FormatLines, "{\"n\":1}\n\"text\"", []string{`{"n":1}`, `"text"`}, []string{`{"n":1}`, `"text"`}},
		{FormatLines, "{\"n\":1}\ntrue", []string{`{"n":1}`, "true"}, []string{`{"n":1}`, "true"}},
		{FormatLines, "{\"n\":1}\nhello", []string{`{"n":1}`, cut}, []string{`{"n":1}`, cut}},
		{FormatLines, "{\"n\":1}\nhello\n", []string{`{"n":1}`, `{"output":"hello"}`}, []string{`{"n":1}`, `{"output":"hello"}`}},
		{FormatLines, "{\"n\":1}\n\x1e  ", []string{`{"n":1}`}, []string{`{"n":1}`}},
		{FormatLines, "{\"error\":\"boom\"}", []string{"agent error: boom"}, []string{"agent error: boom"}},
		{FormatLines, "{\"error\":\"boo", []string{cut}, []string{cut}},

		// JSON values: only a number can be cut and still parse.
		{FormatJSON, `{"n":1} 12345`, []string{`{"n":1}`, "12345"}, []string{`{"n":1}`, cut}},
		{FormatJSON, "{\"n\":1} 12345\n", []string{`{"n":1}`, "12345"}, []string{`{"n":1}`, "12345"}},
		{FormatJSON, `12345`, []string{"12345"}, []string{cut}},
		{FormatJSON, `-1.5e3`, []string{"-1.5e3"}, []string{cut}},
		{FormatJSON, `{"n":1} true`, []string{`{"n":1}`, "true"}, []string{`{"n":1}`, "true"}},
		{FormatJSON, `[1, 2`, []string{"1", cut}, []string{"1", cut}},
		{FormatJSON, `[1, 2]`, []string{"1", "2"}, []string{"1", "2"}},
		{FormatJSON, `[1, 2] 3`, []string{"1", "2", "3"}, []string{"1", "2", cut}},

		// Text: only an incomplete last character.
		{FormatText, "hello", []string{`{"output":"hello"}`}, []string{`{"output":"hello"}`}},
		{FormatText, "euro \xe2\x82", []string{`{"output":"euro "}`, "{\"output\":\"\uFFFD\uFFFD\"}"}, []string{`{"output":"euro "}`, cut}},

		// Sniffed: as the format found.
		{FormatSniff, "data: 1\n\ndata: 2\n", []string{"1", "2"}, []string{"1", cut}},
		{FormatSniff, "7", []string{"7"}, []string{cut}},
	}
	for _, tt := range tests {
		for _, closed := range []bool{false, true} {
			want := tt.clean
			if closed {
				want = tt.closed
			}
			read := func(r io.Reader) ([]string, error) {
				if closed {
					return deframeClosed(tt.format, r, 0)
				}
				return deframe(tt.format, r, 0)
			}
			records, err := read(strings.NewReader(tt.in))
			if got := cutRender(records, err); got != strings.Join(want, "\n") {
				t.Errorf("deframe(%s, %q) closed=%v =\n%s\nwant\n%s", tt.format, tt.in, closed, got, strings.Join(want, "\n"))
				continue
			}
			if tt.format == FormatText {
				continue // records follow the reads
			}
			for at := range len(tt.in) {
				if r, e := read(splitAt([]byte(tt.in), at)); cutRender(r, e) != cutRender(records, err) {
					t.Errorf("deframe(%s, %q) closed=%v split at %d = %q, %v, want %q, %v", tt.format, tt.in, closed, at, r, e, records, err)
				}
			}
			if r, e := read(iotest.OneByteReader(strings.NewReader(tt.in))); cutRender(r, e) != cutRender(records, err) {
				t.Errorf("deframe(%s, %q) closed=%v one byte a read = %q, %v, want %q, %v", tt.format, tt.in, closed, r, e, records, err)
			}
		}
	}
}

// cutRender is the records one per line, then the error: "CUT" for
// errCutRecord, else its text.
func cutRender(records []string, err error) string {
	lines := slices.Clone(records)
	switch {
	case errors.Is(err, errCutRecord):
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			return "errCutRecord does not wrap io.ErrUnexpectedEOF"
		}
		lines = append(lines, "CUT")
	case err != nil:
		lines = append(lines, err.Error())
	}
	return strings.Join(lines, "\n")
}

// TestDeframeJSONErrors: a reply that is not JSON, or is cut short at a
// clean EOF, fails with the decoder's error.
func TestDeframeJSONErrors(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`{"a":1} nope`, []string{`{"a":1}`}},
		{`[1, 2 3]`, []string{"1", "2"}},
		{`[1, 2 `, []string{"1", "2"}}, // the number ends, the array does not
		{`[1, 2,`, []string{"1", "2"}},
		{`[1}`, []string{"1"}},
		{`{"a":`, nil},
		{`tru e`, nil},
		{`{"a":1}]`, []string{`{"a":1}`}},
	}
	for _, tt := range tests {
		records, err := deframe(FormatJSON, strings.NewReader(tt.in), 0)
		var syntax *json.SyntaxError
		if !strings.HasPrefix(errText(err), "decoding agent json: ") || !errors.As(err, &syntax) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("deframe(json, %q) Err() = %v, want decoding agent json: …", tt.in, err)
		}
		if render(records, nil) != render(tt.want, nil) {
			t.Errorf("deframe(json, %q) = %q, want %q", tt.in, records, tt.want)
		}
	}
}

// TestTextStreamsEachRead: a text record goes out per read, without
// waiting for more, and never splits a character.
func TestTextStreamsEachRead(t *testing.T) {
	pr, pw := io.Pipe()
	s := NewStream(FormatText, pr, 0)
	go func() {
		pw.Write([]byte("tok"))
		pw.Write([]byte("en \xe2\x82")) // "€" cut after two of its bytes
		pw.Write([]byte("\xac!"))
		pw.Close()
	}()
	for _, want := range []string{`{"output":"tok"}`, `{"output":"en "}`, `{"output":"€!"}`} {
		if !s.Next() {
			t.Fatalf("Next() = false, want %s; Err() = %v", want, s.Err())
		}
		if got := string(s.Record()); got != want {
			t.Errorf("Record() = %s, want %s", got, want)
		}
	}
	if s.Next() || s.Err() != nil {
		t.Errorf("Next() after the end: Err() = %v, want <nil>", s.Err())
	}
}

// TestSSEStopsAtDone: after [DONE] nothing more is read, not even a reply
// that never ends.
func TestSSEStopsAtDone(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	go pw.Write([]byte("data: 1\n\ndata: [DONE]\n\n"))
	records, err := deframe(FormatSSE, pr, 0)
	if err != nil || render(records, nil) != render([]string{"1"}, nil) {
		t.Errorf("deframe(sse) = %q, %v, want [1], <nil>", records, err)
	}
}

// TestDeframeAllocs: records reuse one buffer; a steady stream allocates
// next to nothing per record.
func TestDeframeAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if raceEnabled() {
		t.Skip("the race detector drops sync.Pool items, which encoding/json's scanners live in")
	}
	const n = 1000
	tests := []struct {
		format Format
		reply  []byte
	}{
		{FormatSSE, sseBenchReply(n)},
		{FormatLines, linesBenchReply(n)},
		{FormatText, bytes.Repeat([]byte("some text "), 100)},
	}
	for _, tt := range tests {
		r := bytes.NewReader(tt.reply)
		allocs := testing.AllocsPerRun(5, func() {
			r.Reset(tt.reply)
			s := NewStream(tt.format, iotest.OneByteReader(r), 0)
			for s.Next() {
			}
		})
		if perRecord := allocs / n; perRecord > 0.1 {
			t.Errorf("NewStream(%s) allocs per record = %.3f, want at most 0.1", tt.format, perRecord)
		}
	}
}

func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

const benchEvent = `{"author":"weather_agent","content":{"parts":[{"text":"The weather in Paris is sunny, 21 °C, with a light breeze from the west."}],"role":"model"},"id":"b2c1f0e4","timestamp":1732890123.456,"usage":{"prompt_tokens":123,"candidates_tokens":45}}`

func sseBenchReply(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "id: %d\ndata: %s\n\n", i, benchEvent)
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func linesBenchReply(n int) []byte {
	return bytes.Repeat([]byte(benchEvent+"\n"), n)
}

func benchmarkDeframe(b *testing.B, f Format, reply []byte, n int) {
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	r := bytes.NewReader(reply)
	records := 0
	for b.Loop() {
		r.Reset(reply)
		s := NewStream(f, r, 0)
		for s.Next() {
			records++
		}
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
	}
	if records != n*b.N {
		b.Fatalf("records = %d, want %d", records, n*b.N)
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkSSE deframes an ADK-like event stream; allocs/op are per reply
// of 1000 events.
func BenchmarkSSE(b *testing.B) {
	const n = 1000
	benchmarkDeframe(b, FormatSSE, sseBenchReply(n), n)
}

// BenchmarkLines deframes 1000 ndjson records per op.
func BenchmarkLines(b *testing.B) {
	const n = 1000
	benchmarkDeframe(b, FormatLines, linesBenchReply(n), n)
}

// BenchmarkText reads a 1 MiB text/plain reply: each read becomes one
// {"output":"…"} record, the text escaped as a JSON string (prose with
// quotes, line breaks, tabs and non-ASCII letters).
func BenchmarkText(b *testing.B) {
	line := "The weather in Paris is \"sunny\", 21 °C,\ta light breeze from the west; Zürich: ☁ 14 °C.\n"
	reply := bytes.Repeat([]byte(line), (1<<20)/len(line))
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	r := bytes.NewReader(reply)
	for b.Loop() {
		r.Reset(reply)
		s := NewStream(FormatText, r, 0)
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSSEEvent(t *testing.T) {
	long := strings.Repeat("x", 80)
	in := "event: response.output_text.delta\ndata: {\"a\":1}\n\ndata: {\"b\":2}\n\nevent: " + long + "\ndata: 3\n\n"
	for _, f := range []Format{FormatSSE, ""} {
		s := NewStream(f, strings.NewReader(in), 0).(eventStream)
		var got []string
		for s.Next() {
			got = append(got, string(s.Event()))
		}
		want := []string{"response.output_text.delta", "", long[:maxEventName]}
		if !slices.Equal(got, want) || s.Err() != nil {
			t.Errorf("format %q: Event() = %q (err %v), want %q", f, got, s.Err(), want)
		}
	}
}

package upstream

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestDeframeBigRecords: SSE events and ndjson lines past takeMin, whose
// buffer may become the record's, deframe as small ones do, one after
// another (each record whole while the next reuses a buffer): JSON
// without whitespace as it is, JSON with whitespace compacted, text and
// JSON cut short as text, invalid UTF-8 replaced.
func TestDeframeBigRecords(t *testing.T) {
	big := func(c string) string { return strings.Repeat(c, takeMin+100) }
	events := []struct{ data, want string }{
		{`{"inline_data":{"mime_type":"image/png","data":"` + big("A") + `"}}`, `{"inline_data":{"mime_type":"image/png","data":"` + big("A") + `"}}`},
		{`{"text":"` + big("b") + `"}`, `{"text":"` + big("b") + `"}`},
		{`{"text": "` + big("c") + `"}`, `{"text":"` + big("c") + `"}`},
		{big("d"), `{"output":"` + big("d") + `"}`},
		{`{"text":"` + big("e"), `{"output":"{\"text\":\"` + big("e") + `"}`},
		{`{"text":"` + big("f") + "\xff" + `"}`, `{"text":"` + big("f") + "\uFFFD" + `"}`},
		{`{"text":"small"}`, `{"text":"small"}`},
		{`{"text":"` + big("g") + `"}`, `{"text":"` + big("g") + `"}`},
	}
	for _, f := range []struct {
		format     Format
		head, tail string
	}{{FormatSSE, "data: ", "\n\n"}, {FormatLines, "", "\n"}} {
		var reply strings.Builder
		for _, e := range events {
			reply.WriteString(f.head + e.data + f.tail)
		}
		s := NewStream(f.format, strings.NewReader(reply.String()), 0)
		for i, e := range events {
			if !s.Next() {
				t.Fatalf("%s, record %d: none: %v", f.format, i, s.Err())
			}
			if got := string(s.Record()); got != e.want {
				t.Errorf("%s, record %d: %.60q… (%d bytes), want %.60q… (%d bytes)", f.format, i, got, len(got), e.want, len(e.want))
			}
		}
		if s.Next() || s.Err() != nil {
			t.Errorf("%s, after the records: Next true or %v", f.format, s.Err())
		}
	}
}

// TestDeframeBigRecordAllocs: an SSE event or an ndjson line of 7 MB of
// compact JSON (an agent's 5 MiB image) becomes its record without a
// copy: the deframer allocates less than twice the record (its growing
// buffer), where a copy as well took three times.
func TestDeframeBigRecordAllocs(t *testing.T) {
	data := `{"inline_data":{"mime_type":"image/png","data":"` + strings.Repeat("A", 7_000_000) + `"}}`
	for _, f := range []struct {
		format     Format
		head, tail string
	}{{FormatSSE, "data: ", "\n\n"}, {FormatLines, "", "\n"}} {
		reply := []byte(f.head + data + f.tail)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s := NewStream(f.format, bytes.NewReader(reply), 0)
		if !s.Next() || len(s.Record()) != len(data) {
			t.Fatalf("%s: Next = %d bytes, %v; want the record of %d", f.format, len(s.Record()), s.Err(), len(data))
		}
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > uint64(2*len(data)) {
			t.Errorf("%s: deframing a record of %d bytes allocated %d bytes, want under %d", f.format, len(data), got, 2*len(data))
		}
	}
}

package dialect

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/upstream"
)

// slowMapper is a mapper whose every record is decoded by encoding/json:
// the behaviour its fast path must keep.
type slowMapper interface {
	slow(out []Event, event string, rec []byte) []Event
}

// FuzzFastPaths maps any SSE reply in every dialect twice, each record
// read in place where a mapper can (Map) and each decoded by
// encoding/json (slow): the events must be the same, record by record.
func FuzzFastPaths(f *testing.F) {
	for _, file := range fixtures(f) {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(slices.Index(fuzzDialects, dialectOf(file))), b)
	}
	for _, c := range captures(f) {
		f.Add(uint8(slices.Index(fuzzDialects, c.dialect)), c.body)
	}
	for _, s := range benchStreams {
		f.Add(uint8(slices.Index(fuzzDialects, s.dialect)), s.body(20))
	}
	for _, rec := range slices.Concat(fastPathEdges, repeatedObjectKeys) {
		for i := range fuzzDialects {
			f.Add(uint8(i), []byte("data: "+rec+"\n\n"))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, src []byte) {
		d := fuzzDialects[int(which)%len(fuzzDialects)]
		if d == config.DialectAuto {
			d = dialectText
		}
		checkFastPath(t, d, src)
	})
}

// fastPathEdges are records at the edges of what a fast path reads:
// repeated and case-folded keys, escapes, invalid UTF-8, nulls, other
// types, numbers, nesting.
var fastPathEdges = []string{
	`null`, `{}`, `[]`, `"x"`, `7`,
	`{"type":"text-delta","delta":"a","delta":"b"}`,
	`{"type":"text-delta","Delta":"b"}`,
	`{"type":"text-delta","DELTA":"b","delta":"a"}`,
	`{"type":"text-delta","delta":null}`,
	`{"type":"text-delta","delta":7}`,
	`{"type":"text-delta","delta":"\ud83d\ude00 \ud83d x \ude00 \u00e9\n\"\\\/\b\f\r\t\u0000"}`,
	"{\"type\":\"text-delta\",\"delta\":\"\xff\xfe a\xc3\"}",
	`{"type":"text-delta","d\u0065lta":"x"}`,
	`{"type":"text-delta","delta":"x","extra":[[[[{"a":[1,-2.5e-3,true,false,null]}]]]]}`,
	`{"type":"text-delta","delta":"x"} `,
	`{"choices":[{"delta":{"content":"a"}},{"delta":{"content":7}}]}`,
	`{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
	`{"choices":[null]}`,
	`{"choices":null,"usage":null,"error":null}`,
	`{"choices":[{"delta":{"content":"a","tool_calls":[{"index":1.0}]}}]}`,
	`{"choices":[{"delta":{"reasoning_content":"r","reasoning":"s","content":"c"},"finish_reason":"stop"}]}`,
	`{"choices":[{"Delta":{"content":"a"}}]}`,
	`{"choices":{"delta":{}}}`,
	`{"type":"TEXT_MESSAGE_CONTENT","delta":"a","toolCallId":5}`,
	`{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{\"a\":"}`,
	`{"type":"response.output_text.delta","delta":"a","response":null}`,
	`{"type":"response.output_text.delta","delta":"a","response":{"status":5}}`,
	`{"type":"raw_model_stream_event","data":{"type":"model","event":{"type":"response.reasoning_text.delta","delta":"r"}}}`,
	`{"type":"raw_model_stream_event","data":{"type":"model","event":"x"}}`,
	`{"type":"raw_model_stream_event","data":{"type":"output_text_delta","delta":"a"},"item":null}`,
	`{"jsonrpc":"2.0","result":{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"a"},{"text":null},{"text":""},{"text":"b","data":{}}]}}}`,
	`{"jsonrpc":"2.0","result":{"artifactUpdate":{"artifact":{"parts":[{"text":"a"}]}},"artifact":{"parts":[{"text":"b"}]}}}`,
	`{"artifactUpdate":{"artifact":{"parts":[{"text":"a"}]},"final":1}}`,
	`{"result":null,"kind":"artifact-update","artifact":{"parts":[{"text":"a"}]}}`,
	`{"content":{"parts":[{"text":"a"},{"text":"b","thought":true},{"text":null}]},"partial":true}`,
	`{"content":{"parts":[{"text":"a"}]}}`,
	`{"content":{"parts":[{"text":"a"}]},"partial":true,"errorCode":null,"errorMessage":null}`,
	`{"content":null,"partial":true}`,
	`[{"content":"a","type":"ai","tool_calls":[],"tool_call_chunks":[]},{}]`,
	`[{"content":["a"],"type":"ai"}]`,
	`[{"content":null,"type":"AIMessageChunk"}]`,
	`[null,1]`,
	`[]`,
	`{"output":"a"}`,
	`{"output":"a","output":"b"}`,
	`{"output":null}`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"type":"text-delta","delta":"x","deep":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"type":"text-delta","delta":"x","deep":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
}

// repeatedObjectKeys repeat a key whose value is an object or an array:
// encoding/json merges the second into the first (an object's fields
// not repeated stay, an array is replaced), which no fast path copies, so
// each must fall to the slow path (scan.once).
var repeatedObjectKeys = []string{
	`{"content":{"parts":[{"text":"a"}]},"content":{"parts":[{"text":"b"}]},"partial":true}`,
	`{"content":{"parts":[{"text":"a"}],"parts":[{"text":"b"}]},"partial":true}`,
	`{"content":{"parts":[{"text":"a"}]},"content":{},"partial":true}`,
	`{"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"content":"b"}}]}`,
	`{"choices":[{"delta":{"content":"a"},"delta":{"reasoning_content":"r"}}]}`,
	`{"type":"raw_model_stream_event","data":{"type":"output_text_delta","delta":"a"},"data":{"type":"output_text_delta"}}`,
	`{"type":"raw_model_stream_event","data":{"type":"model","event":{"type":"response.reasoning_text.delta","delta":"r"},"event":{"delta":"s"}}}`,
	`{"jsonrpc":"2.0","result":{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"a"}]},"artifact":{"parts":[{"kind":"text","text":"b"}]}}}`,
	`{"jsonrpc":"2.0","result":{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"a"}]}},"result":{"kind":"artifact-update"}}`,
	`{"artifactUpdate":{"artifact":{"parts":[{"text":"a"}]}},"artifactUpdate":{"artifact":{"parts":[{"text":"b"}]}}}`,
	`{"type":"TEXT_MESSAGE_CONTENT","delta":"a","delta":{"x":1}}`,
	`[{"content":"a","type":"ai","tool_calls":[{"id":"c"}],"tool_calls":[]},{}]`,
}

// TestRepeatedObjectKeys: a record that repeats an object- or
// array-valued key maps in every dialect as encoding/json decodes it.
func TestRepeatedObjectKeys(t *testing.T) {
	for _, d := range fuzzDialects {
		if d == config.DialectAuto {
			d = dialectText
		}
		for _, rec := range repeatedObjectKeys {
			checkFastPath(t, d, []byte("data: "+rec+"\n\n"))
		}
	}
}

// checkFastPath maps src in dialect d with and without the fast paths and
// compares the events.
func checkFastPath(t *testing.T, d config.Dialect, src []byte) {
	fast, slow := newMapper(d, 1<<10), newMapper(d, 1<<10)
	sm, ok := slow.(slowMapper)
	if !ok {
		t.Fatalf("dialect %s: the mapper has no slow path", d)
	}
	recs := upstream.NewStream(upstream.FormatSSE, bytes.NewReader(src), 0)
	for recs.Next() {
		event := string(recs.(EventType).Event())
		rec := bytes.Clone(recs.Record())
		got := fast.Map(nil, event, rec)
		want := sm.slow(nil, event, rec)
		if !sameEvents(got, want) {
			t.Fatalf("dialect %s, event %q, record %s:\nfast %+v\nslow %+v", d, event, rec, got, want)
		}
	}
	if got, want := fast.Flush(nil), slow.Flush(nil); !sameEvents(got, want) {
		t.Fatalf("dialect %s: flush: fast %+v\nslow %+v", d, got, want)
	}
}

// sameEvents compares events, a JSON field empty or nil alike.
func sameEvents(a, b []Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !bytes.Equal(x.JSON, y.JSON) || !bytes.Equal(x.Usage, y.Usage) {
			return false
		}
		x.JSON, y.JSON, x.Usage, y.Usage = nil, nil, nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// TestNullRecord: a record that is null maps to nothing in every dialect
// (A2A's mapper dereferenced the nil result it decodes to).
func TestNullRecord(t *testing.T) {
	for _, d := range fuzzDialects {
		for _, e := range []config.Emit{config.EmitText, config.EmitADK} {
			lines := mapFixture(t, d, e, strings.NewReader("data: null\n\n"), nil)
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") && d != config.DialectAuto {
				t.Errorf("dialect %s emit %s: a null record gives %q, want the mismatch error", d, e, lines)
			}
		}
	}
}

// TestUnquoteAsUnmarshal: strings with escapes and invalid UTF-8 are
// decoded as encoding/json decodes them.
func TestUnquoteAsUnmarshal(t *testing.T) {
	for _, s := range []string{`\ud83d\ude00`, `\ud83d`, `\ud83dx`, `\ude00\ud83d`, `\ud83d\u0041`, `\ud83d\ud83d\ude00`,
		`a\"b\\c\/d\b\f\n\r\t`, "\xff\xfe\xc3", "é\xed\xa0\x80", `\u00e9\u2028`} {
		var want string
		if err := json.Unmarshal([]byte(`"`+s+`"`), &want); err != nil {
			t.Fatal(err)
		}
		var got string
		var sc scan
		sc.b = []byte(`"` + s + `"`)
		sc.str(&got)
		if got != want || sc.bad {
			t.Errorf("str(%q) = %q (bad %v), want %q", s, got, sc.bad, want)
		}
	}
}

package dialect

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/part"
)

// png1x1 is a real 1x1 PNG, base64.
const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

func oct(n int) string {
	return `{"inline_data":{"mime_type":"application/octet-stream","data":"` + base64.StdEncoding.EncodeToString(make([]byte, n)) + `"}}`
}

// TestPartRecords: a part record passes the mapping stage in its one
// shape, in order with the text, whatever the dialect, and the unary
// whole keeps the parts.
func TestPartRecords(t *testing.T) {
	chat := `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Here:"}}]}`
	recs := []string{chat, `{"inlineData":{"mimeType":"image/png","data":"` + png1x1 + `"}}`,
		`{"file_data":{"file_uri":"gs://b/a.pdf","mime_type":"application/pdf"}}`, `{"data":{"n":1}}`}
	want := []string{`{"text":"Here:"}`,
		`{"inline_data":{"mime_type":"image/png","data":"` + png1x1 + `"}}`,
		`{"file_data":{"mime_type":"application/pdf","file_uri":"gs://b/a.pdf"}}`,
		`{"data":{"n":1}}`, `{"end":{}}`}
	for _, d := range []config.Dialect{config.DialectOpenAIChat, config.DialectAuto} {
		r, h := ndjson(recs...)
		got := mapFixture(t, d, config.EmitText, r, h)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: mapped =\n%s\nwant\n%s", d, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	r, h := ndjson(recs...)
	rs := Agent{}.mapped(testCall(config.DialectOpenAIChat, config.EmitText), newFixtureRecords(r, h), true)
	out, err := rs.Collect()
	rs.Close()
	var whole struct {
		Text  string            `json:"text"`
		Parts []json.RawMessage `json:"parts"`
	}
	if err != nil || json.Unmarshal(out, &whole) != nil || whole.Text != "Here:" || len(whole.Parts) != 3 || string(whole.Parts[0]) != want[1] {
		t.Errorf("Collect = %s, %v", out, err)
	}
}

// TestPartBounded: a malformed part ends the call with BAD_REPLY, one
// past limits.parts.bytes or, with those before it, limits.parts.total
// with PART_TOO_LARGE; none is passed on.
func TestPartBounded(t *testing.T) {
	for _, tt := range []struct {
		name, reason string
		lim          config.Parts
		recs         []string
		lines        int
	}{
		{"malformed", "BAD_REPLY", config.DefaultParts, []string{`{"inline_data":{"mime_type":"image/png","data":"no!"}}`}, 0},
		{"a CR in the type", "BAD_REPLY", config.DefaultParts, []string{`{"inline_data":{"mime_type":"image/png\r\nX: y","data":"AAAA"}}`}, 0},
		{"one over the cap", "PART_TOO_LARGE", config.Parts{Bytes: 10, Total: 100}, []string{oct(11)}, 0},
		{"past the total", "PART_TOO_LARGE", config.Parts{Bytes: 10, Total: 25}, []string{oct(10), oct(10), oct(10)}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, h := ndjson(tt.recs...)
			rs := Agent{Parts: tt.lim}.Map(testCall(config.DialectOpenAIChat, config.EmitText), newFixtureRecords(r, h))
			defer rs.Close()
			n := 0
			for rs.Next() {
				n++
			}
			if f := core.FailureOf(rs.Err()); rs.Err() == nil || f.Reason != tt.reason || n != tt.lines {
				t.Errorf("%d lines, Err() = %v, want %d lines and %s", n, rs.Err(), tt.lines, tt.reason)
			}
		})
	}
}

// TestPartDialects: each dialect's own shape of a part that is not text
// maps to the part record: an ADK event's inlineData and fileData (either
// key case), the Vercel AI SDK's file chunk (a data URL inline, any other
// URL a file part), the Responses API's generated image (its partial
// images skipped).
func TestPartDialects(t *testing.T) {
	img := `{"inline_data":{"mime_type":"image/png","data":"` + png1x1 + `"}}`
	pdf := `{"file_data":{"mime_type":"application/pdf","file_uri":"https://example.com/a.pdf"}}`
	tests := []struct {
		name    string
		dialect config.Dialect
		recs    []string
		want    []string
	}{
		{"adk camel", config.DialectADK, []string{
			`{"author":"a","content":{"role":"model","parts":[{"text":"Here:"},{"inlineData":{"mimeType":"image/png","data":"` + png1x1 + `"}}]},"id":"e1"}`,
			`{"author":"a","content":{"role":"model","parts":[{"fileData":{"mimeType":"application/pdf","fileUri":"https://example.com/a.pdf"}}]},"id":"e2"}`,
		}, []string{`{"text":"Here:"}`, img, pdf}},
		{"adk snake", config.DialectADK, []string{
			`{"author":"a","content":{"role":"model","parts":[{"inline_data":{"mime_type":"image/png","data":"` + strings.NewReplacer("+", "-", "/", "_", "=", "").Replace(png1x1) + `","display_name":"dot.png"}}]},"id":"e1"}`,
			`{"author":"a","content":{"role":"model","parts":[{"file_data":{"file_uri":"https://example.com/a.pdf","mime_type":"application/pdf"}}]},"id":"e2"}`,
		}, []string{`{"inline_data":{"mime_type":"image/png","display_name":"dot.png","data":"` + png1x1 + `"}}`, pdf}},
		{"vercel", config.DialectVercelUI, []string{
			`{"type":"start"}`, `{"type":"text-delta","id":"t","delta":"Here:"}`,
			`{"type":"file","mediaType":"image/png","url":"data:image/png;base64,` + png1x1 + `"}`,
			`{"type":"file","mediaType":"application/pdf","url":"https://example.com/a.pdf"}`,
			`{"type":"finish"}`,
		}, []string{`{"text":"Here:"}`, img, pdf}},
		{"responses", config.DialectOpenAIResponses, []string{
			`{"type":"response.output_text.delta","delta":"Here:"}`,
			`{"type":"response.image_generation_call.partial_image","partial_image_index":0,"partial_image_b64":"AAAA"}`,
			`{"type":"response.output_item.done","item":{"type":"image_generation_call","id":"ig_1","status":"completed","result":"` + png1x1 + `"}}`,
			`{"type":"response.output_item.done","item":{"type":"image_generation_call","id":"ig_2","status":"completed","output_format":"webp","result":"UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="}}`,
		}, []string{`{"text":"Here:"}`, img, `{"inline_data":{"mime_type":"image/webp","data":"UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="}}`}},
	}
	for _, tt := range tests {
		for _, d := range []config.Dialect{tt.dialect, config.DialectAuto} {
			t.Run(tt.name+"/"+string(d), func(t *testing.T) {
				r, h := ndjson(tt.recs...)
				got := mapFixture(t, d, config.EmitText, r, h)
				want := append(tt.want, `{"end":{}}`)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("mapped =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			})
		}
	}
}

// TestPartDialectBad: a dialect's part that is not a well-formed part
// ends the call with BAD_REPLY, saying why.
func TestPartDialectBad(t *testing.T) {
	for _, tt := range []struct {
		name    string
		dialect config.Dialect
		rec     string
	}{
		{"vercel data URL not base64", config.DialectVercelUI, `{"type":"file","mediaType":"text/plain","url":"data:text/plain,hello"}`},
		{"vercel relative URL", config.DialectVercelUI, `{"type":"file","mediaType":"image/png","url":"/a.png"}`},
		{"adk type and bytes differ", config.DialectADK, `{"content":{"parts":[{"inlineData":{"mimeType":"image/jpeg","data":"` + png1x1 + `"}}]}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, h := ndjson(tt.rec)
			rs := Agent{}.Map(testCall(tt.dialect, config.EmitText), newFixtureRecords(r, h))
			defer rs.Close()
			for rs.Next() {
			}
			if f := core.FailureOf(rs.Err()); f.Reason != "BAD_REPLY" {
				t.Errorf("Err() = %v, want BAD_REPLY", rs.Err())
			}
		})
	}
}

// TestPartEmitADK: with emit adk an inline or file part is the model's
// ADK event with that part, as encoding/json writes it, in either key
// case, and the adk dialect reads it back as the part; a data part,
// which ADK's Part has no member for, is its part record.
func TestPartEmitADK(t *testing.T) {
	recs := []string{`{"inline_data":{"mime_type":"image/png","display_name":"dot \"1\".png","data":"` + png1x1 + `"}}`,
		`{"file_data":{"mime_type":"application/pdf","file_uri":"https://example.com/a.pdf"}}`,
		`{"file_data":{"file_uri":"gs://b/x"}}`, `{"data":{"n":1}}`}
	for _, snake := range []bool{false, true} {
		a := newADKEmitter("agent", snake)
		a.max = 1 << 20
		a.newID = func() string { return "ev-1" }
		a.now = func() time.Time { return time.Unix(1754000000, 123456000) }
		for _, rec := range recs {
			p, err := part.Parse([]byte(rec), config.DefaultParts)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := a.line(nil, &Event{Kind: Part, JSON: json.RawMessage(rec), Part: p})
			if err != nil || len(lines) != 1 {
				t.Fatalf("line(%s) = %d lines, %v", rec, len(lines), err)
			}
			want := []byte(rec)
			if p.Kind != part.Data {
				member := map[string]any{}
				if p.Name != "" {
					member[a.key("displayName", "display_name")] = p.Name
				}
				if p.MIME != "" {
					member[a.key("mimeType", "mime_type")] = p.MIME
				}
				key := a.key("fileData", "file_data")
				if p.Kind == part.Inline {
					key, member["data"] = a.key("inlineData", "inline_data"), string(p.Base64)
				} else {
					member[a.key("fileUri", "file_uri")] = p.URI
				}
				want = a.eventID("ev-1", "model", false, adkPart{key: member})
			}
			if string(lines[0]) != string(want) {
				t.Errorf("snake %v: line(%s) =\n%s\nwant\n%s", snake, rec, lines[0], want)
			}
			// Read back by the adk dialect: the same part record.
			r, h := ndjson(string(lines[0]))
			got := mapFixture(t, config.DialectADK, config.EmitText, r, h)
			if len(got) == 0 || got[0] != string(part.AppendRecord(nil, p)) {
				t.Errorf("snake %v: %s read back as %q", snake, lines[0], got)
			}
		}
	}
}

// TestPartSplitOverSSE: a part record in one SSE event whose data is
// split over 1,000 data: lines (the deframer joins them with line
// breaks, inside the base64) arrives as one part, its base64 whole;
// what the stage holds stays a small multiple of the part.
func TestPartSplitOverSSE(t *testing.T) {
	const size = 3 << 20 // 3 MiB of bytes, 4 MiB of base64
	b64 := base64.StdEncoding.EncodeToString(append(pngHead(), make([]byte, size-len(pngHead()))...))
	var sse strings.Builder
	head := `{"inline_data":{"mime_type":"image/png","data":"`
	step := len(b64) / 1000
	sse.WriteString("data: " + head + b64[:step] + "\n")
	for i := 1; i < 999; i++ {
		sse.WriteString("data: " + b64[i*step:(i+1)*step] + "\n")
	}
	sse.WriteString("data: " + b64[999*step:] + `"}}` + "\n\n")
	body := sse.String()
	if n := strings.Count(body, "data: "); n != 1000 {
		t.Fatalf("%d data lines", n)
	}
	chat := "data: " + `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Here:"}}]}` + "\n\n"
	in := strings.NewReader(chat + body)
	h := http.Header{"Content-Type": {"text/event-stream"}}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rs := Agent{Parts: config.DefaultParts}.Map(testCall(config.DialectAuto, config.EmitText), newFixtureRecords(in, h))
	defer rs.Close()
	var lines []string
	var peak uint64
	for rs.Next() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapAlloc)
		l := rs.Record()
		if len(l) > 100 {
			if want := `{"inline_data":{"mime_type":"image/png","data":"` + b64 + `"}}`; string(l) != want {
				t.Errorf("the part line is %d bytes, not the part record of %d", len(l), len(want))
			}
			l = l[:100]
		}
		lines = append(lines, string(l))
	}
	runtime.ReadMemStats(&after)
	if rs.Err() != nil || len(lines) != 3 || lines[0] != `{"text":"Here:"}` || lines[2] != `{"end":{}}` {
		t.Fatalf("lines %q, Err() = %v", lines, rs.Err())
	}
	// The event, its record, the normalized base64 and the line out: a
	// few copies of the 4 MiB, not one per data line.
	if grew := int64(peak) - int64(before.HeapAlloc); grew > 12*int64(len(b64))+8<<20 {
		t.Errorf("the heap grew %d MiB for a part of %d MiB of base64", grew>>20, len(b64)>>20)
	}
}

// pngHead is a PNG's first bytes, as the sniffer tells one.
func pngHead() []byte {
	b, _ := base64.StdEncoding.DecodeString(png1x1)
	return b[:16]
}

// records are records from a slice, as they are: no deframer between.
type records struct {
	recs [][]byte
	i    int
}

func (r *records) Next() bool     { r.i++; return r.i <= len(r.recs) }
func (r *records) Record() []byte { return r.recs[r.i-1] }
func (r *records) Err() error     { return nil }
func (r *records) Close()         {}

// TestPartNoCopy: a part record already in its one shape is the line the
// stage writes, the record's own bytes and not a copy (an image may be
// megabytes); another spelling is written in the one shape.
func TestPartNoCopy(t *testing.T) {
	canonical := []byte(`{"inline_data":{"mime_type":"image/png","data":"` + png1x1 + `"}}`)
	camel := []byte(`{"inlineData":{"mimeType":"image/png","data":"` + png1x1 + `"}}`)
	rs := Agent{}.Map(testCall(config.DialectAuto, config.EmitText), &records{recs: [][]byte{canonical, camel}})
	defer rs.Close()
	var lines [][]byte
	for rs.Next() {
		lines = append(lines, rs.Record())
	}
	if rs.Err() != nil || len(lines) < 2 {
		t.Fatalf("%d lines, Err() = %v; want the two parts", len(lines), rs.Err())
	}
	if string(lines[0]) != string(canonical) || &lines[0][0] != &canonical[0] {
		t.Errorf("line 1 = %s, a copy: %v; want the record itself", lines[0], &lines[0][0] != &canonical[0])
	}
	if string(lines[1]) != string(canonical) {
		t.Errorf("line 2 = %s, want %s", lines[1], canonical)
	}
}

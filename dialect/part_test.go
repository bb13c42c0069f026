package dialect

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
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

package part

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// png1x1 is a real 1x1 PNG.
var png1x1 = mustB64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func mustB64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

var lim = config.DefaultParts

func TestParse(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(png1x1)
	for _, tc := range []struct {
		name, rec string
		want      Part
	}{
		{"inline", `{"inline_data":{"mime_type":"image/png","data":"` + b64 + `","display_name":"dot.png"}}`,
			Part{Kind: Inline, MIME: "image/png", Name: "dot.png", Base64: []byte(b64), Size: int64(len(png1x1))}},
		{"camelCase", `{"inlineData":{"mimeType":"image/png","data":"` + b64 + `"}}`,
			Part{Kind: Inline, MIME: "image/png", Base64: []byte(b64), Size: int64(len(png1x1))}},
		{"url-safe unpadded", `{"inline_data":{"mime_type":"application/octet-stream","data":"-_8"}}`,
			Part{Kind: Inline, MIME: "application/octet-stream", Base64: []byte("+/8="), Size: 2}},
		{"escaped slash and wrapped", `{"inline_data":{"mime_type":"application/octet-stream","data":"AAAA\/\/\/\/\nAAAA"}}`,
			Part{Kind: Inline, MIME: "application/octet-stream", Base64: []byte("AAAA////AAAA"), Size: 9}},
		{"file", `{"file_data":{"mime_type":"application/pdf","file_uri":"gs://bucket/a.pdf"}}`,
			Part{Kind: File, MIME: "application/pdf", URI: "gs://bucket/a.pdf"}},
		{"file camelCase no type", `{"fileData":{"fileUri":"https://example.com/a.pdf","displayName":"a"}}`,
			Part{Kind: File, Name: "a", URI: "https://example.com/a.pdf"}},
		{"data", `{"data": {"total": 12.5, "items": [1, 2]}}`,
			Part{Kind: Data, Value: json.RawMessage(`{"total":12.5,"items":[1,2]}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !Is([]byte(tc.rec)) {
				t.Errorf("Is = false")
			}
			p, err := Parse([]byte(tc.rec), lim)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if p.Kind != tc.want.Kind || p.MIME != tc.want.MIME || p.Name != tc.want.Name || string(p.Base64) != string(tc.want.Base64) || p.Size != tc.want.Size || p.URI != tc.want.URI || string(p.Value) != string(tc.want.Value) {
				t.Errorf("Parse = %+v, want %+v", *p, tc.want)
			}
			again, err := Parse(AppendRecord(nil, p), lim)
			if err != nil || again.Kind != p.Kind || string(again.Base64) != string(p.Base64) || again.URI != p.URI || string(again.Value) != string(p.Value) {
				t.Errorf("AppendRecord does not read back: %s: %v", AppendRecord(nil, p), err)
			}
		})
	}
}

// TestParseNoCopy: a part sent as standard base64 is not copied.
func TestParseNoCopy(t *testing.T) {
	rec := []byte(`{"inline_data":{"mime_type":"image/png","data":"` + base64.StdEncoding.EncodeToString(png1x1) + `"}}`)
	p, err := Parse(rec, lim)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(rec, p.Base64)
	if i < 0 || &rec[i] != &p.Base64[0] {
		t.Errorf("Base64 is a copy, not a slice of the record")
	}
}

func TestIs(t *testing.T) {
	for rec, want := range map[string]bool{
		`{"data":{"a":1}}`:               true,
		`{"data":{"a":1},"type":"x"}`:    false,
		`{"inline_data":{},"thought":1}`: true, // refused by Parse, saying why
		`{"text":"hi"}`:                  false,
		`{"dat":1}`:                      false,
		`{"data":`:                       false,
	} {
		if got := Is([]byte(rec)); got != want {
			t.Errorf("Is(%s) = %v, want %v", rec, got, want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	jpeg := base64.StdEncoding.EncodeToString(append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, make([]byte, 64)...))
	pdf := base64.StdEncoding.EncodeToString([]byte("%PDF-1.7\n%âãÏÓ\n"))
	for _, tc := range []struct{ rec, want string }{
		{`{"inline_data":{"mime_type":"image/png","data":"not base64!"}}`, "not base64"},
		{`{"inline_data":{"mime_type":"image/png","data":"AAAAA"}}`, "cannot end a group"},
		{`{"inline_data":{"mime_type":"image/png","data":"AA=A"}}`, "padding"},
		{`{"inline_data":{"mime_type":"image/png","data":""}}`, "empty"},
		{`{"inline_data":{"mime_type":"image/png","data":12}}`, "not a base64 string"},
		{`{"inline_data":{"mime_type":"image/png\r\nX-Evil: 1","data":"AAAA"}}`, "control character"},
		{`{"inline_data":{"mime_type":"png","data":"AAAA"}}`, "not a media type"},
		{`{"inline_data":{"data":"AAAA"}}`, "mime_type is missing"},
		{`{"inline_data":{"mime_type":"image/png","data":"` + jpeg + `"}}`, "the bytes are image/jpeg, not image/png"},
		{`{"inline_data":{"mime_type":"image/png","data":"` + pdf + `"}}`, "the bytes are application/pdf"},
		{`{"inline_data":{"mime_type":"image/png","data":"aGVsbG8gd29ybGQ="}}`, "the bytes are text"},
		{`{"inline_data":{"mime_type":"image/png","data":"AAAA","size":4}}`, `not "size"`},
		{`{"file_data":{"file_uri":"relative/a.pdf"}}`, "not an absolute URI"},
		{`{"file_data":{"file_uri":"https://a/b c"}}`, "control character or a space"},
		{`{"file_data":{"file_uri":"data:image/png;base64,AAAA"}}`, "send the bytes as inline_data"},
		{`{"data":{"a":1},"text":"x"}`, "one member"},
		{`{"data":{"a":}}`, "JSON"},
		{`[1]`, "JSON object"},
	} {
		_, err := Parse([]byte(tc.rec), lim)
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Msg, tc.want) {
			t.Errorf("Parse(%.60s) = %v, want an *Error saying %q", tc.rec, err, tc.want)
		}
	}
}

// TestParseTooLarge: a 200 MB base64 part is refused from its length,
// before anything of it is copied or decoded.
func TestParseTooLarge(t *testing.T) {
	data := bytes.Repeat([]byte("QUFB"), 50<<20) // 200 MiB of base64
	rec := append(append([]byte(`{"inline_data":{"mime_type":"application/octet-stream","data":"`), data...), `"}}`...)
	data = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse(rec, lim)
	runtime.ReadMemStats(&after)
	var pe *Error
	if !errors.As(err, &pe) || !pe.TooLarge {
		t.Fatalf("Parse = %v, want a TooLarge *Error", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("Parse allocated %d bytes refusing a 200 MiB part, want under 1 MiB", grew)
	}
	if err := Agent(err); !errors.Is(err, core.ErrPartTooLarge) || core.FailureOf(err).Reason != "PART_TOO_LARGE" {
		t.Errorf("Agent(err) = %v, want PART_TOO_LARGE", err)
	}
	if err := Agent(&Error{Msg: "x"}); core.FailureOf(err).Reason != "BAD_REPLY" {
		t.Errorf("Agent(malformed) = %v, want BAD_REPLY", err)
	}
	runtime.KeepAlive(rec)
}

func TestFromDataURL(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(png1x1)
	p, ok, err := FromDataURL("data:image/png;base64,"+b64, "", lim)
	if !ok || err != nil || p.MIME != "image/png" || string(p.Base64) != b64 {
		t.Errorf("FromDataURL = %+v, %v, %v", p, ok, err)
	}
	if _, ok, _ := FromDataURL("https://example.com/a.png", "", lim); ok {
		t.Errorf("an https URL is a data URL")
	}
	if _, _, err := FromDataURL("data:image/jpeg;base64,"+b64, "", lim); err == nil || !strings.Contains(err.Error(), "image/png, not image/jpeg") {
		t.Errorf("a data URL naming another type: %v", err)
	}
	if _, _, err := FromDataURL("data:text/plain,hello", "", lim); err == nil || !strings.Contains(err.Error(), "must be base64") {
		t.Errorf("a data URL not in base64: %v", err)
	}
}

func TestBudget(t *testing.T) {
	b := NewBudget(config.Parts{Bytes: 10, Total: 25})
	p := &Part{Kind: Inline, Size: 10}
	for i := 0; i < 2; i++ {
		if err := b.Take(p); err != nil {
			t.Fatalf("Take %d: %v", i, err)
		}
	}
	var pe *Error
	if err := b.Take(p); !errors.As(err, &pe) || !pe.TooLarge {
		t.Errorf("the third part = %v, want TooLarge", err)
	}
}

// TestIsRecord: a record already in AppendRecord's shape is known as such,
// so that a writer may pass it on without a copy; any other spelling of
// the same part is not.
func TestIsRecord(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(png1x1)
	for rec, want := range map[string]bool{
		`{"inline_data":{"mime_type":"image/png","data":"` + b64 + `"}}`:                         true,
		`{"inline_data":{"mime_type":"image/png","display_name":"a.png","data":"` + b64 + `"}}`:  true,
		`{"inline_data":{"data":"` + b64 + `","mime_type":"image/png"}}`:                         false, // members in another order
		`{"inlineData":{"mimeType":"image/png","data":"` + b64 + `"}}`:                           false, // camelCase
		`{"inline_data":{"display_name":"a.png","mime_type":"image/png","data":"` + b64 + `"}}`:  false,
		`{"inline_data":{"mime_type":"image/png","data":"` + strings.TrimRight(b64, "=") + `"}}`: false, // normalized: a copy
		`{"file_data":{"mime_type":"application/pdf","file_uri":"https://example.com/r.pdf"}}`:   false, // small: always written
		`{"data":{"a":1}}`: false,
	} {
		p, err := Parse([]byte(rec), lim)
		if err != nil {
			t.Fatalf("Parse(%.80s) = %v", rec, err)
		}
		if got := IsRecord([]byte(rec), p); got != want {
			t.Errorf("IsRecord(%.80s) = %v, want %v", rec, got, want)
		}
		if got := string(AppendRecord(nil, p)) == rec; got != want && p.Kind == Inline {
			t.Errorf("AppendRecord(%.80s) is the record: %v, IsRecord says %v", rec, got, want)
		}
	}
}

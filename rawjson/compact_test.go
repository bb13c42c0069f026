package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzCompact: AppendCompact agrees with json.Compact on every input:
// the same verdict, and for valid input the same bytes.
func FuzzCompact(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a": [1, 2.5e-3, -0, true, false, null, "x\"y\\u00e9\n"]}`, ` "s" `, `12345678901234567890123`,
		`{"a":}`, `[1,]`, `01`, `1.`, `-`, `"\x01"`, `"\u12"`, `{"a" 1}`, `[1 2]`, `tru`, `nul`, `{"a":1}}`, "\t[\r\n]\n",
		`{"a":{"b":{"c":[{}]}}}`, `"é"`, "\"\xff\"", `1e+5`, `1E5`, `-01`, `.5`, `{,}`, `[`, ``, ` `,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		var want bytes.Buffer
		werr := json.Compact(&want, src)
		got, ok := AppendCompact(nil, src)
		if ok != (werr == nil) {
			t.Fatalf("AppendCompact(%q) ok = %v, json.Compact error = %v", src, ok, werr)
		}
		if ok && !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("AppendCompact(%q) = %q, want %q", src, got, want.Bytes())
		}
	})
}

func BenchmarkCompact(b *testing.B) {
	src := []byte(`{"id": "qirFzQ7G", "author": "weather", "content": {"role": "model", "parts": [{"text": "The weather in Paris is sunny, with a light breeze."}]}, "timestamp": 1795980797318, "partial": true}`)
	b.Run("AppendCompact", func(b *testing.B) {
		var dst []byte
		for b.Loop() {
			dst, _ = AppendCompact(dst[:0], src)
		}
	})
	b.Run("json.Compact", func(b *testing.B) {
		var dst bytes.Buffer
		for b.Loop() {
			dst.Reset()
			json.Compact(&dst, src)
		}
	})
}

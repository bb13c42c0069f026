package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// marshal is s as encoding/json's Marshal writes it, without HTML
// escaping.
func marshal(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// stringCases are texts of every kind JSON escapes: every byte alone and
// between letters, invalid UTF-8 (a lone continuation, a cut sequence,
// a surrogate, an overlong form), U+2028 and U+2029, HTML's characters.
func stringCases() []string {
	texts := []string{"", "a", "Hello, world!", "\"\\/<>&", "\b\f\n\r\t\x00\x01\x1f\x7f", "é😀\u2028\u2029\ufeff\ufffd",
		"\xff\xfe", "a\xc3", "\xed\xa0\x80", "\xc0\xaf", "\xf0\x9f\x98", "é\xff😀\xe2\x80\xa8\xe2\x80", strings.Repeat("x", 5000)}
	for c := 0; c < 256; c++ {
		texts = append(texts, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b", "a"+string(rune(c))+"b")
	}
	return texts
}

// TestAppendStringAsMarshal: with EscapeInvalid a string, or a byte slice
// (AppendBytes), is
// written byte for byte as encoding/json's Marshal writes it; with
// ReplaceInvalid the same but each invalid byte is U+FFFD itself, not
// its escape (the texts here hold no backslash before "ufffd").
func TestAppendStringAsMarshal(t *testing.T) {
	for _, s := range stringCases() {
		want := marshal(s)
		if got := AppendString(nil, s, EscapeInvalid); string(got) != want {
			t.Errorf("AppendString(%q, EscapeInvalid) = %s, want %s", s, got, want)
		}
		if got := AppendBytes([]byte("x"), []byte(s), EscapeInvalid); string(got) != "x"+want {
			t.Errorf("AppendBytes(%q, EscapeInvalid) = %s, want x%s", s, got, want)
		}
		replaced := strings.ReplaceAll(want, `\ufffd`, "\uFFFD")
		got := AppendBytes(nil, []byte(s), ReplaceInvalid)
		if string(got) != replaced || string(AppendString(nil, s, ReplaceInvalid)) != replaced {
			t.Errorf("AppendString(%q, ReplaceInvalid) = %s, want %s", s, got, replaced)
		}
		if !utf8.Valid(got) || !json.Valid(got) {
			t.Errorf("AppendString(%q, ReplaceInvalid) = %q: not valid UTF-8 and JSON", s, got)
		}
	}
}

// TestAppendStringAllocs: appending into room enough allocates nothing,
// from a string or a byte slice (AppendBytes: no copy of it), whatever
// the text holds.
func TestAppendStringAllocs(t *testing.T) {
	text := "é😀 \xff \u2028 \"q\"\n" + strings.Repeat("x", 100)
	dst := make([]byte, 0, 1024)
	b := []byte(text)
	for _, inv := range []Invalid{EscapeInvalid, ReplaceInvalid} {
		if n := testing.AllocsPerRun(100, func() { dst = AppendString(dst[:0], text, inv) }); n != 0 {
			t.Errorf("AppendString(string, %d): %v allocations, want 0", inv, n)
		}
		if n := testing.AllocsPerRun(100, func() { dst = AppendBytes(dst[:0], b, inv) }); n != 0 {
			t.Errorf("AppendBytes(%d): %v allocations, want 0", inv, n)
		}
	}
}

// FuzzAppendString: any text is written as Marshal writes it
// (EscapeInvalid), and decodes to what Marshal's decodes to
// (ReplaceInvalid), from a string and from a byte slice alike.
func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := marshal(s)
		if got := AppendString(nil, s, EscapeInvalid); string(got) != want {
			t.Fatalf("AppendString(%q, EscapeInvalid) = %s, want %s", s, got, want)
		}
		got := AppendBytes(nil, []byte(s), ReplaceInvalid)
		var a, b string
		if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil || a != b || !utf8.Valid(got) {
			t.Fatalf("AppendString(%q, ReplaceInvalid) = %q decodes to %q, Marshal's %q", s, got, a, b)
		}
		if string(AppendString(nil, s, ReplaceInvalid)) != string(got) {
			t.Fatalf("AppendString(%q, ReplaceInvalid) and AppendBytes differ", s)
		}
		// The contents are the string between its quotes, appended.
		if got := AppendContents([]byte("x"), s, EscapeInvalid); string(got) != "x"+want[1:len(want)-1] {
			t.Fatalf("AppendContents(%q) = %s, want x and %s between its quotes", s, got, want)
		}
		if got := AppendBytesContents(nil, []byte(s), EscapeInvalid); string(got) != want[1:len(want)-1] {
			t.Fatalf("AppendBytesContents(%q) = %s, want %s between its quotes", s, got, want)
		}
	})
}

// BenchmarkAppendString writes a token-sized and a paragraph-sized text
// of prose with quotes and non-ASCII letters, from a string and from a
// byte slice.
func BenchmarkAppendString(b *testing.B) {
	for _, n := range []int{1, 40} {
		text := strings.Repeat("The weather in Zürich is \"sunny\", 21 °C.\n", n)
		dst := make([]byte, 0, 2*len(text)+2)
		b.Run("string/"+map[int]string{1: "token", 40: "paragraph"}[n], func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				dst = AppendString(dst[:0], text, EscapeInvalid)
			}
		})
		bt := []byte(text)
		b.Run("bytes/"+map[int]string{1: "token", 40: "paragraph"}[n], func(b *testing.B) {
			b.SetBytes(int64(len(bt)))
			for b.Loop() {
				dst = AppendBytes(dst[:0], bt, ReplaceInvalid)
			}
		})
	}
}

package frames

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestText: a Text holds what was appended, in order, byte for byte;
// its blocks never cut a character; what it holds costs at most one
// block more than its length (no growth left behind); a snapshot taken
// earlier stays as it was while it grows on.
func TestText(t *testing.T) {
	var want bytes.Buffer
	var text Text
	pieces := []string{"", "a", "é", strings.Repeat("€", 300), "\xff\xfe", "tail 🙂"}
	var early Text
	var earlyText string
	for i := range 20000 {
		p := pieces[i%len(pieces)]
		if i == 7000 {
			p = strings.Repeat("x", 3*maxBlock+7) // larger than a block
		}
		if i%2 == 0 {
			text.AppendString(p)
		} else {
			text.Append([]byte(p))
		}
		want.WriteString(p)
		if i == 100 {
			early, earlyText = text.Snapshot(), want.String()
		}
	}
	var got bytes.Buffer
	held := 0
	for i, b := range text.Blocks() {
		got.Write(b)
		held += cap(b)
		if i > 0 && len(b) > 0 && utf8.Valid(want.Bytes()) && !utf8.RuneStart(b[0]) {
			t.Errorf("block %d begins inside a character: % x", i, b[:min(4, len(b))])
		}
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) || text.Len() != int64(want.Len()) {
		t.Fatalf("Text holds %d bytes (Len %d), want the %d appended, in order", got.Len(), text.Len(), want.Len())
	}
	if !bytes.Equal(text.Bytes(), want.Bytes()) {
		t.Errorf("Bytes() differs from what was appended")
	}
	if held > want.Len()+maxBlock {
		t.Errorf("Text holds %d bytes of blocks for %d of text, want at most one block (%d) more", held, want.Len(), maxBlock)
	}
	var then bytes.Buffer
	for _, b := range early.Blocks() {
		then.Write(b)
	}
	if then.String() != earlyText || early.Len() != int64(len(earlyText)) {
		t.Errorf("a snapshot taken after 100 appends changed as the text grew on")
	}
}

// TestEndTo: the EndTo hook's frames are written whole, each its pieces
// in order between the framing, counted in Wrote, after the records.
func TestEndTo(t *testing.T) {
	rec := httptest.NewRecorder()
	var text Text
	text.AppendString(strings.Repeat("ab", maxBlock)) // two blocks
	w := New(rec, "text/event-stream", "data: ", "\n\n", Hooks{EndTo: func(err error, frame func(...[]byte) error) {
		if err != nil {
			return
		}
		frame(append(append([][]byte{[]byte(`{"text":"`)}, text.Blocks()...), []byte(`"}`))...)
		frame([]byte("[DONE]"))
	}})
	w.Begin()
	if err := w.Copy(&records{bursts: [][]string{{`"r"`}}}); err != nil {
		t.Fatal(err)
	}
	want := "data: \"r\"\n\ndata: {\"text\":\"" + strings.Repeat("ab", maxBlock) + "\"}\n\ndata: [DONE]\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("the stream is %d bytes %.80q…, want %d bytes %.80q…", len(got), got, len(want), want)
	}
	if _, n, _ := w.Wrote(); n != int64(len(want)) {
		t.Errorf("Wrote() = %d bytes, want %d", n, len(want))
	}
	var _ core.Encoder = w
}

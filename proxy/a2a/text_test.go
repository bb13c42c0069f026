package a2a

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/sidecar-dev/sidecar/proxy/core"
)

// TestWriteText: a task's text, kept in blocks and written in place of
// its mark, is what marshal writes of the whole artifact, byte for byte,
// in both versions: escapes (quotes, controls, U+2028, invalid UTF-8, no
// HTML escapes), text parts before and after a data part, an agent's text
// that looks like a mark, and texts longer than a block.
func TestWriteText(t *testing.T) {
	longJSON, _ := marshal(strings.Repeat("é\"<&>\u2028\x01x", 300_000)) // 3 MB, several blocks
	records := [][]string{
		{`{"text":"a\"b\\c\n\t\u0001\u2028\u2029<&>é"}`},
		{`"plain "`, `"\ud83d\ude42 "`, `{"i":1}`, `"after the data"`},
		{`{"text":"\u0000` + strings.TrimSuffix(strings.TrimPrefix(string(markJSON), `\u0000`), `\u0000`) + `\u0000"}`},
		{string(longJSON), `"tail"`},
		{"\"bad \xff\xfe utf-8\""},
	}
	for _, v := range []version{v03, v10} {
		for _, rs := range records {
			s := newStore(1<<30, 1<<30, 256)
			tk, _, _ := s.open(message{}, core.Owner{})
			var flat []part // the artifact as the store kept it before: one string per run of text
			run := ""
			for _, r := range rs {
				p := partOf([]byte(r))
				s.addPart(tk, p)
				if p.Data == nil && p.Metadata == nil {
					run += p.Text
					continue
				}
				if run != "" {
					flat = append(flat, part{Text: run})
				}
				flat, run = append(flat, p), ""
			}
			if run != "" {
				flat = append(flat, part{Text: run})
			}
			c := s.copyOf(tk)
			var got bytes.Buffer
			if _, err := writeText(&got, response([]byte("1"), v.wrap("task", v.task(&c)), nil), c.texts()); err != nil {
				t.Fatal(err)
			}
			o := c
			o.parts, o.text = flat, task{}.text
			want := response([]byte("1"), v.wrap("task", v.task(&o)), nil)
			if !bytes.Equal(got.Bytes(), want) {
				i := 0
				for i < got.Len() && i < len(want) && got.Bytes()[i] == want[i] {
					i++
				}
				t.Errorf("version %d, records %.60q: the task written around its text differs from marshal's at byte %d: %.80q, want %.80q",
					v, rs, i, got.Bytes()[i:], want[i:])
			}
		}
	}
}

// TestSnapshotWhileGrowing: tasks/get's copy of a task whose call still
// appends reads a text that stays as it was (go test -race).
func TestSnapshotWhileGrowing(t *testing.T) {
	s := newStore(1<<30, 1<<30, 256)
	tk, _, _ := s.open(message{}, core.Owner{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 20000 {
			s.addPart(tk, part{Text: "0123456789"})
		}
	})
	for range 200 {
		c, _ := s.snapshot(core.Owner{}, tk.id)
		if c.text.Len() == 0 {
			continue // not begun: no text, no mark
		}
		var b bytes.Buffer
		writeText(&b, []byte(`"`+string(markJSON)+`"`), c.texts())
		if n := int64(b.Len() - 2); n != c.text.Len() || strings.Trim(strings.ReplaceAll(b.String(), "0123456789", ""), `"`) != "" {
			t.Fatalf("a snapshot of %d bytes wrote %d: %.40q", c.text.Len(), n, b.String())
		}
	}
	wg.Wait()
}

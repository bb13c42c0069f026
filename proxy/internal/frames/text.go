package frames

import "unicode/utf8"

// Text is the text of an answer a door keeps to repeat it once the
// records end (the OpenAI door's closing Responses events, A2A's task).
// It grows in blocks and never copies what it holds: keeping n bytes
// costs n bytes and at most one block more, where one growing slice
// would copy itself at each growth and leave the old copies to the
// collector (a 30 MB answer: about 60 MB more at its peak). A writer
// writes it block by block (Blocks), or a frame of it whole with
// Writer's frame of pieces (Hooks.EndTo); a Snapshot reads it while it
// grows. No block ends inside a UTF-8 sequence, so each can be escaped
// alone.
type Text struct {
	blocks [][]byte
	n      int64
}

// The blocks' sizes: the first small, as most answers are; each new one
// as large as the text so far, up to maxBlock.
const (
	minBlock = 512
	maxBlock = 1 << 20
)

// Len is the text's length in bytes.
func (t *Text) Len() int64 { return t.n }

// Append adds p to the text.
func (t *Text) Append(p []byte) { appendText(t, p) }

// AppendString adds s to the text.
func (t *Text) AppendString(s string) { appendText(t, s) }

func appendText[S string | []byte](t *Text, p S) {
	t.n += int64(len(p))
	for len(p) > 0 {
		last := len(t.blocks) - 1
		if last < 0 || len(t.blocks[last]) == cap(t.blocks[last]) {
			t.blocks = append(t.blocks, make([]byte, 0, min(max(t.n-int64(len(p)), minBlock), maxBlock)))
			last++
		}
		b := t.blocks[last]
		n := min(len(p), cap(b)-len(b))
		if n < len(p) {
			n = runeCut(p, n)
		}
		b = append(b, p[:n]...)
		if n < len(p) {
			b = b[:len(b):len(b)] // full: the rest goes in the next block
		}
		t.blocks[last], p = b, p[n:]
	}
}

// runeCut is where to cut p at most n bytes in: n backed off to the start
// of the rune it falls in (three bytes at most), or n where p is no UTF-8.
func runeCut[S string | []byte](p S, n int) int {
	for k := n; k >= 0 && k > n-utf8.UTFMax; k-- {
		if utf8.RuneStart(p[k]) {
			return k
		}
	}
	return n
}

// Blocks is the text in its blocks, in order, until the next Append.
func (t *Text) Blocks() [][]byte { return t.blocks }

// Snapshot is the text as it is now, which stays so while t grows on: it
// shares t's blocks, whose bytes t never rewrites, not their list.
func (t *Text) Snapshot() Text {
	blocks := make([][]byte, len(t.blocks))
	for i, b := range t.blocks {
		blocks[i] = b[:len(b):len(b)]
	}
	return Text{blocks: blocks, n: t.n}
}

// Bytes is the text in one slice: a copy, but for a text in one block.
func (t *Text) Bytes() []byte {
	if len(t.blocks) == 1 {
		return t.blocks[0]
	}
	b := make([]byte, 0, t.n)
	for _, k := range t.blocks {
		b = append(b, k...)
	}
	return b
}

package dialect
import ("testing";"strings";"github.com/sidecar-dev/sidecar/rawjson")
func BenchmarkTmpScan(b *testing.B) {
	rec := []byte(strings.Replace(benchStreams[0].token, "%s", " weather", 1))
	b.Run("compact", func(b *testing.B) { var dst []byte; for b.Loop() { dst, _ = rawjson.AppendCompact(dst[:0], rec) } })
	b.Run("chatfast", func(b *testing.B) { m := &chatMapper{}; var out []Event; for b.Loop() { out, _ = m.fast(out[:0], rec) } })
	b.Run("skip", func(b *testing.B) { for b.Loop() { s := scan{b: rec}; s.skip(0) } })
	e := &textEmitter{max: 8<<20}
	b.Run("emit", func(b *testing.B) { var lines [][]byte; for b.Loop() { lines, _ = e.line(lines[:0], Event{Kind: Text, Text: " weather"}) } })
}
